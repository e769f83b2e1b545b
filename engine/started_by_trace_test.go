package engine_test

import (
	"context"
	"encoding/hex"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/hookd/hookd/engine"
)

// TestRunStartedByRunLinksToIt: a run's steps get its span as
// $TRACEPARENT (what `hookd emit` in a step passes on); a run another
// run started — by an event
// its step published (as the emit_event tool does), by the hook.run.*
// event of its end (a chain), by a fire that names it (the fire_hook
// tool) — links to that run's span (TraceLinks.StartedBy, Run.Span),
// stored with the run and with the event, so a node that dispatches the
// event later links too. A caller's explicit traceparent wins over it.
func TestRunStartedByRunLinksToIt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var stepEnv []string
		parent := withSteps(newHook("parent"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			stepEnv = env.Env
			_, err := env.Emit(ctx, "child.go", map[string]any{"x": 1})
			return &engine.StepResult{}, err
		}))
		emitted := newHook("emitted")
		emitted.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "child.go"}
		chained := newHook("chained")
		chained.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "hook.run.completed", Where: map[string]any{"hook": "parent"}}
		fired := newHook("fired")
		h := newHarness(t, []*engine.Hook{parent, emitted, chained, fired})
		defer h.stop()

		p := h.mustFire("parent")
		h.settle()
		h.logged()
		span := h.run(p.ID).Span()
		if tid, sid := span.IDs(); len(tid) != 32 || len(sid) != 16 || span != engine.RunSpan(p.ID, "") {
			t.Fatalf("the parent run's span = %q", span)
		}
		if n := slices.Index(stepEnv, "TRACEPARENT="+string(span)); n < 0 {
			t.Errorf("the parent's step's environment %q has no TRACEPARENT=%s", stepEnv, span)
		}
		for _, name := range []string{"emitted", "chained"} {
			runs := h.runs(name)
			if len(runs) != 1 {
				t.Fatalf("%s: %d runs, want 1", name, len(runs))
			}
			if r := runs[0]; r.TraceLinks.StartedBy != span || r.TraceParent != "" {
				t.Errorf("%s's run: started by %q, trace parent %q; want a link to the parent's span %q and no parent",
					name, r.TraceLinks.StartedBy, r.TraceParent, span)
			}
		}
		evs, err := h.db.ListEvents(context.Background(), "child.go", 10)
		if err != nil || len(evs) != 1 || evs[0].TraceLink != span || evs[0].TraceParent != "" {
			t.Fatalf("the stored child.go event: %+v, %v; want its trace link %q", evs, err, span)
		}

		// A fire that names the run that fired it (fire_hook), and one
		// whose caller gives its own trace too: the caller's wins.
		const caller = engine.TraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		r, err := h.fire("fired", engine.FireOptions{TraceLink: span})
		if err != nil {
			t.Fatal(err)
		}
		h.settle()
		if got := h.run(r.ID); got.TraceLinks.StartedBy != span || got.TraceParent != "" {
			t.Errorf("the fired run: started by %q, trace parent %q", got.TraceLinks.StartedBy, got.TraceParent)
		}
		r, err = h.fire("fired", engine.FireOptions{TraceLink: span, TraceParent: caller})
		if err != nil {
			t.Fatal(err)
		}
		h.settle()
		if got := h.run(r.ID); got.TraceLinks.StartedBy != "" || got.TraceParent != caller {
			t.Errorf("a fire with the caller's trace: started by %q, trace parent %q; want only the caller's", got.TraceLinks.StartedBy, got.TraceParent)
		}
	})
}

// TestRunSpan: a run's span is the span id derived from its id, in the
// caller's trace (with its flags) when it continues one, else in the
// trace derived from its id.
func TestRunSpan(t *testing.T) {
	t.Parallel()
	tid, sid := engine.RunTraceIDs("r1")
	own := engine.RunSpan("r1", "")
	if want := engine.TraceParent("00-" + hex.EncodeToString(tid[:]) + "-" + hex.EncodeToString(sid[:]) + "-01"); own != want {
		t.Errorf("RunSpan(r1) = %q, want %q", own, want)
	}
	if _, err := engine.ParseTraceParent(string(own)); err != nil {
		t.Errorf("RunSpan(r1) = %q: %v", own, err)
	}
	got := engine.RunSpan("r1", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
	if want := engine.TraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-" + hex.EncodeToString(sid[:]) + "-00"); got != want {
		t.Errorf("RunSpan under a caller = %q, want %q", got, want)
	}
}
