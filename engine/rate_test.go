package engine_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestRateGate: a hook with rate: 2/1h starts two runs in an hour; the
// third trigger is recorded skipped (rate), also after a restart, and the
// window slides.
func TestRateGate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHook("capped")
		h.Rate = engine.Rate{N: 2, Window: time.Hour}
		hs := newHarness(t, []*engine.Hook{h})
		hs.mustFire("capped")
		hs.advance(10 * time.Minute)
		hs.mustFire("capped")
		hs.settle()
		if _, err := hs.fire("capped", engine.FireOptions{Force: true}); gateOf(err) != engine.GateRate {
			t.Fatalf("third fire: %v, want the rate gate", err)
		}
		hs.restart(5 * time.Minute)
		defer hs.stop()
		if _, err := hs.fire("capped", engine.FireOptions{}); gateOf(err) != engine.GateRate {
			t.Fatalf("after a restart: %v, want the rate gate", err)
		}
		runs := hs.runs("capped")
		last := runs[len(runs)-1]
		if last.Status != engine.StatusSkipped || last.Gate != engine.GateRate {
			t.Errorf("refused record: %s %s %q", last.Status, last.Gate, last.Reason)
		}
		// Durations as the file writes them, not Go's 1h0m0s.
		if want := "rate: 2 starts in the last 1h (rate: 2/1h); the next is allowed in 45m"; last.Reason != want {
			t.Errorf("reason %q, want %q", last.Reason, want)
		}
		hs.advance(46 * time.Minute) // the first start leaves the window
		if _, err := hs.fire("capped", engine.FireOptions{}); err != nil {
			t.Errorf("after the window slid: %v", err)
		}
	})
}
