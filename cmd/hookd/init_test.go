package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/llm/llmtest"
)

// emptyEnv is a test directory with no hookd.yaml and no hooks.d: where
// hookd init makes a project.
func emptyEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, "", nil)
	if err := os.Remove(e.path("hookd.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(e.path("hooks.d")); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestInitProjectRuns makes a project with hookd init for a llama.cpp
// server (the scripted one) and uses it as its output says: it validates,
// the daemon serves it under the default sandbox, a fire with no TODO in
// the project stops before the model, and one with a TODO gets the
// model's answer.
func TestInitProjectRuns(t *testing.T) {
	model := llmtest.New(llmtest.Answer("Do the TODO in notes.md first."))
	defer model.Close()
	e := emptyEnv(t)
	r := e.must(0, "init", "--llama-cpp", model.URL)
	for _, want := range []string{
		"hookd.yaml", "the model: local at " + model.URL + "/v1 (a llama.cpp server)",
		"hooks.d/todos.yaml",
		"hookd validate", "hookd serve", "hookd fire todos --wait", "hookd render todos",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("hookd init's output lacks %q:\n%s", want, r)
		}
	}
	if r := e.must(0, "validate"); !strings.HasPrefix(r.stdout, "1 hook(s) valid") || r.stderr != "" {
		t.Errorf("validate the project init made:\n%s", r)
	}
	e.serve()

	// Nothing for the check to find: no model call.
	r = e.must(0, "fire", "todos", "--wait")
	if !strings.Contains(r.stderr, "todos completed, model not needed") {
		t.Errorf("a fire with no TODO in the project:\n%s", r)
	}
	if n := model.Served(); n != 0 {
		t.Errorf("the model was asked %d time(s) with nothing to ask about", n)
	}

	e.write("notes.md", "# Notes\nTODO: find out what hookd can do\n")
	r = e.must(0, "fire", "todos", "--wait")
	if !strings.Contains(r.stderr, "todos completed in") || !strings.Contains(r.stdout, "Do the TODO in notes.md first.") {
		t.Errorf("a fire with a TODO in the project:\n%s", r)
	}
	run := e.getRun(runID(t, r))
	if run.Status != engine.StatusCompleted || run.Response != "Do the TODO in notes.md first." {
		t.Errorf("run: %s %q, response %q", run.Status, run.Error, run.Response)
	}
	if len(run.Steps) != 1 || run.Steps[0].Fields["containment"] == "" {
		t.Errorf("the check's step records no containment: %+v", run.Steps)
	}
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the model got %d requests, want 1", len(reqs))
	}
	if got := reqs[0].Chat.Model; got != "local" {
		t.Errorf("model %q, want local", got)
	}
	prompt := reqs[0].Chat.Messages[len(reqs[0].Chat.Messages)-1].Content
	if !strings.Contains(prompt, `"./notes.md:2:TODO: find out what hookd can do"`) {
		t.Errorf("the prompt lacks the note:\n%s", prompt)
	}
}

// TestInitServers checks the settings init writes for each server: the
// model and base URL, an API key only by the variable that holds it, and
// a project that validates (OpenAI's missing key a warning only).
func TestInitServers(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		settings  []string // lines of hookd.yaml
		next      string   // in the next steps
		warnOnKey bool
	}{
		{[]string{"--ollama"}, []string{"  model: llama3.1\n", `  base_url: "http://127.0.0.1:11434/v1"` + "\n"}, "ollama pull llama3.1", false},
		{[]string{"--ollama", "--model", "qwen2.5:7b"}, []string{`  model: "qwen2.5:7b"` + "\n"}, "ollama pull qwen2.5:7b", false},
		{[]string{"--openai"}, []string{"  model: gpt-4o-mini\n", `  base_url: "https://api.openai.com/v1"` + "\n", "  api_key_env: OPENAI_API_KEY "}, "export OPENAI_API_KEY=", true},
		{[]string{"--llama-cpp", "http://10.0.0.5:9000/v1"}, []string{"  model: local\n", `  base_url: "http://10.0.0.5:9000/v1"` + "\n"}, "--port 9000", false},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			e := emptyEnv(t)
			r := e.must(0, append([]string{"init"}, tc.args...)...)
			if !strings.Contains(r.stdout, tc.next) {
				t.Errorf("the next steps lack %q:\n%s", tc.next, r)
			}
			b, err := os.ReadFile(e.path("hookd.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.settings {
				if !strings.Contains(string(b), want) {
					t.Errorf("hookd.yaml lacks %q:\n%s", want, b)
				}
			}
			if !tc.warnOnKey && strings.Contains(string(b), "api_key_env") {
				t.Errorf("hookd.yaml of a server that takes no key names one:\n%s", b)
			}
			r = e.must(0, "validate")
			if !strings.HasPrefix(r.stdout, "1 hook(s) valid") {
				t.Errorf("validate:\n%s", r)
			}
			if got := strings.Contains(r.stderr, "OPENAI_API_KEY"); got != tc.warnOnKey {
				t.Errorf("validate warns about OPENAI_API_KEY: %v, want %v:\n%s", got, tc.warnOnKey, r)
			}
		})
	}
}

// TestInitRefuses checks what init will not do: choose a server for the
// user, take two, or overwrite a file — and that a refusal writes
// nothing.
func TestInitRefuses(t *testing.T) {
	e := emptyEnv(t)
	r := e.must(exitUsage, "init")
	for _, want := range []string{"choose which model server", "--llama-cpp URL", "--ollama", "--openai"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("init with no server lacks %q:\n%s", want, r)
		}
	}
	if r := e.must(exitUsage, "init", "--ollama", "--openai"); !strings.Contains(r.stderr, "choose one model server, not 2") {
		t.Errorf("init with two servers:\n%s", r)
	}
	if r := e.must(exitUsage, "init", "--llama-cpp", "127.0.0.1:8080"); !strings.Contains(r.stderr, `--llama-cpp "127.0.0.1:8080": want the server's http(s) address`) {
		t.Errorf("init with an address that is no URL:\n%s", r)
	}
	if e.exists("hookd.yaml") || e.exists("hooks.d") {
		t.Fatal("a refused init wrote files")
	}

	e.write("hookd.yaml", "# mine\n")
	r = e.must(exitError, "init", "--ollama")
	if !strings.Contains(r.stderr, "hookd init: hookd.yaml exists; init makes a new project and overwrites nothing") {
		t.Errorf("init over a hookd.yaml:\n%s", r)
	}
	if b, _ := os.ReadFile(e.path("hookd.yaml")); string(b) != "# mine\n" || e.exists("hooks.d") {
		t.Errorf("init over a hookd.yaml changed it (%q) or made hooks.d", b)
	}

	// In a DIR: the hook file is there; neither file is written.
	if err := os.MkdirAll(e.path("sub/hooks.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.write("sub/hooks.d/todos.yaml", "prompt: mine\n")
	r = e.must(exitError, "init", "--ollama", "sub")
	if !strings.Contains(r.stderr, "hookd init: sub/hooks.d/todos.yaml exists") {
		t.Errorf("init over a hook file:\n%s", r)
	}
	if e.exists("sub/hookd.yaml") {
		t.Error("a refused init wrote sub/hookd.yaml")
	}

	// A new DIR is made, with the project in it.
	r = e.must(0, "init", "--ollama", "new/project")
	if !e.exists("new/project/hookd.yaml") || !e.exists("new/project/hooks.d/todos.yaml") || !strings.Contains(r.stdout, "cd new/project") {
		t.Errorf("init in a new directory:\n%s", r)
	}
}

// readmeShBlocks returns the ```sh blocks of the README section under
// heading (up to the next "## "), in order.
func readmeShBlocks(t *testing.T, heading string) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatalf("read README: %v", err)
	}
	_, sec, ok := strings.Cut(string(b), "\n"+heading)
	if !ok {
		t.Fatalf("README has no %q", heading)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	var blocks []string
	for {
		_, rest, ok := strings.Cut(sec, "```sh\n")
		if !ok {
			return blocks
		}
		blk, after, ok := strings.Cut(rest, "```")
		if !ok {
			t.Fatalf("README's %q has an unclosed sh block", heading)
		}
		blocks, sec = append(blocks, blk), after
	}
}

// quickStartModel is the address the README's quick start gives hookd
// init; the test puts the scripted server's in its place.
const quickStartModel = "http://127.0.0.1:8080"

// TestReadmeQuickStart follows the README's "Run it" as written: every
// command of its sh blocks, in order, as processes of a shell with the
// hookd binary on PATH (TestMain's build of ./cmd/hookd stands for the
// quick start's `go build ./cmd/hookd`), HOME a directory of the test's,
// and the scripted OpenAI-protocol server where the quick start names
// the llama.cpp server. The fire gets the model's answer; rendering and
// the fire with no TODO left call no model.
func TestReadmeQuickStart(t *testing.T) {
	t.Parallel()
	const answer = "First: find out what hookd can do (notes.md:1)."
	model := llmtest.New(llmtest.Answer(answer))
	defer model.Close()
	// Not t.TempDir: the socket path must stay under 107 bytes.
	home, err := os.MkdirTemp("", "hk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	environ := append(childEnv(), "HOME="+home, "PATH="+filepath.Dir(hookdBin)+string(os.PathListSeparator)+os.Getenv("PATH"))

	checkout, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cwd := checkout
	expand := func(p string) string {
		if p == "~" || strings.HasPrefix(p, "~/") {
			p = home + p[1:]
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		return p
	}
	ran := map[string]result{} // by the command as the README writes it
	var order []string
	replaced := false
	comment := regexp.MustCompile(`\s+#.*$`)
	for _, blk := range readmeShBlocks(t, "## Run it") {
		for _, line := range strings.Split(blk, "\n") {
			line = strings.TrimSpace(comment.ReplaceAllString(line, ""))
			if line == "" {
				continue
			}
			for _, part := range strings.Split(line, " && ") {
				written := part
				if strings.Contains(part, quickStartModel) {
					part, replaced = strings.ReplaceAll(part, quickStartModel, model.URL), true
				}
				switch {
				case part == "go build ./cmd/hookd":
					if cwd != checkout {
						t.Fatalf("the README builds hookd in %s, not the checkout", cwd)
					}
					continue // TestMain built it
				case part == "export PATH=$PWD:$PATH":
					continue // the test's PATH begins with the build's directory
				case strings.HasPrefix(part, "cd "):
					cwd = expand(strings.TrimSpace(strings.TrimPrefix(part, "cd ")))
					continue
				case strings.HasSuffix(part, " &"):
					startQuickStartDaemon(t, cwd, environ, strings.TrimSuffix(part, " &"))
					continue
				}
				if cwd == checkout && !strings.HasPrefix(part, "mkdir ~/") {
					t.Fatalf("the README's quick start runs %q in the checkout; this test runs only go build and mkdir ~/... there", written)
				}
				cmd := exec.Command("sh", "-c", part)
				cmd.Dir, cmd.Env = cwd, environ
				var stdout, stderr strings.Builder
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				r := result{args: []string{part}, stdout: stdout.String(), stderr: stderr.String()}
				if err != nil {
					t.Fatalf("the README's %q: %v\n%s", written, err, r)
				}
				for _, dup := ran[written]; dup; _, dup = ran[written] {
					written += " (again)" // the same command later: its own result
				}
				ran[written] = r
				order = append(order, written)
			}
		}
	}
	if !replaced {
		t.Fatalf("the README's quick start no longer gives hookd init %s; this test puts the scripted model there", quickStartModel)
	}
	get := func(cmd string) result {
		t.Helper()
		r, ok := ran[cmd]
		if !ok {
			t.Fatalf("the README's quick start does not run %q (it runs %q)", cmd, order)
		}
		return r
	}
	if r := get("hookd fire todos --wait --wait-lock 30s"); !strings.Contains(r.stdout, answer) || !strings.Contains(r.stderr, "todos completed in") {
		t.Errorf("the quick start's fire did not get the model's answer:\n%s", r)
	}
	if r := get("hookd run last"); !strings.Contains(r.stdout, answer) {
		t.Errorf("hookd run last does not show the answer:\n%s", r)
	}
	if r := get("hookd render todos"); !strings.Contains(r.stderr, "no short-circuit applies") || !strings.Contains(r.stdout, "./notes.md:1:TODO: find out what hookd can do") {
		t.Errorf("hookd render todos:\n%s", r)
	}
	// docs/hooks.md's figure of the preamble's cost, in the prompt render
	// prints (the preamble ends with the line "## Instructions").
	pre, _, ok := strings.Cut(get("hookd render todos").stdout, "## Instructions\n")
	t.Logf("the preamble of the quick start's todos hook: %d characters", len(pre))
	if !ok || len(pre) < 950 || len(pre) > 1050 {
		t.Errorf("the preamble is %d characters; docs/hooks.md's Prompts says about 1,000 (about 250 tokens): measure it again and say so there", len(pre))
	}
	if r := get("hookd fire todos --wait --wait-lock 30s (again)"); !strings.Contains(r.stderr, "todos completed, model not needed") {
		t.Errorf("the fire with no TODO left:\n%s", r)
	}
	if n := model.Served(); n != 1 {
		t.Errorf("the model was asked %d times; want once, by the quick start's fire", n)
	}
}

// startQuickStartDaemon starts the README's `hookd serve &` in dir and
// stops it (SIGTERM, as kill %1 does) when the test ends.
func startQuickStartDaemon(t *testing.T, dir string, environ []string, line string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "exec "+line)
	cmd.Dir, cmd.Env = dir, environ
	log := &logBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %q: %v", line, err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("the quick start's %q: %v\n%s", line, err, log)
		}
	})
}
