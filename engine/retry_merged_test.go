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

// TestStoredRetryMergedIsForgotten: a stored retry that fires while its
// hook (overlap: queue) has a run in flight and one pending merges into
// the pending run, and is forgotten: it does not fire again. Before, a
// merged retry stayed stored (only a started or refused one was
// forgotten), and fired a second time once the hook was idle.
func TestStoredRetryMergedIsForgotten(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		gate := make(chan struct{})
		step := funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			switch calls.Add(1) {
			case 1:
				return nil, errors.New("flaky")
			case 2:
				<-gate // in flight while the retry comes due
			}
			return &engine.StepResult{Output: "ran"}, nil
		})
		hook := retryHook("flaky", 3, step)
		hook.Overlap = engine.OverlapQueue
		hook.Timeout = 24 * time.Hour // the run in flight waits for gate, not for its timeout
		h := newHarness(t, []*engine.Hook{hook})
		defer h.stop()
		first := h.mustFire("flaky")
		h.settle()
		if r := h.run(first.ID); r.Retry == nil {
			t.Fatalf("first run: %+v; want a retry planned", r)
		}
		h.mustFire("flaky") // in flight
		h.settle()
		h.mustFire("flaky") // pending
		h.settle()
		time.Sleep(time.Hour) // the retry is due: it merges into the pending run
		h.settle()
		close(gate)
		h.settle()
		time.Sleep(time.Hour)
		h.settle()
		runs, _ := h.db.ListRuns(context.Background(), engine.RunFilter{Hook: "flaky", Limit: 20})
		for _, r := range runs {
			t.Logf("run %s %s %s %s", r.ID, r.Trigger, r.Status, r.Reason)
		}
		if n := calls.Load(); n != 3 {
			t.Errorf("the hook executed %d times; want 3 (the failed run, the one in flight, the pending run the retry merged into)", n)
		}
		if ps, err := h.db.PendingRetries(context.Background()); err != nil || len(ps) != 0 {
			t.Errorf("pending retries after the retry merged: %+v %v; want none", ps, err)
		}
	})
}
