package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestMergedSlotNotRefiredAfterRestart is the repro of a slot fired twice:
// every: 10s, overlap: queue, runs lasting 22 s. The slot at +40 s is
// merged into the run pending since +30 s; hookd stops at +44 s with that
// run still queued. The restart must not treat +40 s as missed and fire it
// again as a catch-up: the pending run covers it.
func TestMergedSlotNotRefiredAfterRestart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var (
			mu      sync.Mutex
			covered = map[string]int{} // slot -> runs that executed for it
		)
		hk := every(withSteps(newHook("q"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			slot, _ := env.Scope.Event["slot"].(string)
			mu.Lock()
			covered[slot]++
			mu.Unlock()
			select {
			case <-time.After(22 * time.Second):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &engine.StepResult{Output: "done"}, nil
		})), 10*time.Second)
		hk.Overlap = engine.OverlapQueue // on_missed: latest, the default
		h := newHarness(t, []*engine.Hook{hk}, func(c *engine.Config) { c.Grace = time.Minute })

		// The first slot is 00:00:10 (t0). Runs: t0 [t0, t0+22); the one
		// pending since t0+10, merged with t0+20, [t0+22, t0+44); the one
		// pending since t0+30, merged with t0+40, still queued when the
		// stop at t0+43 has let the running one finish at t0+44.
		h.advance(10*time.Second + 43*time.Second)
		h.restart(0)
		defer h.stop()
		h.advance(25 * time.Second) // the queued run runs; t0+60 is due meanwhile

		t0 := time.Date(2000, 1, 1, 0, 0, 10, 0, time.UTC)
		mu.Lock()
		defer mu.Unlock()
		for slot, n := range covered {
			if n > 1 {
				t.Errorf("slot %s ran %d times (runs covering each slot: %v)", slot, n, covered)
			}
		}
		if covered[t0.Add(40*time.Second).Format(time.RFC3339)] != 1 {
			t.Errorf("slot t0+40 ran %d times, want once (merged into the queued run): %v",
				covered[t0.Add(40*time.Second).Format(time.RFC3339)], covered)
		}
		for _, r := range h.runs("q") {
			if r.Trigger == "catchup" && r.Status != engine.StatusSkipped {
				t.Errorf("catch-up run %s for slot %s: no slot was missed", r.ID, r.Slot.Format(time.RFC3339))
			}
		}
	})
}

// TestMissedSlotsCountedOnce restarts twice in a row after a downtime:
// the slots missed are recorded (with the latest of them) by the first
// start, so the second finds nothing new to call missed.
func TestMissedSlotsCountedOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hk := every(newHook("hourly"), time.Hour)
		hk.Trigger.OnMissed = engine.MissedSkip
		h := newHarness(t, []*engine.Hook{hk})
		h.advance(time.Hour + time.Minute) // 01:00 runs
		h.restart(4 * time.Hour)           // 02:00..05:00 missed
		h.settle()
		h.restart(time.Minute) // nothing passed since the last start
		defer h.stop()
		h.settle()
		var missed []string
		for _, r := range h.runs("hourly") {
			if r.Status == engine.StatusSkipped {
				missed = append(missed, r.Slot.Format("15:04")+" "+r.Reason)
			}
		}
		if len(missed) != 1 || missed[0] != "05:00 missed: 4 slot(s) passed while hookd was down, not fired (on_missed: skip)" {
			t.Errorf("missed records = %q, want one for the 4 slots, holding 05:00", missed)
		}
	})
}

// TestRanRunReasonIsHowItEnded: a run that waited (queued for a
// concurrency slot, or pending behind its hook's run) does not keep the
// reason it waited for once it ran.
func TestRanRunReasonIsHowItEnded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		block := newBlock()
		q := withSteps(newHook("q"), block)
		q.Overlap = engine.OverlapQueue
		h := newHarness(t, []*engine.Hook{q, newHook("other")}, func(c *engine.Config) { c.MaxConcurrent = 1 })
		defer h.stop()
		h.mustFire("q")
		h.settle()
		pending := h.mustFire("q")    // pending behind q's run
		queued := h.mustFire("other") // queued for the one slot
		if !strings.HasPrefix(h.run(pending.ID).Reason, "pending:") || !strings.HasPrefix(h.run(queued.ID).Reason, "queued:") {
			t.Fatalf("reasons while waiting: %q, %q", h.run(pending.ID).Reason, h.run(queued.ID).Reason)
		}
		close(block.release)
		h.settle()
		for _, id := range []string{pending.ID, queued.ID} {
			if r := h.run(id); r.Status != engine.StatusCompleted || r.Reason != "" {
				t.Errorf("run %s: %s with reason %q; a run that ran has no waiting reason left", id, r.Status, r.Reason)
			}
		}
	})
}
