package main

import (
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestCommandFailureFailsTheRun is the cron user's case through the real
// daemon: a steps-only hook whose command exits 12 ends failed, `hookd
// fire --wait` exits 1 naming the step and the exit code, hook.run.failed
// is published (another hook reacts to it) and the failure is notified.
// allow_failure opts out; a short-circuit completes and reads "model not
// needed".
func TestCommandFailureFailsTheRun(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	e := newEnv(t, `notify:
  - url: `+srv.URL+`
    on: [failed]
`, map[string]string{
		"backup.yaml": `steps:
  - name: backup
    type: shell
    command: echo copying; exit 12
  - type: shell
    command: touch after-backup
skip_llm: true
`,
		"lenient.yaml": `steps:
  - type: shell
    command: exit 12
    allow_failure: true
skip_llm: true
`,
		"tests.yaml": `steps:
  - name: tests
    type: shell
    command: echo all passed
    skip_llm_if_exit_zero: true
prompt: "never sent: {{step_0}}"
`,
		"alarm.yaml": `trigger:
  event: hook.run.failed
  where: {hook: backup}
steps:
  - type: shell
    command: |
      echo "backup failed - {{event.reason}}" > alarm.txt
skip_llm: true
`,
	})
	d := e.serve()

	r := e.must(1, "fire", "backup", "--wait")
	if !strings.Contains(r.stderr, "backup failed (step_failed)") || !strings.Contains(r.stderr, "step_0 (backup): exit code 12") {
		t.Errorf("want the failure, the step and its exit code on stderr:\n%s", r)
	}
	id := runID(t, r)
	run := e.getRun(id)
	if run.Status != engine.StatusFailed || run.Cause != engine.CauseStepFailed || run.Reason != "step_0 (backup): exit code 12" {
		t.Errorf("run %s: %s cause %q reason %q", id, run.Status, run.Cause, run.Reason)
	}
	if len(run.Steps) != 1 || e.exists("after-backup") {
		t.Errorf("the step after the failing one ran: %d results", len(run.Steps))
	}
	waitFor(t, "the alarm hook to react to hook.run.failed", func() bool { return e.exists("alarm.txt") }, d.log.String)
	waitFor(t, "the failure notification", func() bool { return len(rc.got()) == 1 }, d.log.String)
	if m := rc.got()[0]; m["hook"] != "backup" || m["outcome"] != "failed" || m["run_id"] != id ||
		!strings.Contains(m["summary"].(string), "exit code 12") {
		t.Errorf("notification %v", m)
	}

	r = e.must(0, "fire", "lenient", "--wait")
	if run := e.getRun(runID(t, r)); run.Status != engine.StatusCompleted {
		t.Errorf("allow_failure: %s %q", run.Status, run.Reason)
	}

	r = e.must(0, "fire", "tests", "--wait")
	if !strings.Contains(r.stderr, "tests completed, model not needed") {
		t.Errorf("want the short-circuit to read as done without a model:\n%s", r)
	}
	run = e.getRun(runID(t, r))
	if run.Status != engine.StatusCompleted || run.Cause != engine.CauseShortCircuit ||
		run.Reason != "short-circuit: step_0 (tests): exit code 0" || run.Prompt != "" {
		t.Errorf("short-circuit: %s cause %q reason %q prompt %q", run.Status, run.Cause, run.Reason, run.Prompt)
	}
	list := e.must(0, "runs", "tests").stdout
	if !strings.Contains(list, "completed, model not needed") {
		t.Errorf("hookd runs should show the short-circuit:\n%s", list)
	}
}

// TestStepErrorBeforeTheModel: a required step that cannot run (a file
// that is not there) fails the run naming the step, and the scripted
// model server receives no request; the same step not required is data
// for the model, and the run completes with one step error.
func TestStepErrorBeforeTheModel(t *testing.T) {
	model := llmtest.New(llmtest.Answer("noted"))
	defer model.Close()
	e := newEnv(t, `
llm:
  model: test-model
  base_url: `+model.BaseURL()+`
`, map[string]string{
		"strict.yaml": `steps:
  - name: notes
    type: read_file
    path: notes.txt
    required: true
prompt: "Summarise {{step_0}}"
`,
		"loose.yaml": `steps:
  - name: notes
    type: read_file
    path: notes.txt
prompt: "Summarise {{step_0}}"
`,
	})
	e.serve()

	r := e.must(1, "fire", "strict", "--wait")
	run := e.getRun(runID(t, r))
	if run.Status != engine.StatusFailed || run.Cause != engine.CauseStepFailed ||
		!strings.HasPrefix(run.Reason, "step_0 (notes): ") || !strings.Contains(run.Reason, "notes.txt") {
		t.Errorf("strict: %s cause %q reason %q", run.Status, run.Cause, run.Reason)
	}
	if n := model.Served(); n != 0 {
		t.Errorf("the model server got %d requests after a required step failed; want none", n)
	}

	r = e.must(0, "fire", "loose", "--wait")
	if !strings.Contains(r.stderr, "loose completed, 1 step error") {
		t.Errorf("want the step error counted on stderr:\n%s", r)
	}
	run = e.getRun(runID(t, r))
	if run.Status != engine.StatusCompleted || run.StepErrors() != 1 || run.Response != "noted" || model.Served() != 1 {
		t.Errorf("loose: %s, %d step errors, response %q, %d model requests", run.Status, run.StepErrors(), run.Response, model.Served())
	}
	if out := e.must(0, "run", run.ID).stdout; !strings.Contains(out, "completed, 1 step error") {
		t.Errorf("hookd run should count the step error:\n%s", out)
	}
}

// TestRunsEmptyAndUnknown: a hook with no runs lists as [] (CLI and API),
// never null; a name that is no hook and has no history is an error that
// names the hooks.
func TestRunsEmptyAndUnknown(t *testing.T) {
	e := newEnv(t, "", map[string]string{"quiet.yaml": "steps:\n  - type: shell\n    command: \"true\"\nskip_llm: true\n"})
	e.serve()
	if r := e.must(0, "runs", "quiet", "--json"); strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("runs of a hook with none: %q, want []", r.stdout)
	}
	r := e.must(1, "runs", "quite")
	if !strings.Contains(r.stderr, `no hook named "quite"; did you mean quiet?`) {
		t.Errorf("want the typo named with the hook meant:\n%s", r)
	}
	r = e.must(1, "runs", "zzzzzz")
	if !strings.Contains(r.stderr, `no hook named "zzzzzz" (hooks: quiet)`) {
		t.Errorf("want a name close to none named with the known hooks:\n%s", r)
	}
	code, body := e.socketClient().call("GET", "/v1/runs?hook=quiet", nil)
	if code != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("GET /v1/runs with nothing to list: %d %s", code, body)
	}
}

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// varying matches the values of a run record that differ from run to
// run: ids, times, durations, the model server's address, the
// fingerprint (of step errors that name the temporary workdir) and the
// containment this machine gives.
var varying = regexp.MustCompile(`("(?:id|run_id|queued_at|started_at|finished_at|started|slot|base_url|fingerprint|containment)": )"[^"]*"|` +
	`("(?:duration_ns|duration_ms|latency_ns)": )[0-9]+|(- Time: )[0-9TZ:.+-]+`)

// TestRunJSONShape pins the JSON of `hookd run --json` for a run that
// failed on a command, one that short-circuited, and one whose model
// stage ran after a step error, called a tool and was cut by its output
// limit: the fields and the words of the outcome (golden files in
// testdata/).
func TestRunJSONShape(t *testing.T) {
	model := llmtest.New(
		llmtest.Calls(llmtest.ToolCall{ID: "c1", Name: "read_file", Args: `{"path":"README.md"}`}),
		llmtest.Reply{Content: "The readme says", FinishReason: "length"},
	)
	defer model.Close()
	e := newEnv(t, "llm:\n  model: test-model\n  base_url: "+model.BaseURL()+"\n", map[string]string{
		"backup.yaml": "steps:\n  - name: backup\n    type: shell\n    command: exit 12\nskip_llm: true\n",
		"tests.yaml": "steps:\n  - name: tests\n    type: shell\n    command: echo ok\n    skip_llm_if_exit_zero: true\n" +
			"prompt: \"never sent: {{step_0}}\"\n",
		"triage.yaml": "steps:\n  - name: notes\n    type: read_file\n    path: notes.txt\n" +
			"prompt: \"Notes: {{step_0}}. Read README.md.\"\ntools: [read_file]\n",
	})
	e.write("README.md", "hello\n")
	for _, c := range []struct{ hook, golden string }{{"backup", "run-failed.json"}, {"tests", "run-short-circuit.json"},
		{"triage", "run-model.json"}} {
		r := e.run("fire", c.hook, "--wait")
		out := e.must(0, "run", runID(t, r), "--json").stdout
		out = varying.ReplaceAllStringFunc(out, func(m string) string {
			k, _, _ := strings.Cut(m, ": ")
			if k == "- Time" {
				return "- Time: X"
			}
			return k + `: "X"`
		})
		out = strings.ReplaceAll(out, e.dir, "DIR")
		path := filepath.Join("testdata", c.golden)
		if *updateGolden {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./cmd/hookd -run TestRunJSONShape -update writes it)", err)
		}
		if out != string(want) {
			t.Errorf("hookd run --json of %s differs from %s (if the change is meant, rewrite it: "+
				"go test ./cmd/hookd -run TestRunJSONShape -update):\n%s", c.hook, path, out)
		}
	}
}
