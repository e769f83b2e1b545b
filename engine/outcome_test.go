package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

// countLLM counts the model stages it is asked for and answers "done".
type countLLM struct{ calls atomic.Int32 }

func (l *countLLM) Complete(ctx context.Context, req *engine.LLMRequest) error {
	l.calls.Add(1)
	req.Run.Response = "done"
	return nil
}

// TestStepFailureSemantics checks each row of the failure table: what a
// command's exit code, an HTTP status and a step error make of a run, with and without a
// model stage, required and allow_failure.
func TestStepFailureSemantics(t *testing.T) {
	t.Parallel()
	exit := func(code int) engine.Step {
		return funcStep(func(context.Context, *engine.StepEnv) (*engine.StepResult, error) {
			return &engine.StepResult{Output: "out", ExitCode: &code}, nil
		})
	}
	status := func(code int) engine.Step {
		return funcStep(func(context.Context, *engine.StepEnv) (*engine.StepResult, error) {
			return &engine.StepResult{Output: "busy", StatusCode: code}, nil
		})
	}
	broken := funcStep(func(context.Context, *engine.StepEnv) (*engine.StepResult, error) {
		return &engine.StepResult{}, errors.New("read_file: open notes.txt: no such file or directory")
	})
	tests := []struct {
		name      string
		model     bool // the hook has a model stage
		step      engine.Step
		required  bool
		allow     bool
		status    engine.Status
		cause     engine.Cause
		reason    string
		modelCall bool
		steps     int // results recorded (a failing step stops the rest)
	}{
		{"cron-exit-12", false, exit(12), false, false, engine.StatusFailed, engine.CauseStepFailed, "step_0 (cmd): exit code 12", false, 1},
		{"cron-exit-0", false, exit(0), false, false, engine.StatusCompleted, "", "", false, 2},
		{"cron-allowed", false, exit(12), false, true, engine.StatusCompleted, "", "", false, 2},
		{"cron-error", false, broken, false, false, engine.StatusFailed, engine.CauseStepFailed,
			"step_0 (cmd): read_file: open notes.txt: no such file or directory", false, 1},
		{"cron-error-allowed", false, broken, false, true, engine.StatusCompleted, "", "", false, 2},
		{"cron-status-503", false, status(503), false, false, engine.StatusFailed, engine.CauseStepFailed, "step_0 (cmd): status 503", false, 1},
		{"cron-status-404", false, status(404), false, false, engine.StatusFailed, engine.CauseStepFailed, "step_0 (cmd): status 404", false, 1},
		{"cron-status-302", false, status(302), false, false, engine.StatusCompleted, "", "", false, 2},
		{"cron-status-503-allowed", false, status(503), false, true, engine.StatusCompleted, "", "", false, 2},
		{"model-status-503", true, status(503), false, false, engine.StatusCompleted, "", "", true, 2},
		{"model-status-503-required", true, status(503), true, false, engine.StatusFailed, engine.CauseStepFailed, "step_0 (cmd): status 503", false, 1},
		{"model-exit-12", true, exit(12), false, false, engine.StatusCompleted, "", "", true, 2},
		{"model-exit-12-required", true, exit(12), true, false, engine.StatusFailed, engine.CauseStepFailed, "step_0 (cmd): exit code 12", false, 1},
		{"model-error", true, broken, false, false, engine.StatusCompleted, "", "", true, 2},
		{"model-error-required", true, broken, true, false, engine.StatusFailed, engine.CauseStepFailed,
			"step_0 (cmd): read_file: open notes.txt: no such file or directory", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := withSteps(newHook("h"), tt.step, exit(0))
				h.Steps[0].Name, h.Steps[0].Required, h.Steps[0].AllowFailure = "cmd", tt.required, tt.allow
				if tt.model {
					h.SkipLLM, h.Prompt = false, "look at {{step_0}}"
				}
				llm := &countLLM{}
				hs := newHarness(t, []*engine.Hook{h}, func(c *engine.Config) { c.LLM = llm })
				defer hs.stop()
				r := hs.mustFire("h")
				if _, err := hs.eng.Wait(context.Background(), r.ID); err != nil {
					t.Fatal(err)
				}
				hs.settle()
				got := hs.run(r.ID)
				if got.Status != tt.status || got.Cause != tt.cause || got.Reason != tt.reason || len(got.Steps) != tt.steps {
					t.Errorf("run: %s cause %q reason %q steps %d; want %s %q %q %d",
						got.Status, got.Cause, got.Reason, len(got.Steps), tt.status, tt.cause, tt.reason, tt.steps)
				}
				if called := llm.calls.Load() > 0; called != tt.modelCall {
					t.Errorf("model called: %v, want %v", called, tt.modelCall)
				}
				final := engine.EventRunCompleted
				if tt.status == engine.StatusFailed {
					final = engine.EventRunFailed
				}
				evs := hs.eventsOf(final)
				if len(evs) != 1 || evs[0].Data["run_id"] != r.ID {
					t.Fatalf("%s events: %d, want 1 for run %s", final, len(evs), r.ID)
				}
				if c, _ := evs[0].Data["cause"].(string); engine.Cause(c) != tt.cause {
					t.Errorf("%s event cause %q, want %q", final, c, tt.cause)
				}
			})
		})
	}
}

// TestStepTimingOnTheEngineClock: a step's start and duration are read on
// the engine's clock, whatever the step says of them; the duration on its
// monotonic reading, so a step of the wall clock back by an hour while
// the step runs for a second leaves it a second (not minus an hour).
func TestStepTimingOnTheEngineClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var hs *harness
		step := funcStep(func(context.Context, *engine.StepEnv) (*engine.StepResult, error) {
			time.Sleep(time.Second)
			hs.clock.Jump(-time.Hour)
			return &engine.StepResult{Output: "x", Started: time.Unix(0, 0), Duration: time.Nanosecond}, nil
		})
		hs = newHarness(t, []*engine.Hook{withSteps(newHook("timed"), step)})
		defer hs.stop()
		r := hs.mustFire("timed")
		if _, err := hs.eng.Wait(context.Background(), r.ID); err != nil {
			t.Fatal(err)
		}
		got := hs.run(r.ID)
		if s := got.Steps[0]; s.Started.Before(got.StartedAt) || s.Duration != time.Second {
			t.Errorf("step started %v (run %v), took %v; want its start after the run's and 1s on the engine's monotonic clock", s.Started, got.StartedAt, s.Duration)
		}
	})
}

// chainLLM fires, through the run's tools, the hook its prompt names, and
// reports what the fire said, by the firing hook.
type chainLLM struct{ errs chan fired }

type fired struct {
	by  string
	err error
}

func (l *chainLLM) Complete(ctx context.Context, req *engine.LLMRequest) error {
	_, err := req.Env.Fire(ctx, req.Hook.Prompt, nil)
	l.errs <- fired{req.Hook.Name, err}
	req.Run.Response = "fired"
	return nil
}

// TestToolFireTooDeepIsRecorded: a hook chain through the fire tool is
// cut by the event_depth gate like an event chain: refused with a
// GateError, and recorded as a skipped run that names the gate.
func TestToolFireTooDeepIsRecorded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		mk := func(name, next string) *engine.Hook {
			h := newHook(name)
			h.SkipLLM, h.Prompt, h.AcceptFromTools = false, next, true
			return h
		}
		llm := &chainLLM{errs: make(chan fired, 4)}
		c := newHook("c")
		c.AcceptFromTools = true
		hs := newHarness(t, []*engine.Hook{mk("a", "b"), mk("b", "c"), c}, func(cfg *engine.Config) {
			cfg.LLM, cfg.MaxEventDepth = llm, 2
		})
		defer hs.stop()
		hs.mustFire("a")
		got := map[string]error{}
		for range 2 {
			f := <-llm.errs
			got[f.by] = f.err
		}
		if err := got["a"]; err != nil {
			t.Fatalf("a fires b at depth 1: %v", err)
		}
		if g, ok := errors.AsType[*engine.GateError](got["b"]); !ok || g.Gate != engine.GateEventDepth {
			t.Fatalf("b fires c at depth 2: %v, want the event_depth gate", got["b"])
		}
		hs.settle()
		runs := hs.runs("c")
		if len(runs) != 1 || runs[0].Status != engine.StatusSkipped || runs[0].Gate != engine.GateEventDepth ||
			runs[0].Depth != 2 || runs[0].Trigger != engine.ToolOrigin("b") {
			t.Errorf("c's records: %+v", runs)
		}
	})
}

// TestRunWhy: a run's reason and error on one line say a failed step's
// error once (it is both), and an error that says more after the reason.
func TestRunWhy(t *testing.T) {
	t.Parallel()
	step := &engine.Run{Status: engine.StatusFailed, Reason: "step_0 (shell): exit code 1", Error: "step_0 (shell): exit code 1"}
	if got := step.Why(); got != "step_0 (shell): exit code 1" {
		t.Errorf("a failed step's why: %q", got)
	}
	model := &engine.Run{Status: engine.StatusFailed, Reason: "model_error", Error: "model call 1: HTTP 401: invalid api key"}
	if got := model.Why(); got != "model_error model call 1: HTTP 401: invalid api key" || model.ExtraError() != model.Error {
		t.Errorf("a model error's why: %q", got)
	}
}
