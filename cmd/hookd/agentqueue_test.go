package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

// agent-queue hook files, written in JSON exactly as agent-queue's spec
// shows them, load, render and run with the meaning they had there.

// gitRepo makes a repository at dir with a commit on main and a branch
// "feature" checked out that changes one line.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	testtool.Need(t, "git")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=Ada", "-c", "user.email=ada@example.com",
			"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("init", "-q")
	write("parse.go", "package parse\n\nfunc Parse() string { return \"a\" }\n")
	run("add", ".")
	run("commit", "-q", "-m", "first")
	run("checkout", "-q", "-b", "feature")
	write("parse.go", "package parse\n\nfunc Parse() string { return \"DIFF-MARKER\" }\n")
	run("commit", "-q", "-am", "change")
}

// TestAgentQueueStepNumbering: agent-queue numbers context steps from 0,
// so over [run_tests, git_diff] its {{step_1}} is the diff, not the test
// output, and a skip reason names step_0.
func TestAgentQueueStepNumbering(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"triage.json": `{
  "name": "triage",
  "trigger": {"type": "periodic", "interval_seconds": 3600},
  "context_steps": [
    {"type": "run_tests", "command": "echo 'TEST-OUTPUT-MARKER'; exit 1", "workdir": "repo"},
    {"type": "git_diff", "workspace": "repo", "base_branch": "main"}
  ],
  "prompt_template": "Diff: {{step_1}}\nTests: {{step_0.exit_code}}"
}`,
		"green.json": `{
  "name": "green",
  "context_steps": [
    {"type": "run_tests", "command": "echo ok", "skip_llm_if_exit_zero": true},
    {"type": "git_diff", "workspace": "repo"}
  ],
  "prompt_template": "{{step_1}}"
}`,
	})
	gitRepo(t, e.path("repo"))

	r := e.must(0, "render", "triage", "--json")
	var run engine.Run
	if err := json.Unmarshal([]byte(r.stdout), &run); err != nil {
		t.Fatalf("decode: %v\n%s", err, r)
	}
	if !strings.Contains(run.Prompt, "DIFF-MARKER") || strings.Contains(run.Prompt, "TEST-OUTPUT-MARKER") {
		t.Errorf("{{step_1}} over [run_tests, git_diff] is not the diff:\n%s", run.Prompt)
	}
	if !strings.Contains(run.Prompt, "Tests: 1") {
		t.Errorf("{{step_0.exit_code}} is not the test command's exit code:\n%s", run.Prompt)
	}
	if len(run.Steps) != 2 || run.Steps[0].Index != 0 || run.Steps[0].Type != "run_tests" ||
		run.Steps[1].Index != 1 || run.Steps[1].Type != "git_diff" {
		t.Fatalf("steps[].index: %+v", run.Steps)
	}
	// The JSON a client reads says index 0 for the first step.
	var raw struct {
		Steps []map[string]any `json:"steps"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil || len(raw.Steps) != 2 || raw.Steps[0]["index"] != float64(0) {
		t.Errorf("JSON steps: %v %v", raw.Steps, err)
	}

	r = e.must(0, "render", "green")
	if !strings.Contains(r.stderr, "short-circuit: step_0: exit code 0") {
		t.Errorf("skip reason does not name step_0:\n%s", r)
	}

	// {{step_2}} over two steps is out of range at load, naming the range.
	e.write("hooks.d/triage.json", strings.Replace(`{"context_steps": [{"type": "run_tests", "command": "true"},
 {"type": "git_diff"}], "prompt_template": "{{step_2}}"}`, "\n", "", -1))
	r = e.must(1, "validate")
	if !strings.Contains(r.stdout+r.stderr, "hooks.d/triage.json:1: prompt_template: placeholder {{step_2}}: step_2 is out of range (the hook has 2 steps: step_0 to step_1)") {
		t.Errorf("validate:\n%s", r)
	}
}

// TestAgentQueuePeriodicPayload: a periodic hook's {{event.*}} fields are
// agent-queue's, in a preview (hookd render) and in a run fired by hand.
func TestAgentQueuePeriodicPayload(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"tick.json": `{
  "name": "tick",
  "trigger": {"type": "periodic", "interval_seconds": 86400},
  "context_steps": [{"type": "shell", "command": "echo at {{event.current_time_epoch}}"}],
  "prompt_template": "Now {{event.current_time}}; {{step_0}}"
}`,
		"since.json": `{
  "name": "since",
  "trigger": {"type": "periodic", "interval_seconds": 86400},
  "context_steps": [{"type": "shell", "command": "echo {{event.seconds_since_last_run}} {{event.last_run_time_epoch}}"}],
  "prompt_template": "Last {{event.last_run_time}}"
}`,
	})
	r := e.must(0, "render", "tick")
	if !strings.Contains(r.stdout, "Now \"20") || !strings.Contains(r.stdout, "at 1") {
		t.Errorf("current_time fields not rendered:\n%s", r)
	}
	// First run: the last_* fields are absent, so the placeholders fail.
	e.must(1, "render", "since")

	first := e.getRun(runID(t, e.must(1, "fire", "since", "--wait")))
	if first.Status != engine.StatusFailed {
		t.Errorf("first run of since: %s, want failed (no last_run_time yet)", first.Status)
	}
	var payload map[string]any
	if err := json.Unmarshal(first.Event, &payload); err != nil || payload["trigger"] != "manual" || payload["current_time"] == nil {
		t.Errorf("manual run payload %s (%v)", first.Event, err)
	}
	r = e.must(0, "render", "since")
	if !strings.Contains(r.stdout, "Last \"20") {
		t.Errorf("last_run_time not rendered after a run:\n%s", r)
	}
}

// TestAgentQueueStepFields: agent-queue's result field names resolve, and
// a field a step kind does not have is a validate error at its line.
func TestAgentQueueStepFields(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"fields.json": `{
  "name": "fields",
  "context_steps": [
    {"type": "list_files", "path": "repo"},
    {"type": "run_tests", "command": "echo ran; exit 3"},
    {"type": "git_diff", "workspace": "repo", "base_branch": "main"},
    {"type": "file_diff", "workspace": "repo", "path": "parse.go"}
  ],
  "prompt_template": "dir={{step_0.directory}}\nlist={{step_0.content}}\nout={{step_1.stdout}} err=[{{step_1.stderr}}] code={{step_1.exit_code}}\ndiff={{step_2.exit_code}} file={{step_3.exit_code}}"
}`,
	})
	gitRepo(t, e.path("repo"))
	r := e.must(0, "render", "fields")
	for _, want := range []string{`dir="repo"`, "repo/parse.go", `out="ran"`, `err=[""]`, "code=3", "diff=0 file=0"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("rendered prompt lacks %q:\n%s", want, r.stdout)
		}
	}

	e.write("hooks.d/typo.yaml", `steps:
  - name: diff
    type: git_diff
  - type: shell
    command: echo {{steps.diff.dif}}
prompt: |
  {{step_0.diff}}
  {{step_1.stdot}}
`)
	r = e.must(1, "validate")
	for _, want := range []string{
		`hooks.d/typo.yaml:5: steps[1].command: placeholder {{steps.diff.dif}}: step "diff" is a git_diff step: its results have no field "dif" (they have base, containment, count, diff, error, exit_code, files, head, name, output, truncated, type)`,
		`hooks.d/typo.yaml:8: prompt: placeholder {{step_1.stdot}}: step_1 is a shell step: its results have no field "stdot"`,
	} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("validate lacks %q:\n%s", want, r)
		}
	}
}

// TestAgentQueueHookKeys: id names the hook, project_id is shown by
// hookd list, trigger.skip_llm runs the steps only, numeric timeouts are
// seconds, run_tests takes workspace, and a periodic trigger in
// agent-queue's shape keeps agent-queue's default cooldown of an hour.
func TestAgentQueueHookKeys(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"aq.json": `{
  "id": "nightly-tests",
  "project_id": "webapp",
  "trigger": {"type": "periodic", "interval_seconds": 86400, "skip_llm": true},
  "timeout": 300,
  "context_steps": [
    {"type": "run_tests", "command": "pwd", "workspace": "repo", "timeout": 60}
  ],
  "prompt_template": "never sent: {{step_0}}",
  "llm_config": {"provider": "openai", "model": "gpt-4o-mini", "base_url": ""}
}`,
	})
	if err := os.MkdirAll(e.path("repo"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.must(0, "validate")
	r := e.must(0, "list")
	if line := listLine(t, r, "nightly-tests"); !strings.Contains(line, "nightly-tests [webapp]") {
		t.Errorf("list does not show the project: %q", line)
	}
	run := e.getRun(runID(t, e.must(0, "fire", "nightly-tests", "--wait")))
	if run.Status != engine.StatusCompleted || run.Prompt != "" || len(run.Steps) != 1 ||
		!strings.HasSuffix(strings.TrimSpace(run.Steps[0].Output), "/repo") {
		t.Errorf("run: %s prompt %q steps %+v", run.Status, run.Prompt, run.Steps)
	}
	// The project label is stored with the run: hookd run shows it, its
	// JSON (and the API's) has project_id.
	if run.Project != "webapp" {
		t.Errorf("run record project %q, want webapp", run.Project)
	}
	if r := e.must(0, "run", run.ID); !strings.Contains(r.stdout, "project:   webapp") {
		t.Errorf("hookd run does not show the project:\n%s", r)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(e.must(0, "run", run.ID, "--json").stdout), &raw); err != nil || raw["project_id"] != "webapp" {
		t.Errorf("hookd run --json project_id: %v (%v)", raw["project_id"], err)
	}
	// agent-queue's default cooldown: a second fire within the hour is
	// refused, and the refusal's record carries the label too.
	r = e.must(75, "fire", "nightly-tests")
	if !strings.Contains(r.stderr, "cooldown") {
		t.Errorf("second fire not refused by the cooldown:\n%s", r)
	}
	var list []*engine.Run
	r = e.must(0, "runs", "nightly-tests", "--status", "skipped", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0].Project != "webapp" {
		t.Errorf("cooldown record (%v):\n%s", err, r.stdout)
	}
}

// TestAgentQueueTriggerShapes: agent-queue's watch, schedule and
// one-shot shapes load; hookd list and hookd next show what they mean.
func TestAgentQueueTriggerShapes(t *testing.T) {
	e := newEnv(t, "llm: {model: test-model, base_url: \"http://127.0.0.1:1/v1\"}\n", map[string]string{
		"docs.json": `{
  "id": "docs-watch",
  "trigger": {"type": "event", "event_type": "folder.changed",
    "watch": {"paths": ["docs/"], "recursive": true, "extensions": [".md"], "project_id": "site", "base_dir": "web"}},
  "context_steps": [{"type": "shell", "command": "echo {{event.count}}"}],
  "prompt_template": "{{step_0}}"
}`,
		"standup.json": `{
  "id": "standup",
  "trigger": {"type": "periodic", "schedule": {"times": ["09:00", "17:30"], "days": ["mon", "fri"]}, "timezone": "UTC"},
  "context_steps": [{"type": "shell", "command": "echo hi"}],
  "prompt_template": "{{step_0}} at {{event.current_time}}"
}`,
		"release.json": `{
  "id": "release",
  "trigger": {"type": "scheduled", "fire_at": "2099-06-01T12:00:00Z"},
  "context_steps": [{"type": "shell", "command": "echo go"}],
  "prompt_template": "{{step_0}}"
}`,
		"gone.yaml": "trigger: {at: \"2001-01-01T00:00:00Z\", on_missed: skip}\nsteps: [{type: shell, command: echo}]\nskip_llm: true\n",
	})
	e.must(0, "validate")
	r := e.must(0, "list")
	for hook, want := range map[string]string{
		"docs-watch": "watch [" + e.path("web/docs") + "]",
		"standup":    "cron 0 9 * * 1,5; 30 17 * * 1,5 (UTC)",
		"release":    "at 2099-06-01T12:00:00Z",
	} {
		if line := listLine(t, r, hook); !strings.Contains(line, want) {
			t.Errorf("list %s: %q lacks %q", hook, line, want)
		}
	}
	r = e.must(0, "next", "standup", "-n", "3")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("next standup:\n%s", r)
	}
	for _, l := range lines {
		if !(strings.Contains(l, "09:00:00") && strings.HasSuffix(l, "Mon") || strings.Contains(l, "17:30:00") && strings.HasSuffix(l, "Mon") ||
			strings.Contains(l, "09:00:00") && strings.HasSuffix(l, "Fri") || strings.Contains(l, "17:30:00") && strings.HasSuffix(l, "Fri")) {
			t.Errorf("next standup: %q is not 09:00 or 17:30 on a Monday or Friday", l)
		}
	}
	r = e.must(0, "next", "release", "-n", "3")
	if got := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(got) != 1 || !strings.HasPrefix(got[0], "2099-06-01") {
		t.Errorf("next release: want the one time:\n%s", r)
	}
	r = e.must(0, "next", "gone")
	if !strings.Contains(r.stdout, "gone fires once, at 2001-01-01") || !strings.Contains(r.stdout, "that time has passed") {
		t.Errorf("next gone:\n%s", r)
	}
}

// TestAgentQueueWatchPayloads: hooks in agent-queue's watch shape fire on
// real file changes with agent-queue's payload: folder.changed has the
// folder as path and change paths relative to it, file.changed has
// old_mtime and new_mtime, both have watch_id; {{event.paths}} lists the
// relative paths one a line; hidden files are left out unless the watch
// says include_hidden.
func TestAgentQueueWatchPayloads(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"docs.json": `{
  "id": "docs",
  "cooldown_seconds": 0,
  "trigger": {"type": "event", "event_type": "folder.changed",
    "watch": {"paths": ["docs/"], "recursive": true, "extensions": [".md"]}, "skip_llm": true},
  "context_steps": [{"type": "shell", "command": "printf '%s' {{event.paths}}"}]
}`,
		"dots.json": `{
  "id": "dots",
  "trigger": {"type": "event", "event_type": "folder.changed",
    "watch": {"paths": ["dots/"], "include_hidden": true}, "skip_llm": true},
  "context_steps": [{"type": "shell", "command": "printf '%s' {{event.paths}}"}]
}`,
		"conf.json": `{
  "id": "conf",
  "trigger": {"type": "event", "event_type": "file.changed", "watch": {"paths": ["app.conf"]}, "skip_llm": true},
  "context_steps": [{"type": "shell", "command": "echo {{event.old_mtime}} {{event.new_mtime}}"}]
}`,
	})
	for _, d := range []string{"docs/sub", "docs/.cache", "dots"} {
		if err := os.MkdirAll(e.path(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.write("app.conf", "a=1")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(e.path("app.conf"), old, old); err != nil {
		t.Fatal(err)
	}
	e.serve()

	// The docs watch leaves hidden files and folders out: its runs list
	// only the two visible files (in one run, or more on a slow machine).
	e.write("docs/.draft.md", "hidden")
	e.write("docs/.cache/x.md", "hidden folder")
	e.write("dots/.env", "shown")
	e.write("docs/guide.md", "# guide")
	e.write("docs/sub/api.md", "# api")
	var seen []string
	waitFor(t, "the docs watch to report guide.md and sub/api.md", func() bool {
		seen = nil
		for _, r := range e.watchRuns("docs") {
			p := payload(t, r)
			if r.EventType != engine.EventFolderChanged || p["path"] != e.path("docs") || p["watch_id"] != "docs" {
				t.Fatalf("folder.changed payload: %s %v", r.EventType, p)
			}
			seen = append(seen, strings.Split(p["paths"].(string), "\n")...)
		}
		return len(seen) >= 2
	}, func() string { return fmt.Sprintf("seen %q", seen) })
	if strings.Join(seen, " ") != "guide.md sub/api.md" {
		t.Errorf("docs watch reported %q, want guide.md and sub/api.md only", seen)
	}
	runs := e.watchRuns("docs")
	r := e.waitRun(runs[len(runs)-1].ID, engine.StatusCompleted)
	p := payload(t, r)
	list := p["changes"].([]any)
	c := list[len(list)-1].(map[string]any)
	if c["path"] != "sub/api.md" || c["absolute_path"] != e.path("docs/sub/api.md") || c["relative_path"] != "docs/sub/api.md" ||
		c["operation"] != engine.OpCreated {
		t.Errorf("change: %v", c)
	}
	if out := r.Steps[0].Output; out != p["paths"] {
		t.Errorf("{{event.paths}} in a step: %q, payload %q", out, p["paths"])
	}
	runs = e.waitWatchRuns("dots", 1)
	if p := payload(t, e.waitRun(runs[0].ID, engine.StatusCompleted)); p["paths"] != ".env" {
		t.Errorf("include_hidden: %v", p)
	}

	e.write("app.conf", "a=22")
	runs = e.waitWatchRuns("conf", 1)
	r = e.waitRun(runs[0].ID, engine.StatusCompleted)
	p = payload(t, r)
	fi, err := os.Stat(e.path("app.conf"))
	if err != nil {
		t.Fatal(err)
	}
	oldM, _ := p["old_mtime"].(float64)
	newM, _ := p["new_mtime"].(float64)
	if r.EventType != engine.EventFileChanged || p["watch_id"] != "conf" || p["operation"] != engine.OpModified ||
		int64(oldM) != old.Unix() || int64(newM) != fi.ModTime().Unix() {
		t.Errorf("file.changed payload: %v (old %d, new %d)", p, old.Unix(), fi.ModTime().Unix())
	}
	if f := strings.Fields(r.Steps[0].Output); len(f) != 2 || !strings.HasPrefix(f[0], strconv.FormatInt(old.Unix(), 10)) {
		t.Errorf("step saw %q", r.Steps[0].Output)
	}
}

// TestAgentQueueCreateTask: agent-queue's create_task step publishes
// task.create with the task's fields; a hook on task.create gets them.
func TestAgentQueueCreateTask(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"triage.json": `{
  "id": "triage",
  "project_id": "webapp",
  "trigger": {"type": "event", "event_type": "task.failed", "skip_llm": true},
  "context_steps": [
    {"type": "shell", "command": "echo stack trace"},
    {"type": "create_task", "title_template": "Fix {{event.title}}", "description_template": "{{step_0}}", "priority": 50}
  ]
}`,
		"tasks.yaml": "trigger: {event: task.create}\nsteps:\n  - type: shell\n    command: [echo, \"{{event.title}}|{{event.project_id}}|{{event.priority}}|{{event.task_id}}\"]\nskip_llm: true\n",
	})
	r := e.must(0, "emit", "task.failed", "title=TestParse", "--wait")
	runs := e.listRuns("triage")
	if len(runs) != 1 {
		t.Fatalf("triage runs %d:\n%s", len(runs), r)
	}
	parent := e.waitRun(runs[0].ID, engine.StatusCompleted)
	task := parent.Steps[1]
	id, _ := task.Fields["task_id"].(string)
	if task.Type != "create_task" || task.Fields["created"] != true || id == "" || task.Fields["event_type"] != "task.create" {
		t.Fatalf("create_task result: %+v", task)
	}
	var got string
	waitFor(t, "the task.create hook to run", func() bool {
		for _, run := range e.listRuns("tasks") {
			if run.Status == engine.StatusCompleted && len(run.Steps) == 1 {
				got = strings.TrimSpace(run.Steps[0].Output)
				return true
			}
		}
		return false
	}, func() string { return got })
	if want := "Fix TestParse|webapp|50|" + id; got != want {
		t.Errorf("task.create hook saw %q, want %q", got, want)
	}
}

// TestAgentQueueWatchEventsOnBus: as agent-queue's file watcher did, a
// watch's change is published as a bus event, so a hook with event_type
// file.changed and no watch of its own fires with the watch's payload
// (watch_id naming the watch), while the watch's own hook fires once per
// change, not twice. file.changed and folder.changed are hookd's to
// publish: hookd emit refuses them.
func TestAgentQueueWatchEventsOnBus(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"conf.json": `{
  "id": "conf",
  "cooldown_seconds": 0,
  "trigger": {"type": "event", "event_type": "file.changed", "watch": {"paths": ["app.conf"]}, "skip_llm": true},
  "context_steps": [{"type": "shell", "command": "echo {{event.operation}}"}]
}`,
		"audit.json": `{
  "id": "audit",
  "cooldown_seconds": 0,
  "trigger": {"type": "event", "event_type": "file.changed", "skip_llm": true},
  "context_steps": [{"type": "shell", "command": "echo {{event.watch_id}} {{event.relative_path}}"}]
}`,
	})
	e.write("app.conf", "a=1")
	e.serve()

	e.write("app.conf", "a=22")
	runs := e.waitWatchRuns("conf", 1)
	e.waitRun(runs[0].ID, engine.StatusCompleted)
	var audit []*engine.Run
	waitFor(t, "the file.changed hook to fire", func() bool {
		audit = e.listRuns("audit")
		return len(audit) >= 1
	}, nil)
	r := e.waitRun(audit[0].ID, engine.StatusCompleted)
	p := payload(t, r)
	if r.Trigger != "event" || r.EventType != engine.EventFileChanged || p["watch_id"] != "conf" || p["operation"] != engine.OpModified {
		t.Errorf("file.changed hook: trigger %s, event %s, payload %v", r.Trigger, r.EventType, p)
	}
	if out := strings.TrimSpace(r.Steps[0].Output); out != "conf app.conf" {
		t.Errorf("file.changed hook's step saw %q, want \"conf app.conf\"", out)
	}
	if all := e.listRuns("conf"); len(all) != 1 || all[0].Trigger != "watch" {
		t.Errorf("the watch's hook ran %d times, want once by its watch: %v", len(all), all)
	}

	for _, typ := range []string{engine.EventFileChanged, engine.EventFolderChanged} {
		res := e.must(1, "emit", typ, "path=/etc/passwd")
		if !strings.Contains(res.stderr, "published by hookd itself") {
			t.Errorf("emit %s:\n%s", typ, res)
		}
	}
}

// TestAgentQueueScheduleAddsToInterval: agent-queue's periodic trigger
// with interval_seconds and a schedule loads, and fires on the days
// agent-queue fired it: days_of_week and cron count 0 as Monday, in UTC;
// the interval holds as well, as the hook's cooldown (config's test).
func TestAgentQueueScheduleAddsToInterval(t *testing.T) {
	e := newEnv(t, "llm: {model: test-model, base_url: \"http://127.0.0.1:1/v1\"}\n", map[string]string{
		"weekly.json": `{
  "id": "weekly",
  "trigger": {"type": "periodic", "interval_seconds": 86400,
    "schedule": {"times": ["09:00"], "days_of_week": [0, "4"]}},
  "context_steps": [{"type": "shell", "command": "echo hi"}],
  "prompt_template": "{{step_0}}"
}`,
		"workdays.json": `{
  "id": "workdays",
  "trigger": {"type": "periodic", "interval_seconds": 3600, "schedule": {"cron": "30 7 * * 0-4"}},
  "context_steps": [{"type": "shell", "command": "echo hi"}],
  "prompt_template": "{{step_0}}"
}`,
	})
	e.must(0, "validate")
	r := e.must(0, "list")
	for hook, want := range map[string]string{
		"weekly":   "cron 0 9 * * 1,5 (UTC)",
		"workdays": "cron 30 7 * * 1,2,3,4,5 (UTC)",
	} {
		if line := listLine(t, r, hook); !strings.Contains(line, want) {
			t.Errorf("list %s: %q lacks %q", hook, line, want)
		}
	}
	for hook, days := range map[string][]string{"weekly": {"Mon", "Fri"}, "workdays": {"Mon", "Tue", "Wed", "Thu", "Fri"}} {
		r = e.must(0, "next", hook, "-n", "7")
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if !slices.ContainsFunc(days, func(d string) bool { return strings.HasSuffix(l, d) }) {
				t.Errorf("next %s: %q is not on %v", hook, l, days)
			}
		}
	}
}
