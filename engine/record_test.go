package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/hookd/hookd/engine"
)

// TestRecordBefore: record:before handlers see the final record before it
// is stored and drop fields of it; what the store keeps has them empty
// and a note naming the handler. A handler that fails closed drops every
// content field (it fails safe), and the outcome is kept.
func TestRecordBefore(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		step := funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			return &engine.StepResult{Output: "SECRET-OUTPUT"}, nil
		})
		h := withSteps(newHook("redacted"), step)
		h.SkipLLM, h.Prompt = false, "SECRET-PROMPT"
		failing := withSteps(newHook("failing"), step)
		failing.SkipLLM, failing.Prompt = false, "SECRET-PROMPT"
		hs := newHarness(t, []*engine.Hook{h, failing}, func(c *engine.Config) { c.LLM = promptLLM{} })
		defer hs.stop()
		var seen *engine.Run
		hs.eng.Lifecycle().On(engine.PointRecordBefore, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
			if p.Hook.Name == "failing" {
				return engine.Decision{}, errors.New("policy service down")
			}
			seen = p.Run
			return engine.Decision{Changes: map[string]any{engine.ChangeDropFields: []any{"prompt", "steps", "nonsense"}}}, nil
		}, engine.HandlerOptions{Label: "privacy", FailClosed: true})

		r := hs.mustFire("redacted")
		hs.settle()
		run := hs.run(r.ID)
		if seen == nil || seen.Prompt != "SECRET-PROMPT" || seen.Steps[0].Output != "SECRET-OUTPUT" {
			t.Fatalf("handler did not see the full record: %+v", seen)
		}
		if run.Status != engine.StatusCompleted || run.Prompt != "" || run.Steps[0].Output != "" || len(run.Steps) != 1 ||
			run.Response != "got: SECRET-PROMPT" {
			t.Errorf("stored: %s prompt %q step %q response %q", run.Status, run.Prompt, run.Steps[0].Output, run.Response)
		}
		if len(run.Notes) == 0 || run.Notes[len(run.Notes)-1] != "record:before: privacy dropped prompt, steps from the record" {
			t.Errorf("notes %q", run.Notes)
		}

		r = hs.mustFire("failing")
		hs.settle()
		run = hs.run(r.ID)
		if run.Status != engine.StatusCompleted || run.Prompt != "" || run.Response != "" || run.Steps[0].Output != "" || len(run.Event) != 0 {
			t.Errorf("fail_closed: %s prompt %q response %q step %q event %s", run.Status, run.Prompt, run.Response, run.Steps[0].Output, run.Event)
		}
		if n := run.Notes[len(run.Notes)-1]; !strings.HasPrefix(n, "record:before: privacy dropped event, steps, prompt, response, transcript, error from the record (handler failed (fail_closed): policy service down") {
			t.Errorf("note %q", n)
		}
	})
}

// TestNoteRunAfterItsEnd: a note given after a run ended (a notification
// dropped) is added to its stored record, after the notes it ended with.
func TestNoteRunAfterItsEnd(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hs := newHarness(t, []*engine.Hook{withSteps(newHook("noted"), funcStep(func(context.Context, *engine.StepEnv) (*engine.StepResult, error) {
			return &engine.StepResult{Output: "ok"}, nil
		}))})
		defer hs.stop()
		r := hs.mustFire("noted")
		if _, err := hs.eng.Wait(context.Background(), r.ID); err != nil {
			t.Fatal(err)
		}
		hs.eng.NoteRun("noted", r.ID, "notification dropped")
		hs.settle()
		if got := hs.run(r.ID).Notes; !slices.Equal(got, []string{"notification dropped"}) {
			t.Errorf("notes %q, want the one added after the end", got)
		}
	})
}
