package main

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/llm/llmtest"
)

// checkHooks are the hooks of the check_failed tests: a nightly check
// whose tests fail and whose model triages them (skip_llm_if_exit_zero),
// a hook whose check: names a lint step that fails, one whose
// skip_llm_if_empty step found something (no check: the model is called,
// nothing failed) and a nightly whose tests pass (short-circuit).
func checkHooks(model string) map[string]string {
	llm := "llm: {model: m, base_url: " + model + "}\n"
	return map[string]string{
		"nightly.yaml": llm + `steps:
  - name: tests
    type: shell
    command: echo 2 failing; exit 1
    skip_llm_if_exit_zero: true
prompt: "triage: {{step_0}}"
retry: {attempts: 3, on: [failed], backoff: 1s, max_backoff: 1s}
`,
		"linted.yaml": llm + `steps:
  - name: lint
    type: shell
    command: echo unused import; exit 2
  - type: shell
    command: echo more context
check: lint
prompt: "fix: {{step_0}}"
`,
		"changed.yaml": llm + `steps:
  - type: shell
    command: echo a new file
    skip_llm_if_empty: true
prompt: "look: {{step_0}}"
`,
		"green.yaml": llm + `steps:
  - name: tests
    type: shell
    command: echo all passed
    skip_llm_if_exit_zero: true
prompt: "never sent: {{step_0}}"
`,
	}
}

// TestCheckFailedThroughDaemon: a nightly check that failed and whose
// model triaged it ends completed, but not green: `hookd fire --wait`
// exits 3 (it exited 0, as for a success, before check_failed), the
// run records check_failed naming the step, `hookd runs`, `hookd run`,
// `hookd list`, `hookd status`, `hookd watch` and the API show it, notify targets with
// on: [failed] hear of it (outcome check_failed), and retry: {on:
// [failed]} does not run it again. check: names a check step of any
// kind; skip_llm_if_empty is no check.
func TestCheckFailedThroughDaemon(t *testing.T) {
	model := llmtest.NewFunc(func(llmtest.Request) llmtest.Reply { return llmtest.Answer("2 tests fail in pkg/x: a flaky clock") })
	defer model.Close()
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	e := newEnv(t, "notify:\n  - url: "+srv.URL+"\n    on: [failed]\n", checkHooks(model.BaseURL()))
	d := e.serve()

	r := e.must(3, "fire", "nightly", "--wait")
	if !strings.Contains(r.stderr, "nightly completed, check failed: tests") || !strings.Contains(r.stdout, "a flaky clock") {
		t.Errorf("fire --wait: want the check that failed on stderr and the model's answer on stdout:\n%s", r)
	}
	id := runID(t, r)
	run := e.getRun(id)
	if run.Status != engine.StatusCompleted || run.CheckFailed != "tests" || run.Retry != nil {
		t.Errorf("run %s: status %s, check_failed %q, retry %+v; want completed, tests, no retry", id, run.Status, run.CheckFailed, run.Retry)
	}
	for _, args := range [][]string{{"runs", "nightly"}, {"run", id}, {"list"}} {
		if out := e.must(0, args...).stdout; !strings.Contains(out, "completed, check failed: tests") {
			t.Errorf("hookd %s does not show the check that failed:\n%s", strings.Join(args, " "), out)
		}
	}
	var hooks []engine.HookStatus
	if err := json.Unmarshal([]byte(e.must(0, "list", "--json").stdout), &hooks); err != nil {
		t.Fatal(err)
	}
	for _, h := range hooks {
		if want := map[string]string{"nightly": "tests"}[h.Name]; h.LastCheckFailed != want {
			t.Errorf("list --json: %s last_check_failed %q, want %q", h.Name, h.LastCheckFailed, want)
		}
	}
	if out := e.must(0, "watch", "--since", "0", "--hook", "nightly", "--type", "hook.run.completed", "-n", "1").stdout; !strings.Contains(out, "completed nightly run "+id) ||
		!strings.Contains(out, ", check failed: tests") {
		t.Errorf("hookd watch does not show the check that failed:\n%s", out)
	}
	waitFor(t, "the check_failed notification", func() bool { return len(rc.got()) == 1 }, d.log.String)
	if m := rc.got()[0]; m["hook"] != "nightly" || m["outcome"] != engine.OutcomeCheckFailed || m["check_failed"] != "tests" ||
		!strings.Contains(m["headline"].(string), "check failed: tests") {
		t.Errorf("notification %v", m)
	}

	// check: names a step that is no short-circuit.
	r = e.must(3, "fire", "linted", "--wait")
	if run := e.getRun(runID(t, r)); run.Status != engine.StatusCompleted || run.CheckFailed != "lint" {
		t.Errorf("linted: %s, check_failed %q; want completed, lint", run.Status, run.CheckFailed)
	}
	// "Something changed" is no failure; a check that passed short-circuits.
	for _, h := range []string{"changed", "green"} {
		r = e.must(0, "fire", h, "--wait")
		if run := e.getRun(runID(t, r)); run.Status != engine.StatusCompleted || run.CheckFailed != "" {
			t.Errorf("%s: %s, check_failed %q; want completed without", h, run.Status, run.CheckFailed)
		}
	}

	var rep api.StatusReport
	if err := json.Unmarshal([]byte(e.must(0, "status", "--json").stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.CheckFailed["nightly"]["completed"] != 1 || rep.CheckFailed["linted"]["completed"] != 1 || rep.CheckFailed["changed"] != nil {
		t.Errorf("status --json check_failed: %v", rep.CheckFailed)
	}
	if out := e.must(0, "status").stdout; !strings.Contains(out, "CHECK FAILED") {
		t.Errorf("hookd status has no CHECK FAILED column:\n%s", out)
	}
	if n := len(rc.got()); n != 2 {
		t.Errorf("%d notifications, want 2 (nightly and linted; none for changed and green)", n)
	}

	// Without a daemon, from the store: the hook's last status says so.
	off := newEnv(t, "", checkHooks(model.BaseURL()))
	off.must(3, "fire", "nightly", "--wait")
	if out := off.must(0, "list").stdout; !strings.Contains(out, "completed, check failed: tests") {
		t.Errorf("hookd list without a daemon does not show the check that failed:\n%s", out)
	}
}
