package engine_test

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/hookd/hookd/engine"
)

// TestCoalescedRunKeepsEveryTrace: triggers coalesced into a pending run
// (overlap: queue) leave their trace parents with it, each once and at
// most engine.MaxTraceLinks of them (the rest counted), stored with the
// pending run and on the finished run the tracing exporter gets.
func TestCoalescedRunKeepsEveryTrace(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		block := newBlock()
		hk := withSteps(newHook("q"), block)
		hk.Overlap = engine.OverlapQueue
		h := newHarness(t, []*engine.Hook{hk})
		defer h.stop()
		tp := func(i int) engine.TraceParent { return engine.TraceParent(fmt.Sprintf("00-%032x-%016x-01", i+1, i+1)) }
		fire := func(tp engine.TraceParent) *engine.Run {
			t.Helper()
			r, err := h.fire("q", engine.FireOptions{TraceParent: tp})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		fire(tp(0)) // runs, and blocks
		h.settle()
		p := fire(tp(1)) // waits: the pending run, continuing tp(1)
		fire("")         // no trace: nothing to link
		fire(tp(1))      // the pending run's own trace: nothing more
		const extra = 5
		for i := 2; i < 2+engine.MaxTraceLinks+extra; i++ {
			if r := fire(tp(i)); r.ID != p.ID {
				t.Fatalf("trigger %d started run %s, not merged into the pending %s", i, r.ID, p.ID)
			}
		}
		fire(tp(2)) // linked already
		want := engine.TraceLinks{Dropped: extra}
		for i := 2; i < 2+engine.MaxTraceLinks; i++ {
			want.Parents = append(want.Parents, tp(i))
		}
		stored := h.run(p.ID)
		if stored.Status != engine.StatusQueued || stored.TraceParent != tp(1) {
			t.Fatalf("the pending run as stored: %s, trace parent %q", stored.Status, stored.TraceParent)
		}
		if !slices.Equal(stored.TraceLinks.Parents, want.Parents) || stored.TraceLinks.Dropped != want.Dropped {
			t.Errorf("the pending run's stored trace links = %+v,\nwant %+v", stored.TraceLinks, want)
		}

		close(block.release)
		h.settle()
		done := h.run(p.ID)
		if done.Status != engine.StatusCompleted || !slices.Equal(done.TraceLinks.Parents, want.Parents) || done.TraceLinks.Dropped != want.Dropped {
			t.Errorf("the finished run: %s, trace links %+v", done.Status, done.TraceLinks)
		}
		var sent *engine.Run
		for _, ev := range h.eventsOf(engine.EventRunCompleted) {
			if ev.Outcome != nil && ev.Outcome.Run.ID == p.ID {
				sent = ev.Outcome.Run
			}
		}
		if sent == nil || !slices.Equal(sent.TraceLinks.Parents, want.Parents) || sent.TraceLinks.Dropped != want.Dropped {
			t.Errorf("the finished run's event (what the exporter gets) carries trace links %+v", sent)
		}
	})
}
