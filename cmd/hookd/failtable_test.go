package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestFailureTable runs every row of docs/hooks.md's failure table through
// the daemon with real steps: a shell command that exits 12 (a real
// subprocess), an http POST that a loopback server answers 503, and a
// read_file of a file that is not there (a step error), in a hook without and with a model stage (the scripted model
// server), plain, required and allow_failure. Each row's status, cause,
// reason, `hookd fire --wait` exit code and headline, whether the later
// step ran and whether the model was called are checked.
func TestFailureTable(t *testing.T) {
	model := llmtest.NewFunc(func(llmtest.Request) llmtest.Reply { return llmtest.Answer("noted") })
	defer model.Close()
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "try later", http.StatusServiceUnavailable)
	}))
	defer busy.Close()
	steps := map[string]string{
		"exit":   "type: shell\n    command: echo partial; exit 12",
		"status": "type: http\n    method: POST\n    url: " + busy.URL + "/hook\n    allow_private: true",
		"error":  "type: read_file\n    path: notes.txt",
	}
	type row struct {
		hook             string
		model            bool
		step, flag       string // flag: "", required, allow_failure
		status           engine.Status
		reason, headline string // reason: a prefix
		code             int
	}
	var rows []row
	add := func(model bool, step, flag string, status engine.Status, reason, headline string) {
		name := fmt.Sprintf("%s-%s", map[bool]string{false: "cron", true: "model"}[model], step)
		if flag != "" {
			name += "-" + strings.ReplaceAll(flag, "_", "-")
		}
		code := 0
		if status == engine.StatusFailed {
			code = 1
		}
		rows = append(rows, row{name, model, step, flag, status, reason, headline, code})
	}
	// hook with no model stage
	add(false, "exit", "", engine.StatusFailed, "step_0 (s): exit code 12", "failed (step_failed)")
	add(false, "exit", "required", engine.StatusFailed, "step_0 (s): exit code 12", "failed (step_failed)")
	add(false, "exit", "allow_failure", engine.StatusCompleted, "", "completed")
	add(false, "status", "", engine.StatusFailed, "step_0 (s): status 503", "failed (step_failed)")
	add(false, "status", "required", engine.StatusFailed, "step_0 (s): status 503", "failed (step_failed)")
	add(false, "status", "allow_failure", engine.StatusCompleted, "", "completed")
	add(false, "error", "", engine.StatusFailed, "step_0 (s): ", "failed (step_failed)")
	add(false, "error", "required", engine.StatusFailed, "step_0 (s): ", "failed (step_failed)")
	add(false, "error", "allow_failure", engine.StatusCompleted, "", "completed, 1 step error")
	// hook with a model stage
	add(true, "exit", "", engine.StatusCompleted, "", "completed")
	add(true, "exit", "required", engine.StatusFailed, "step_0 (s): exit code 12", "failed (step_failed)")
	add(true, "exit", "allow_failure", engine.StatusCompleted, "", "completed")
	add(true, "status", "", engine.StatusCompleted, "", "completed")
	add(true, "status", "required", engine.StatusFailed, "step_0 (s): status 503", "failed (step_failed)")
	add(true, "status", "allow_failure", engine.StatusCompleted, "", "completed")
	add(true, "error", "", engine.StatusCompleted, "", "completed, 1 step error")
	add(true, "error", "required", engine.StatusFailed, "step_0 (s): ", "failed (step_failed)")
	add(true, "error", "allow_failure", engine.StatusCompleted, "", "completed, 1 step error")

	hooks := map[string]string{}
	for _, r := range rows {
		src := "steps:\n  - name: s\n    " + steps[r.step] + "\n"
		if r.flag != "" {
			src += "    " + r.flag + ": true\n"
		}
		src += "  - type: shell\n    command: touch ran-" + r.hook + "\n"
		if r.model {
			src += "prompt: \"look at {{step_0}}\"\n"
		} else {
			src += "skip_llm: true\n"
		}
		hooks[r.hook+".yaml"] = src
	}
	e := newEnv(t, "llm:\n  model: test-model\n  base_url: "+model.BaseURL()+"\n", hooks)
	e.serve()

	for _, r := range rows {
		t.Run(r.hook, func(t *testing.T) {
			served := model.Served()
			out := e.must(r.code, "fire", r.hook, "--wait")
			if !strings.Contains(out.stderr, r.hook+" "+r.headline) {
				t.Errorf("want %q on stderr:\n%s", r.hook+" "+r.headline, out)
			}
			run := e.getRun(runID(t, out))
			for _, l := range strings.Split(out.stderr, "\n") {
				if strings.HasPrefix(l, r.hook+" "+r.headline) && run.Reason != "" && strings.Count(l, run.Reason) != 1 {
					t.Errorf("the outcome line does not give the reason once: %q", l)
				}
			}
			if run.Reason != "" {
				if shown := e.must(0, "run", run.ID, "--brief").stdout; strings.Count(shown, run.Reason) != 1 {
					t.Errorf("hookd run does not give the reason once:\n%s", shown)
				}
			}
			if run.Status != r.status || !strings.HasPrefix(run.Reason, r.reason) || (r.reason == "" && run.Reason != "") {
				t.Errorf("run: %s %q, want %s %q", run.Status, run.Reason, r.status, r.reason)
			}
			failed := r.status == engine.StatusFailed
			if failed != (run.Cause == engine.CauseStepFailed) {
				t.Errorf("cause %q", run.Cause)
			}
			if r.step == "exit" && (len(run.Steps) == 0 || run.Steps[0].ExitCode == nil || *run.Steps[0].ExitCode != 12) {
				t.Errorf("the command's exit code is not recorded as 12: %+v", run.Steps)
			}
			if r.step == "status" && (len(run.Steps) == 0 || run.Steps[0].StatusCode != 503) {
				t.Errorf("the answer's status is not recorded as 503: %+v", run.Steps)
			}
			if r.step == "error" && (len(run.Steps) == 0 || !strings.Contains(run.Steps[0].Error, "notes.txt")) {
				t.Errorf("the step error is not recorded: %+v", run.Steps)
			}
			if ran := e.exists("ran-" + r.hook); ran == failed {
				t.Errorf("the step after step_0 ran: %v; a failing step stops the run, any other does not", ran)
			}
			called := model.Served() > served
			if want := r.model && !failed; called != want || (want && run.Response != "noted") {
				t.Errorf("model called: %v (response %q), want %v", called, run.Response, want)
			}
		})
	}
}
