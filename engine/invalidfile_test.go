package engine_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestBrokenFileSkipsEachTrigger: a hook whose file no longer loads keeps
// the schedule of its previous version, but does not run it: each slot is
// recorded skipped: invalid_file with the file's error, announced as any
// skip (hook.run.skipped, which notifications and the metrics hear), and a
// fire of it is refused the same way. A run of the previous version in
// flight when the file broke finishes, and the listing says it runs. Once
// the file loads again, its slots run.
func TestBrokenFileSkipsEachTrigger(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		blk := newBlock()
		kept := version(withSteps(every(newHook("kept"), time.Minute), blk), "v1")
		kept.Source.File = "hooks.d/kept.yaml"
		h := newHarness(t, []*engine.Hook{kept})
		defer h.stop()

		h.advance(time.Minute) // the first slot: a run of v1, in flight
		if runs := h.runs("kept"); len(runs) != 1 || runs[0].Status != engine.StatusRunning {
			t.Fatalf("first slot: %+v", runs)
		}
		fileErr := "hooks.d/kept.yaml:3: stpes: unknown field; did you mean steps?"
		if err := h.eng.SetBroken(ctx, []engine.BrokenFile{{File: "hooks.d/kept.yaml", Hook: "kept", Errors: []string{fileErr}}}); err != nil {
			t.Fatal(err)
		}
		st, _ := h.status("kept")
		if want := "running the previous version (v1); file error: " + fileErr; st.Broken == nil || st.Broken.String() != want {
			t.Errorf("kept, its v1 run in flight, says %v\nwant %q", st.Broken, want)
		}
		close(blk.release)
		h.advance(time.Second)
		st, _ = h.status("kept")
		if want := "previous version (v1) kept on schedule, each trigger skipped (invalid_file); file error: " + fileErr; st.Broken == nil || st.Broken.String() != want {
			t.Errorf("kept, nothing in flight, says %v\nwant %q", st.Broken, want)
		}
		if st.NextDue.IsZero() {
			t.Errorf("kept lost its schedule: %+v", st)
		}

		h.advance(2 * time.Minute) // two slots while the file is broken
		runs := h.runs("kept")
		if len(runs) != 3 {
			t.Fatalf("want the first run and two skipped slots, got %v", statuses(runs))
		}
		for _, r := range runs[1:] {
			if r.Status != engine.StatusSkipped || r.Gate != engine.GateInvalidFile || r.Slot.IsZero() ||
				!strings.HasPrefix(r.Reason, "invalid_file: "+fileErr) {
				t.Errorf("slot while the file is broken: %s %s %q slot %v", r.Status, r.Gate, r.Reason, r.Slot)
			}
		}
		h.logged()
		skips := 0
		for _, ev := range h.eventsOf(engine.EventRunSkipped) {
			if ev.Data["gate"] == engine.GateInvalidFile {
				skips++
			}
		}
		if skips != 2 {
			t.Errorf("%d hook.run.skipped events with gate invalid_file, want 2", skips)
		}
		if _, err := h.fire("kept", engine.FireOptions{Force: true}); gateOf(err) != engine.GateInvalidFile ||
			!strings.Contains(err.Error(), fileErr) {
			t.Errorf("fire of a hook whose file is broken: %v", err)
		}

		// Fixed: the next slot runs.
		if err := h.eng.SetBroken(ctx, nil); err != nil {
			t.Fatal(err)
		}
		h.advance(time.Minute)
		runs = h.runs("kept")
		if last := runs[len(runs)-1]; last.Status != engine.StatusCompleted {
			t.Errorf("after the fix the slot's run is %s %q", last.Status, last.Reason)
		}
	})
}
