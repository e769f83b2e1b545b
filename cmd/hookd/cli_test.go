package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// emitted parses the output of `hookd emit`: the run ids by hook.
func emitted(t *testing.T, r result) map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "event ") {
		t.Fatalf("no event line on stdout:\n%s", r)
	}
	runs := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 2 {
			t.Fatalf("bad run line %q:\n%s", l, r)
		}
		runs[f[1]] = f[0]
	}
	return runs
}

// The event payload is data: each field reaches the shell as one word
// (unquoted, in double quotes, through env, or as an argv element).
var emitHooks = map[string]string{
	"prod.yaml": `trigger:
  event: deploy.*
  where: {env: prod}
steps:
  - name: show
    type: shell
    command: printf '[%s] [%s] [%s]\n' {{event.service}} {{event.note}} "{{event.quoted}}"
  - name: viaenv
    type: shell
    env: {NOTE: "{{event.note}}"}
    command: printf '%s\n' "$NOTE"
  - name: argv
    type: shell
    command: [printf, "%s\n", "{{event.service}}"]
skip_llm: true
`,
	"staging.yaml": `trigger:
  event: deploy.*
  where: {env: staging}
steps:
  - type: shell
    command: echo staging {{event.service}}
skip_llm: true
`,
}

const (
	injService = `$(touch pwned)`
	injNote    = `"; touch pwned2; echo "`
	injQuoted  = "`touch pwned3` $(touch pwned4); touch pwned5"
)

// TestEmitThroughDaemon publishes events through a running daemon: the
// where filters pick the hooks, and an injection attempt in a payload
// field reaches the shell as text.
func TestEmitThroughDaemon(t *testing.T) {
	e := newEnv(t, "", emitHooks)
	e.serve()

	r := e.must(0, "emit", "deploy.finished", "env=prod",
		"service="+injService, "note="+injNote, "quoted="+injQuoted, "--wait")
	runs := emitted(t, r)
	if len(runs) != 1 || runs["prod"] == "" {
		t.Fatalf("want one run, of prod (staging's where does not match):\n%s", r)
	}
	run := e.getRun(runs["prod"])
	if run.Status != engine.StatusCompleted || run.Trigger != "event" || run.EventType != "deploy.finished" {
		t.Errorf("run %s: status %s trigger %s event %s", run.ID, run.Status, run.Trigger, run.EventType)
	}
	want := []string{
		"[" + injService + "] [" + injNote + "] [" + injQuoted + "]\n",
		injNote + "\n",
		injService + "\n",
	}
	if len(run.Steps) != len(want) {
		t.Fatalf("run %s has %d steps, want %d", run.ID, len(run.Steps), len(want))
	}
	for i, w := range want {
		if s := run.Steps[i]; s.Output != w || s.Error != "" {
			t.Errorf("step %d: output %q error %q, want output %q", i+1, s.Output, s.Error, w)
		}
	}
	text := e.must(0, "run", run.ID)
	for _, w := range []string{"run " + run.ID, "status:    completed", "step_0 (show) shell", "step_2 (argv) shell", injNote} {
		if !strings.Contains(text.stdout, w) {
			t.Errorf("hookd run %s lacks %q:\n%s", run.ID, w, text)
		}
	}
	var payload map[string]any
	if err := json.Unmarshal(run.Event, &payload); err != nil || payload["note"] != injNote {
		t.Errorf("stored payload %s (%v)", run.Event, err)
	}
	if pwned, _ := filepath.Glob(e.path("pwned*")); len(pwned) > 0 {
		t.Errorf("an event field ran as a command: %v exist", pwned)
	}

	// The other filter matches its own events.
	r = e.must(0, "emit", "deploy.started", "env=staging", "service=web", "--wait")
	runs = emitted(t, r)
	if len(runs) != 1 || runs["staging"] == "" {
		t.Fatalf("want one run, of staging:\n%s", r)
	}
	if s := e.getRun(runs["staging"]).Steps; len(s) != 1 || s[0].Output != "staging web\n" {
		t.Errorf("staging steps: %+v", s)
	}

	// Neither filter matches, nor does the pattern: no runs, and emit
	// says why.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"emit", "deploy.finished", "env=dev"}, ": rejected by where: of hooks prod, staging\n"},
		{[]string{"emit", "deploy.finished"}, ": rejected by where: of hooks prod, staging\n"},
		{[]string{"emit", "build.finished", "env=prod"}, ": no hook listens to build.finished\n"},
	} {
		if r := e.must(0, c.args...); !strings.Contains(r.stdout, c.want) {
			t.Errorf("want %q:\n%s", c.want, r)
		}
	}
	// --data and key=value merge; key=value wins.
	r = e.must(0, "emit", "deploy.finished", "--data", `{"env":"dev","service":"api","note":"n"}`, "env=prod", "quoted=q", "--wait")
	runs = emitted(t, r)
	if s := e.getRun(runs["prod"]).Steps; runs["prod"] == "" || s[0].Output != "[api] [n] [q]\n" {
		t.Errorf("--data merged with key=value:\n%s", r)
	}
	// An event id seen before is not dispatched again.
	r = e.must(0, "emit", "deploy.finished", "--id", "evt-1", "env=staging", "service=a")
	if runs := emitted(t, r); len(runs) != 1 {
		t.Errorf("emit --id: want one run:\n%s", r)
	}
	// Idempotent: a retry succeeds and says it changed nothing.
	r = e.run("emit", "deploy.finished", "--id", "evt-1", "env=staging", "service=a")
	if r.code != 0 || !strings.Contains(r.stderr, "already") || !strings.Contains(r.stdout, ": 0 run(s)") {
		t.Errorf("emit of an event id seen before should succeed and say so:\n%s", r)
	}
	if n := len(e.listRuns("prod", "--limit", "1000")); n != 2 {
		t.Errorf("%d runs of prod, want 2", n)
	}
	if n := len(e.listRuns("staging", "--limit", "1000")); n != 2 {
		t.Errorf("%d runs of staging, want 2", n)
	}
}

// TestEmitInProcess publishes an event with no daemon running: the runs
// happen in the hookd process.
func TestEmitInProcess(t *testing.T) {
	e := newEnv(t, "", emitHooks)
	r := e.must(0, "emit", "deploy.finished", "env=prod", "service="+injService, "note=n", "quoted=q", "--wait")
	runs := emitted(t, r)
	if runs["prod"] == "" {
		t.Fatalf("want a run of prod:\n%s", r)
	}
	if run := e.getRun(runs["prod"]); run.Status != engine.StatusCompleted || run.Steps[2].Output != injService+"\n" {
		t.Errorf("run %s: status %s steps %+v", run.ID, run.Status, run.Steps)
	}
	if pwned, _ := filepath.Glob(e.path("pwned*")); len(pwned) > 0 {
		t.Errorf("an event field ran as a command: %v exist", pwned)
	}
}

var listHooks = map[string]string{
	"hourly.yaml": `trigger:
  every: 1h
steps:
  - type: shell
    command: echo hourly
skip_llm: true
`,
	"nightly.yaml": `trigger:
  cron: "0 3 * * *"
steps:
  - type: shell
    command: echo nightly
skip_llm: true
`,
	"byhand.yaml": quickHook,
	"onevent.yaml": `trigger:
  event: thing.happened
steps:
  - type: shell
    command: echo event
skip_llm: true
`,
}

// listLine returns the line of `hookd list` for the hook.
func listLine(t *testing.T, r result, hook string) string {
	t.Helper()
	for _, l := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == hook {
			return l
		}
	}
	t.Fatalf("hook %s not listed:\n%s", hook, r)
	return ""
}

var dueRE = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z0-9+-]+ \((in |now)`)

// checkList checks `hookd list` shows every hook with its trigger and its
// next due time; paused hooks say so.
func checkList(t *testing.T, e *env, running bool, paused string) {
	t.Helper()
	r := e.must(0, "list")
	if notice := strings.Contains(r.stderr, "hookd is not running"); notice == running {
		t.Errorf("running %v, but the not-running notice is there: %v\n%s", running, notice, r)
	}
	want := map[string]string{"hourly": "every 1h", "nightly": "0 3 * * *", "byhand": "manual", "onevent": "thing.happened"}
	for hook, trig := range want {
		line := listLine(t, r, hook)
		if !strings.Contains(line, trig) {
			t.Errorf("list line of %s lacks its trigger %q: %q", hook, trig, line)
		}
		if !strings.Contains(line, "hooks.d/"+hook+".yaml") {
			t.Errorf("list line of %s lacks its file: %q", hook, line)
		}
		scheduled := hook == "hourly" || hook == "nightly"
		switch {
		case hook == paused:
			if !strings.Contains(line, "paused") {
				t.Errorf("list line of paused %s: %q", hook, line)
			}
		case scheduled != dueRE.MatchString(line):
			t.Errorf("list line of %s: next due shown %v, want %v: %q", hook, !scheduled, scheduled, line)
		}
	}

	var hooks []engine.HookStatus
	r = e.must(0, "list", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &hooks); err != nil {
		t.Fatalf("list --json: %v\n%s", err, r)
	}
	if len(hooks) != len(want) {
		t.Errorf("list --json: %d hooks, want %d", len(hooks), len(want))
	}
	// With a daemon list prints the daemon's answer indented, without
	// one the hooks it found: both as every --json prints the hooks.
	if again, err := json.MarshalIndent(hooks, "", "  "); err != nil || string(again)+"\n" != r.stdout {
		t.Errorf("list --json is not the hooks it holds, indented (%v):\n%s\nwant\n%s", err, r.stdout, again)
	}
	now := time.Now()
	for _, h := range hooks {
		scheduled := h.Name == "hourly" || h.Name == "nightly"
		if scheduled && !h.NextDue.After(now.Add(-time.Minute)) || !scheduled && !h.NextDue.IsZero() {
			t.Errorf("list --json: %s next due %v", h.Name, h.NextDue)
		}
		if h.Paused != (h.Name == paused) {
			t.Errorf("list --json: %s paused %v", h.Name, h.Paused)
		}
	}
}

// TestListNextPause covers list, next, pause and resume, with and without
// a daemon.
func TestListNextPause(t *testing.T) {
	e := newEnv(t, "", listHooks)

	checkList(t, e, false, "")

	r := e.must(0, "next", "hourly", "-n", "3")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("next -n 3 printed %d lines:\n%s", len(lines), r)
	}
	var prev time.Time
	for i, l := range lines {
		tm, err := time.Parse("2006-01-02 15:04:05 MST Mon", l)
		if err != nil {
			t.Fatalf("next line %q: %v", l, err)
		}
		if i > 0 && tm.Sub(prev) != time.Hour {
			t.Errorf("next: %s follows %s; want 1h later", tm, prev)
		}
		prev = tm
	}
	if n := len(strings.Split(strings.TrimSpace(e.must(0, "next", "nightly").stdout), "\n")); n != 5 {
		t.Errorf("next without -n printed %d times, want 5", n)
	}
	if r := e.must(0, "next", "byhand"); !strings.Contains(r.stdout, "no schedule") {
		t.Errorf("next of a manual hook:\n%s", r)
	}
	e.must(1, "next", "nope")

	// Pause with no daemon: stored for the next start.
	r = e.must(0, "pause", "hourly")
	if !strings.Contains(r.stdout, "not running") {
		t.Errorf("pause without a daemon:\n%s", r)
	}
	checkList(t, e, false, "hourly")
	e.must(1, "pause", "nope")

	d := e.serve()
	checkList(t, e, true, "hourly")
	r = e.must(75, "fire", "hourly")
	if !strings.Contains(r.stderr, "hookd resume hourly") {
		t.Errorf("fire of a hook paused before the start:\n%s", r)
	}
	r = e.must(0, "resume", "hourly")
	if strings.TrimSpace(r.stdout) != "hourly resumed" {
		t.Errorf("resume through the daemon:\n%s", r)
	}
	checkList(t, e, true, "")
	e.must(0, "fire", "byhand", "--wait")
	if line := listLine(t, e.must(0, "list"), "byhand"); !strings.Contains(line, "completed") {
		t.Errorf("list line of byhand after a run: %q", line)
	}
	e.must(0, "pause", "nightly")
	checkList(t, e, true, "nightly")

	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("exit %d after SIGTERM; log:\n%s", code, d.log)
	}
	// The pause made through the daemon outlives it.
	checkList(t, e, false, "nightly")
	e.must(0, "resume", "nightly")
	checkList(t, e, false, "")
}

// TestValidate checks hook files: errors as file:line: field: message on
// stderr and exit 1; the count of good hooks on stdout.
func TestValidate(t *testing.T) {
	// A model is named: validate checks that a hook with a prompt has one.
	e := newProcEnv(t, "llm: {model: test-model, base_url: \"http://127.0.0.1:1/v1\"}\n", nil)
	if err := os.Mkdir(e.path("check"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.write("check/good.yaml", quickHook)
	e.write("check/bad.yaml", `description: one bad step
steps:
  - type: shell
    command: echo hi
    timeout: -1s
skip_llm: true
`)
	r := e.must(1, "validate", "check")
	if !regexp.MustCompile(`(?m)^check/bad\.yaml:5: steps\[0\]\.timeout: must be > 0`).MatchString(r.stderr) {
		t.Errorf("want file:line: field: message for bad.yaml:\n%s", r)
	}
	if strings.Contains(r.stderr, "good.yaml") {
		t.Errorf("the good file was reported:\n%s", r)
	}
	if !strings.Contains(r.stdout, "1 hook(s) valid") || !strings.Contains(r.stdout, "1 error(s)") {
		t.Errorf("want the good hook counted on stdout:\n%s", r)
	}

	e.write("check/typo.yaml", "tigger:\n  every: 1h\n")
	r = e.must(1, "validate", "check")
	if !regexp.MustCompile(`(?m)^check/typo\.yaml:1: tigger: unknown field`).MatchString(r.stderr) {
		t.Errorf("want the misspelled key reported:\n%s", r)
	}
	if !strings.Contains(r.stdout, "2 error(s)") {
		t.Errorf("want two errors counted:\n%s", r)
	}

	// The default directory is hooks.d.
	e.write("hooks.d/good.yaml", quickHook)
	if r := e.must(0, "validate"); !strings.Contains(r.stdout, "1 hook(s) valid in hooks.d") {
		t.Errorf("validate of the default dir:\n%s", r)
	}
	e.must(1, "validate", "nowhere")

	// The shipped examples are valid.
	shipped, err := filepath.Abs("../../hooks.d")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(shipped, "*.yaml"))
	if len(files) == 0 {
		t.Fatalf("no shipped hooks in %s", shipped)
	}
	r = e.must(0, "validate", shipped)
	// One of them is a lifecycle handler (allow-commands.yaml).
	if !strings.HasPrefix(r.stdout, strconv.Itoa(len(files)-1)+" hook(s) valid") ||
		!strings.Contains(r.stdout, ", 1 lifecycle handler(s)") || r.stderr != "" {
		t.Errorf("validate %s (%d files):\n%s", shipped, len(files), r)
	}
}

// TestUsageErrors checks that bad command lines exit 2.
func TestUsageErrors(t *testing.T) {
	e := newEnv(t, "", map[string]string{"quick.yaml": quickHook})
	for _, tc := range []struct {
		args []string
		msg  string // on stderr
	}{
		{nil, ""},
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"fire"}, "Usage: hookd fire"},
		{[]string{"fire", "quick", "extra"}, "Usage: hookd fire"},
		{[]string{"fire", "quick", "--event", "{bad"}, "--event must be a JSON object"},
		{[]string{"fire", "quick", "--event", "[1, 2]"}, "--event must be a JSON object"},
		{[]string{"fire", "--nope", "quick"}, "flag provided but not defined"},
		{[]string{"emit"}, "Usage: hookd emit"},
		{[]string{"emit", "thing", "novalue"}, `"novalue" is not key=value`},
		{[]string{"emit", "thing", "=v"}, "is not key=value"},
		{[]string{"emit", "thing", "--data", "{"}, "--data must be a JSON object"},
		{[]string{"run"}, "Usage: hookd run"},
		{[]string{"runs", "a", "b"}, "Usage: hookd runs"},
		{[]string{"runs", "--limit", "many"}, "invalid value"},
		{[]string{"next"}, "Usage: hookd next"},
		{[]string{"next", "quick", "-n", "x"}, "invalid value"},
		{[]string{"pause"}, "Usage: hookd pause"},
		{[]string{"resume", "a", "b"}, "Usage: hookd resume"},
		{[]string{"list", "extra"}, "Usage: hookd list"},
		{[]string{"status", "extra"}, "Usage: hookd status"},
		{[]string{"validate", "a", "b"}, "Usage: hookd validate"},
		{[]string{"serve", "extra"}, "Usage: hookd serve"},
		{[]string{"serve", "--log-format", "xml"}, "--log-format must be text or json"},
		{[]string{"runs", "--status", "skiped"}, `--status must be one of queued, running, completed`},
		{[]string{"runs", "--limit", "0"}, "--limit must be >= 1"},
		{[]string{"next", "quick", "-n", "0"}, "-n must be >= 1"},
	} {
		r := e.must(2, tc.args...)
		if !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("want %q on stderr:\n%s", tc.msg, r)
		}
	}
	// A usage error ran nothing.
	if e.exists(".hookd/hookd.db") {
		t.Errorf("a usage error created the database")
	}
	if r := e.must(0, "--help"); !strings.Contains(r.stdout, "Usage:") {
		t.Errorf("--help:\n%s", r)
	}
	e.must(0, "fire", "-h")

	// Not usage errors: the command line was right.
	if r := e.must(1, "status"); !strings.Contains(r.stdout, "not running") {
		t.Errorf("status without a daemon:\n%s", r)
	}
	if r := e.must(1, "runs"); !strings.Contains(r.stderr, "no database") {
		t.Errorf("runs before any database:\n%s", r)
	}
	e.must(0, "fire", "quick", "--wait")
	if r := e.must(1, "run", "nosuchrun"); !strings.Contains(r.stderr, "no run nosuchrun") {
		t.Errorf("run of an unknown id:\n%s", r)
	}
	if r := e.must(1, "list", "--hooks", "nowhere"); !strings.Contains(r.stderr, "nowhere does not exist") {
		t.Errorf("list of a missing hooks dir:\n%s", r)
	}
	if r := e.must(1, "list", "--config", "missing.yaml"); !strings.Contains(r.stderr, "missing.yaml") {
		t.Errorf("an explicit settings file that is missing:\n%s", r)
	}
}
