package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

// exitStep is a command-like step that exits with code after taking d.
func exitStep(code int, d time.Duration) funcStep {
	return func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		time.Sleep(d)
		return &engine.StepResult{Output: "out", ExitCode: &code}, nil
	}
}

// progressOf lists the progress events of run, in the order subscribers
// saw them, as "type index".
func (h *harness) progressOf(runID string) []*engine.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*engine.Event
	for _, ev := range h.events {
		if id, _ := ev.Data["run_id"].(string); id == runID && engine.ProgressEventType(ev.Type) {
			out = append(out, ev)
		}
	}
	return out
}

func TestStepProgressEvents(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		block := newBlock()
		hk := withSteps(newHook("work"), exitStep(0, 2*time.Second), block, exitStep(3, time.Second))
		hk.Steps[0].Name = "gather"
		hk.Steps[1].Type = "wait"
		h := newHarness(t, []*engine.Hook{hk})
		defer h.stop()

		run := h.mustFire("work")
		h.advance(10 * time.Second)
		// Mid-run: step 0 finished, step 1 is running.
		p, ok, err := h.eng.Progress(context.Background(), run.ID)
		if err != nil || !ok {
			t.Fatalf("progress of a running run: %v %v", ok, err)
		}
		if len(p.Steps) != 1 || p.Steps[0].Name != "gather" || p.Steps[0].Outcome != engine.StepOK || p.Steps[0].Duration != 2*time.Second {
			t.Errorf("finished steps mid-run = %+v", p.Steps)
		}
		if p.Current == nil || p.Current.Index != 1 || p.Current.Kind != "wait" || p.Current.Outcome != "" {
			t.Errorf("current step mid-run = %+v", p.Current)
		}
		if p.Hook != "work" || p.RunID != run.ID || p.StartedAt.IsZero() {
			t.Errorf("progress = %+v", p)
		}
		all, err := h.eng.InFlight(context.Background())
		if err != nil || len(all) != 1 || all[0].RunID != run.ID || all[0].Current == nil {
			t.Errorf("in flight = %+v, %v", all, err)
		}

		close(block.release)
		h.advance(10 * time.Second)
		if r := h.run(run.ID); r.Status != engine.StatusFailed {
			t.Fatalf("run = %s %s", r.Status, r.Reason)
		}
		var got []string
		for _, ev := range h.progressOf(run.ID) {
			got = append(got, fmt.Sprintf("%s %v", ev.Type, ev.Data["index"]))
			if ev.Data["hook"] != "work" || ev.Source != "engine" || ev.Step == nil {
				t.Errorf("%s: data %v source %q typed %v", ev.Type, ev.Data, ev.Source, ev.Step)
			}
		}
		want := []string{
			"hook.step.started 0", "hook.step.finished 0", "hook.step.started 1", "hook.step.finished 1",
			"hook.step.started 2", "hook.step.finished 2",
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("progress events:\n got %v\nwant %v", got, want)
		}
		evs := h.progressOf(run.ID)
		first, last := evs[1].Data, evs[5].Data
		if first["name"] != "gather" || first["kind"] != "test" || first["outcome"] != "ok" || first["duration_ms"] != int64(2000) || first["fails_run"] != nil {
			t.Errorf("step 0 finished: %v", first)
		}
		if last["outcome"] != "exit" || last["exit_code"] != 3 || last["fails_run"] != true || last["duration_ms"] != int64(1000) {
			t.Errorf("step 2 finished: %v", last)
		}
		// The progress events come between the run's start and its end.
		var order []string
		h.mu.Lock()
		for _, ev := range h.events {
			if ev.Type == engine.EventRunStarted || ev.Type == engine.EventRunFailed || ev.Type == engine.EventStepFinished {
				order = append(order, ev.Type)
			}
		}
		h.mu.Unlock()
		if fmt.Sprint(order) != "[hook.run.started hook.step.finished hook.step.finished hook.step.finished hook.run.failed]" {
			t.Errorf("event order = %v", order)
		}
		if _, ok, _ := h.eng.Progress(context.Background(), run.ID); ok {
			t.Error("a finished run still has progress")
		}
		// They are in the event log, which the live stream reads.
		h.logged()
		stored, err := h.db.ListEvents(context.Background(), engine.EventStepFinished, 10)
		if err != nil || len(stored) != 3 {
			t.Fatalf("stored step events: %d %v", len(stored), err)
		}
	})
}

// A step's error in its progress event is redacted like everywhere else.
func TestStepProgressRedacted(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hk := withSteps(newHook("leaky"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			return nil, errors.New("cannot reach https://user:hunter2-very-secret@example.com")
		}))
		hk.Secrets = []string{"PROGRESS_SECRET"}
		h := newHarness(t, []*engine.Hook{hk}, func(c *engine.Config) { c.Environ = []string{"PROGRESS_SECRET=hunter2-very-secret"} })
		defer h.stop()
		run := h.mustFire("leaky")
		h.settle()
		evs := h.progressOf(run.ID)
		if len(evs) != 2 {
			t.Fatalf("events: %v", evs)
		}
		msg, _ := evs[1].Data["error"].(string)
		if msg == "" || evs[1].Data["outcome"] != "failed" || evs[1].Step.Error != msg {
			t.Fatalf("finished: %v", evs[1].Data)
		}
		h.logged()
		stored, _ := h.db.ListEvents(context.Background(), engine.EventStepFinished, 10)
		if len(stored) != 1 {
			t.Fatalf("stored step events: %d, want 1", len(stored))
		}
		for _, s := range append([]string{msg, evs[1].Step.Error}, fmt.Sprint(stored[0].Data)) {
			if strings.Contains(s, "hunter2-very-secret") {
				t.Errorf("secret in a progress event: %s", s)
			}
		}
	})
}

// Progress events never start runs: a hook listening to hook.** for
// another hook's events is fired by that hook's run events only, not
// once (or once skipped) per step.
func TestProgressEventsAreNotDispatched(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		work := withSteps(newHook("work"), exitStep(0, time.Second), exitStep(0, time.Second), exitStep(0, time.Second))
		spy := withSteps(newHook("spy"), exitStep(0, time.Millisecond))
		spy.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "hook.**", Where: map[string]any{"hook": "work"}}
		spy.Overlap = engine.OverlapQueue
		h := newHarness(t, []*engine.Hook{work, spy})
		defer h.stop()
		run := h.mustFire("work")
		h.advance(time.Minute)
		if n := len(h.progressOf(run.ID)); n != 6 {
			t.Fatalf("work published %d progress events, want 6", n)
		}
		// hook.run.started and hook.run.completed: two records, each a run.
		recs := h.runs("spy")
		if len(recs) != 2 {
			t.Fatalf("spy has %d records, want 2 (its runs: %v)", len(recs), statuses(recs))
		}
		for _, r := range recs {
			if r.EventType != engine.EventRunStarted && r.EventType != engine.EventRunCompleted {
				t.Errorf("spy fired by %s", r.EventType)
			}
		}
		// Dispatching one by hand does nothing either.
		fired, err := h.eng.Dispatch(context.Background(), &engine.Event{Type: engine.EventStepFinished, Source: "engine",
			Data: map[string]any{"hook": "work", "run_id": run.ID}})
		if err != nil || len(fired) != 0 {
			t.Errorf("dispatching a progress event fired %v, %v", fired, err)
		}
	})
}

// A preview (hookd render) publishes no progress.
func TestPreviewPublishesNoProgress(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hk := withSteps(newHook("p"), exitStep(0, time.Millisecond))
		h := newHarness(t, []*engine.Hook{hk})
		defer h.stop()
		if _, err := h.eng.Preview(context.Background(), "p", nil); err != nil {
			t.Fatal(err)
		}
		h.settle()
		if evs := h.eventsOf(engine.EventStepStarted); len(evs) != 0 {
			t.Errorf("a preview published %d step events", len(evs))
		}
	})
}
