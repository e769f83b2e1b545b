package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

// TestSandboxWrites fires hooks whose steps write a declared directory
// outside the workdir and a canary directory beside it: with writes:
// [../out] the first write lands and the canary stays empty; without the
// declaration both are refused, and the step's note names the rule.
func TestSandboxWrites(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"declared.yaml":   writesHook("writes: [../out]"),
		"undeclared.yaml": writesHook(""),
	})
	for _, d := range []string{"work", "out", "canary"} {
		if err := os.Mkdir(e.path(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := e.getRun(runID(t, e.must(0, "fire", "declared", "--wait")))
	if run.Status != engine.StatusCompleted {
		t.Fatalf("declared: run %s %s: %s", run.ID, run.Status, run.Error)
	}
	if b, err := os.ReadFile(e.path("out/declared")); err != nil || string(b) != "ok\n" {
		t.Errorf("the declared write did not land: %q, %v; step: %+v", b, err, run.Steps[0])
	}
	if !e.exists("work/inside") {
		t.Errorf("the write to the workdir did not land; step: %+v", run.Steps[2])
	}
	outside := run.Steps[1]
	if *outside.ExitCode == 0 || !strings.Contains(fmt.Sprint(outside.Fields["stderr"]), "Permission denied") {
		t.Errorf("the write outside the declared paths was not refused: %+v", outside)
	}
	if !strings.Contains(fmt.Sprint(outside.Fields["stderr"]), "writes:") {
		t.Errorf("the refused write has no note naming writes: %+v", outside.Fields["stderr"])
	}
	if text := e.must(0, "run", run.ID).stdout; strings.Count(text, "  containment: landlock ABI") != 3 {
		t.Errorf("hookd run does not say which containment each step had:\n%s", text)
	}

	run = e.getRun(runID(t, e.must(0, "fire", "undeclared", "--wait")))
	if e.exists("out/undeclared") || *run.Steps[0].ExitCode == 0 {
		t.Errorf("without writes: the hook wrote out/: %+v", run.Steps[0])
	}
	if files, _ := os.ReadDir(e.path("canary")); len(files) > 0 {
		t.Errorf("a step wrote the canary directory: %v", files)
	}
}

func writesHook(writes string) string {
	return `workdir: work
` + writes + `
steps:
  - name: declared
    type: shell
    command: 'echo ok > ../out/$HOOK_NAME'
    env: {HOOK_NAME: '{{hook.name}}'}
    allow_failure: true
  - name: outside
    type: shell
    command: echo bad > ../canary/bad
    allow_failure: true
  - name: inside
    type: shell
    command: echo ok > inside
`
}

// canary is a loopback TCP listener that records the first line of each
// connection, in order.
type canary struct {
	ln    net.Listener
	mu    sync.Mutex
	lines []string
	done  chan struct{}
}

func newCanary(t *testing.T) *canary {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &canary{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(conn).ReadString('\n')
			conn.Close()
			c.mu.Lock()
			c.lines = append(c.lines, strings.TrimSpace(line))
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-c.done })
	return c
}

func (c *canary) port() int { return c.ln.Addr().(*net.TCPAddr).Port }

// seen returns the lines received so far: every connection made before
// it was called included (it connects last itself and waits for that
// connection, which the listener accepts after the earlier ones).
func (c *canary) seen(t *testing.T) []string {
	conn, err := net.Dial("tcp4", c.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(conn, "END")
	conn.Close()
	waitFor(t, "the canary's own connection", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.lines) > 0 && c.lines[len(c.lines)-1] == "END"
	}, func() string { return fmt.Sprint(c.lines) })
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines[:len(c.lines)-1]...)
}

// TestSandboxStepNetwork emits an event to hooks that take it (so their
// processes get no network by default) and whose steps connect to a
// loopback canary: only the steps that declare network: true, or the
// canary's port, reach it.
func TestSandboxStepNetwork(t *testing.T) {
	bash := testtool.Need(t, "bash")
	c := newCanary(t)
	connect := func(name, network string) string {
		s := fmt.Sprintf("  - name: %s\n    type: shell\n    allow_failure: true\n    command: [%s, -c, 'echo %s > /dev/tcp/127.0.0.1/%d']\n", name, bash, name, c.port())
		if network != "" {
			s += "    network: " + network + "\n"
		}
		return s
	}
	e := newEnv(t, "", map[string]string{
		"steps.yaml": "trigger: {event: canary.steps}\nsteps:\n" +
			connect("undeclared", "") + connect("closed", "false") + connect("otherport", "[1]") +
			connect("open", "true") + connect("port", fmt.Sprintf("[%d]", c.port())),
		"hook.yaml": "trigger: {event: canary.hook}\nnetwork: true\nsteps:\n" +
			connect("hookopen", "") + connect("stepclosed", "false"),
	})
	for _, typ := range []string{"canary.steps", "canary.hook"} {
		for name, id := range emitted(t, e.must(0, "emit", typ, "--wait")) {
			run := e.getRun(id)
			if run.Status != engine.StatusCompleted {
				t.Errorf("%s: run %s %s: %s", name, id, run.Status, run.Error)
			}
			for _, s := range run.Steps {
				t.Logf("%s %s: exit %d, %v", name, s.Name, *s.ExitCode, s.Fields["stderr"])
			}
		}
	}
	got := strings.Join(c.seen(t), " ")
	if want := "open port hookopen"; got != want {
		t.Errorf("the canary was reached by %q, want %q", got, want)
	}
}

// TestSandboxStatus: hookd serve logs which containment its hooks'
// processes get, and `hookd status` (and its JSON) shows it.
func TestSandboxStatus(t *testing.T) {
	e := newEnv(t, "", nil)
	d := e.serve()
	if !strings.Contains(d.log.String(), "sandbox: landlock: ABI") || !strings.Contains(d.log.String(), "sandbox: files: Landlock") {
		t.Errorf("the start-up log does not say which containment applies:\n%s", d.log)
	}
	text := e.must(0, "status").stdout
	if !strings.Contains(text, "sandbox: contained\n  landlock: ABI") || !strings.Contains(text, "  network: ") {
		t.Errorf("hookd status does not show the sandbox:\n%s", text)
	}
	var rep api.StatusReport
	if err := json.Unmarshal([]byte(e.must(0, "status", "--json").stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if s := rep.Sandbox; s == nil || !s.Contained || s.Off || s.Landlock == 0 || !s.FilesOK || !s.NetworkOK || len(s.Lines) == 0 {
		t.Errorf("status JSON sandbox: %+v", s)
	}
}

// TestSandboxOff: with sandbox: off in hookd.yaml, processes run with
// hookd's own rights (the write the sandbox refuses lands), hookd says so
// at warn and in its status; taking sandbox: off out of hookd.yaml while
// it runs changes nothing until the next start.
func TestSandboxOff(t *testing.T) {
	e := newEnv(t, "sandbox: off\n", map[string]string{"undeclared.yaml": writesHook("limits: {pids: 50}")})
	for _, dir := range []string{"work", "out", "canary"} {
		if err := os.Mkdir(e.path(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d := e.serve()
	if !strings.Contains(d.log.String(), "level=WARN msg=\"sandbox: off in hookd.yaml") {
		t.Errorf("sandbox: off is not logged at warn:\n%s", d.log)
	}
	const unenforced = "limits: pids 50 not enforced here: sandbox: off in hookd.yaml"
	if text := e.must(0, "status").stdout; !strings.Contains(text, "sandbox: OFF") || !strings.Contains(text, "hook undeclared: "+unenforced) {
		t.Errorf("hookd status does not say the sandbox is off and the limits unenforced:\n%s", text)
	}
	r := e.must(0, "validate")
	if !strings.Contains(r.stderr, "warning: hooks.d/undeclared.yaml:2: limits: pids 50 will not be enforced on this machine: sandbox: off in hookd.yaml") {
		t.Errorf("validate does not warn of unenforced limits:\n%s", r)
	}
	run := e.getRun(runID(t, e.must(0, "fire", "undeclared", "--wait")))
	if !e.exists("out/undeclared") || !e.exists("canary/bad") {
		t.Errorf("with sandbox: off the writes did not land: %+v", run.Steps)
	}
	if text := e.must(0, "run", run.ID).stdout; !strings.Contains(text, "  containment: none (hookd.yaml sandbox: off)") {
		t.Errorf("hookd run does not say the steps ran unconfined:\n%s", text)
	}
	if !slices.Contains(run.Notes, unenforced) {
		t.Errorf("the run's notes do not say its limits were not enforced: %q", run.Notes)
	}

	e.write("hookd.yaml.new", "")
	if err := os.Rename(e.path("hookd.yaml.new"), e.path("hookd.yaml")); err != nil {
		t.Fatal(err)
	}
	d.waitLog("settings=[sandbox]")
	if text := e.must(0, "status").stdout; !strings.Contains(text, "sandbox: OFF") {
		t.Errorf("a reload changed the sandbox:\n%s", text)
	}
}

// TestValidateNetworkWarning: hookd validate warns about a step that runs
// a program that usually needs the network in a hook that takes
// untrusted input, without network: — and the hook still loads.
func TestValidateNetworkWarning(t *testing.T) {
	e := newProcEnv(t, "", map[string]string{
		"sync.yaml": "trigger: {event: repo.pushed}\nsteps:\n  - type: shell\n    command: git fetch origin && git log -1\n",
		"ok.yaml":   "trigger: {event: repo.pushed}\nsteps:\n  - type: shell\n    command: git fetch origin\n    network: true\n",
	})
	r := e.must(0, "validate")
	if !strings.HasPrefix(r.stdout, "2 hook(s) valid") ||
		!strings.Contains(r.stderr, "warning: hooks.d/sync.yaml:4: steps[0].command: git fetch usually needs the network") ||
		strings.Contains(r.stderr, "ok.yaml") {
		t.Errorf("validate:\n%s", r)
	}
	var out validateJSON
	if err := json.Unmarshal([]byte(e.must(0, "validate", "--json").stdout), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Warnings) != 1 || out.Warnings[0].Line != 4 || out.Warnings[0].Field != "steps[0].command" || !out.Valid {
		t.Errorf("validate --json warnings: %+v", out.Warnings)
	}
}

// TestShippedExamplesRunContained runs the steps of every hook shipped in
// hooks.d/ and of the README's first hook for real (hookd render: the
// steps run, no model is called) under the default sandbox: each step that
// starts a process ran contained, and none was refused by it.
func TestShippedExamplesRunContained(t *testing.T) {
	testtool.Need(t, "go")
	files, err := filepath.Glob("../../hooks.d/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped hooks: %v", err)
	}
	hooks := map[string]string{"tests.yaml": docBlock(t, "README.md", "## A first hook")}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		hooks[filepath.Base(f)] = string(b)
	}
	e := newEnv(t, "", hooks)
	// What the README's first hook tests: a module of its own, no network.
	e.write("go.mod", "module example.com/m\n\ngo 1.21\n")
	e.write("m_test.go", "package m\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n")
	event := `{"service": "api", "env": "prod", "error": "boom", "hook": "nightly", "run_id": "r1"}`
	ran := 0
	for name, body := range hooks {
		if strings.HasPrefix(body, "on:") || strings.Contains(body, "\non:") {
			continue // a lifecycle handler, not a hook
		}
		hook := strings.TrimSuffix(name, ".yaml")
		r := e.run("render", hook, "--json", "--event", event)
		var run engine.Run
		if err := json.Unmarshal([]byte(r.stdout), &run); err != nil {
			t.Fatalf("render %s: %v\n%s", hook, err, r)
		}
		for _, s := range run.Steps {
			cn, ok := s.Fields["containment"].(string)
			if !ok {
				continue // a step that starts no process
			}
			ran++
			stderr := fmt.Sprint(s.Fields["stderr"])
			if !strings.Contains(cn, "landlock ABI") || s.Error != "" || strings.Contains(stderr, "hookd: the sandbox") ||
				*s.ExitCode != 0 && s.Name != "usage" { // disk-space's usage exits 1 on a full disk
				t.Errorf("%s %s: containment %q, exit %d, error %q, stderr %s\noutput %s", hook, s.Name, cn, *s.ExitCode, s.Error, stderr, s.Output)
			}
		}
	}
	if ran < 5 {
		t.Errorf("only %d steps started a process; the examples changed?", ran)
	}
}

// TestValidateUnconfinedMCPServer: a hook that lists the tools of an MCP
// stdio server declaring no sandbox network (which does not start) is
// warned about by hookd validate, with the fix; one whose server declares
// it is not.
func TestValidateUnconfinedMCPServer(t *testing.T) {
	e := newProcEnv(t, "llm: {model: test-model, base_url: \"http://127.0.0.1:1/v1\"}\nmcp_servers:\n  bare:\n    command: [mcp-bare]\n  boxed:\n    command: [mcp-boxed]\n    sandbox: {network: false}\n",
		map[string]string{
			"a.yaml": "prompt: go\ntools: [bare.search]\n",
			"b.yaml": "prompt: go\ntools: [boxed.search]\n",
		})
	r := e.must(0, "validate")
	if !strings.Contains(r.stderr, "warning: hooks.d/a.yaml:2: tools[0]: bare.search: mcp_servers.bare declares no sandbox network") ||
		!strings.Contains(r.stderr, "add sandbox: {network: false}") || strings.Contains(r.stderr, "b.yaml") {
		t.Errorf("validate:\n%s", r)
	}
}
