package engine_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

// TestRateFloodOverlap performs an event flood on a hook with
// rate: 2/1h and overlap: queue or cancel_previous: an event every 10 s
// for 50 minutes, each run taking 1 minute. While a run is in flight the
// flood goes into the pending rerun (cancelling the run first, for
// cancel_previous), which starts when the run ends: its start must pass
// the rate gate and count like any other, so the hook starts two runs in
// the hour, not one per run's end (51 did), and the rest are recorded
// refused by the rate gate. The default run emits an event every 30 s
// (still two into each run's minute), HOOKD_TEST_LONG=1 every 10 s.
func TestRateFloodOverlap(t *testing.T) {
	t.Parallel()
	every := 30 * time.Second
	if testtool.Long() {
		every = 10 * time.Second
	}
	for _, overlap := range []engine.Overlap{engine.OverlapQueue, engine.OverlapCancelPrevious} {
		t.Run(string(overlap), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHook("capped")
				h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "flood.*"}
				h.Overlap = overlap
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
				for i := 0; i < int(50*time.Minute/every); i++ {
					if _, err := hs.eng.Emit(context.Background(), &engine.Event{Type: "flood.x", Data: map[string]any{"i": i}}); err != nil {
						t.Fatalf("emit %d: %v", i, err)
					}
					hs.advance(every)
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
		})
	}
}
