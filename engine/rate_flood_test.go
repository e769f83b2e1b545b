package engine_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestRateFloodOverlapQueue performs an event flood on a hook with
// rate: 2/1h and overlap: queue: an event every 10 s for 50 minutes,
// each run taking 1 minute. The flood coalesces into the pending rerun
// while a run is in flight; that rerun starts when the run ends, and
// its start must pass the rate gate and count like any other: the hook
// starts two runs in the hour, not one per minute.
func TestRateFloodOverlapQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHook("capped")
		h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "flood.*"}
		h.Overlap = engine.OverlapQueue
		h.Rate = engine.Rate{N: 2, Window: time.Hour}
		withSteps(h, funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			select {
			case <-time.After(time.Minute):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &engine.StepResult{Output: "done"}, nil
		}))
		hs := newHarness(t, []*engine.Hook{h})
		defer hs.stop()
		start := hs.clock.Now()
		for i := 0; i < 300; i++ {
			if _, err := hs.eng.Emit(context.Background(), &engine.Event{Type: "flood.x", Data: map[string]any{"i": i}}); err != nil {
				t.Fatalf("emit %d: %v", i, err)
			}
			hs.advance(10 * time.Second)
		}
		hs.advance(2 * time.Minute)
		started, refused := 0, 0
		for _, r := range hs.runs("capped") {
			if !r.StartedAt.IsZero() && r.StartedAt.Before(start.Add(time.Hour)) {
				started++
			}
			if r.Status == engine.StatusSkipped && r.Gate == engine.GateRate {
				refused++
			}
		}
		if started != 2 {
			t.Errorf("%d runs started within the hour under rate: 2/1h", started)
		}
		if refused == 0 {
			t.Error("no trigger was recorded refused by the rate gate")
		}
	})
}
