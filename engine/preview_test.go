package engine_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
)

// countingLLM counts model calls; a preview must make none.
type countingLLM struct{ calls atomic.Int32 }

func (l *countingLLM) Complete(ctx context.Context, req *engine.LLMRequest) error {
	l.calls.Add(1)
	req.Run.Response = "answered"
	return nil
}

const previewSecret = "s3cr3t-token-value"

// previewHook gathers a secret and an exit code, tries to emit an event,
// and has a prompt; exitCode decides whether skip_llm_if_exit_zero holds.
func previewHook(name string, exitCode int, emitErr *error) *engine.Hook {
	h := newHook(name)
	h.SkipLLM = false
	h.Secrets = []string{"TOKEN"}
	h.Prompt = "Check {{step_0}} for {{event.who}} (exit {{steps.check.exit_code}})."
	withSteps(h,
		funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			return &engine.StepResult{Output: "token is " + previewSecret, ExitCode: &exitCode}, nil
		}),
		funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			_, err := env.Emit(ctx, "preview.tried", map[string]any{"x": 1})
			*emitErr = err
			return &engine.StepResult{Output: "emit attempted"}, nil
		}),
	)
	h.Steps[0].Name = "check"
	h.Steps[0].Skip.IfExitZero = true
	return h
}

// TestPreviewRecordsNothing previews hooks through a started engine on a
// real store: the steps run and the prompt renders as in a real run, the
// short-circuit that would apply is reported, secrets are redacted, and
// nothing is recorded, published or sent to the model.
func TestPreviewRecordsNothing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var emitFail, emitSkip error
		llm := &countingLLM{}
		failing := previewHook("failing", 1, &emitFail)
		passing := previewHook("passing", 0, &emitSkip)
		passing.Enabled = false // previews pass no gate
		h := newHarness(t, []*engine.Hook{failing, passing}, func(c *engine.Config) {
			c.LLM = llm
			c.Environ = []string{"TOKEN=" + previewSecret, "PATH=/usr/bin"}
		})
		defer h.stop()
		ctx := context.Background()

		run, err := h.eng.Preview(ctx, "failing", map[string]any{"who": "ops"})
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != engine.StatusCompleted || run.Reason != engine.PreviewReason || run.Error != "" {
			t.Errorf("failing: status %s reason %q error %q; want completed, %q", run.Status, run.Reason, run.Error, engine.PreviewReason)
		}
		if want := "Check token is [REDACTED:TOKEN] for ops (exit 1)."; run.Prompt != want {
			t.Errorf("prompt = %q, want %q", run.Prompt, want)
		}
		if len(run.Steps) != 2 || strings.Contains(run.Steps[0].Output, previewSecret) {
			t.Errorf("steps not run or not redacted: %+v", run.Steps)
		}
		if !errors.Is(emitFail, engine.ErrPreview) {
			t.Errorf("a step's emit during a preview: err = %v, want ErrPreview", emitFail)
		}
		if run.Trigger != "manual" || run.ID == "" || string(run.Event) != `{"who":"ops"}` {
			t.Errorf("run trigger %q id %q event %s", run.Trigger, run.ID, run.Event)
		}

		run, err = h.eng.Preview(ctx, "passing", map[string]any{"who": "dev"})
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != engine.StatusCompleted || run.Cause != engine.CauseShortCircuit || run.Reason != "short-circuit: step_0 (check): exit code 0" {
			t.Errorf("passing: status %s cause %s reason %q; want completed, short-circuited by step_0 (check)", run.Status, run.Cause, run.Reason)
		}
		if want := "Check token is [REDACTED:TOKEN] for dev (exit 0)."; run.Prompt != want {
			t.Errorf("a short-circuited preview still renders its prompt: got %q, want %q", run.Prompt, want)
		}

		if _, err := h.eng.Preview(ctx, "nope", nil); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("unknown hook: err = %v, want ErrNotFound", err)
		}

		h.settle()
		if n := llm.calls.Load(); n != 0 {
			t.Errorf("the model was called %d times", n)
		}
		for _, name := range []string{"failing", "passing"} {
			if runs := h.runs(name); len(runs) != 0 {
				t.Errorf("%s: %d runs recorded by previews", name, len(runs))
			}
		}
		h.logged()
		evs, err := h.db.ListEvents(ctx, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 0 || len(h.eventsOf("preview.tried")) != 0 || len(h.eventsOf(engine.EventRunStarted)) != 0 {
			t.Errorf("previews published events: %d stored", len(evs))
		}
		states, err := h.db.HookStates(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st, ok := states["failing"]; ok && !st.LastStart.IsZero() {
			t.Errorf("a preview recorded a last start: %+v", st)
		}

		// A real fire afterwards still works and is the only record.
		fired, err := h.fire("failing", engine.FireOptions{Event: map[string]any{"who": "ops"}})
		if err != nil {
			t.Fatal(err)
		}
		h.settle()
		if runs := h.runs("failing"); len(runs) != 1 || runs[0].ID != fired.ID || llm.calls.Load() != 1 {
			t.Errorf("after a real fire: %d runs, %d model calls", len(runs), llm.calls.Load())
		}
	})
}

// TestPreviewUnstarted previews on an engine that was never started, as
// `hookd render` does: the previous run's start comes from the store.
func TestPreviewUnstarted(t *testing.T) {
	t.Parallel()
	db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var emitErr error
	hk := previewHook("unstarted", 1, &emitErr)
	hk.Prompt = "Last run {{last_run_time}}; step says {{step_0}}"
	eng, err := engine.New(engine.Config{
		Store: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Manual: true,
		Environ: []string{"TOKEN=" + previewSecret},
	}, []*engine.Hook{hk})
	if err != nil {
		t.Fatal(err)
	}
	run, err := eng.Preview(context.Background(), "unstarted", nil)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != engine.StatusCompleted || run.Prompt != "Last run ; step says token is [REDACTED:TOKEN]" {
		t.Errorf("status %s prompt %q error %q", run.Status, run.Prompt, run.Error)
	}
	runs, err := db.ListRuns(context.Background(), engine.RunFilter{})
	if err != nil || len(runs) != 0 {
		t.Errorf("runs recorded: %d (err %v)", len(runs), err)
	}
	eng.Stop() // never started: returns at once
}

// TestPreviewRenderError: a prompt that does not render fails the preview
// as it would fail the run, naming the placeholder.
func TestPreviewRenderError(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var emitErr error
		hk := previewHook("broken", 1, &emitErr)
		hk.Prompt = "{{event.missing}}"
		h := newHarness(t, []*engine.Hook{hk})
		defer h.stop()
		run, err := h.eng.Preview(context.Background(), "broken", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != engine.StatusFailed || !strings.Contains(run.Error, "{{event.missing}}") {
			t.Errorf("status %s error %q; want failed naming {{event.missing}}", run.Status, run.Error)
		}
	})
}
