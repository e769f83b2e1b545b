package engine_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestGuardFailureStopsTriggering: once Config.Guard fails (the daemon's
// database was removed under it), the engine fires no slot and accepts no
// fire, and reports the error on Failed once; Guard is asked at most once
// a Tick, on wake-ups the loop has anyway.
func TestGuardFailureStopsTriggering(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		gone := errors.New("database removed")
		var fail atomic.Bool
		var calls atomic.Int32
		h := newHarness(t, []*engine.Hook{every(newHook("tick"), 10*time.Second), newHook("manual")},
			func(c *engine.Config) {
				c.Guard = func() error {
					calls.Add(1)
					if fail.Load() {
						return gone
					}
					return nil
				}
			})
		defer h.stop()
		h.advance(25 * time.Second)
		if n := len(h.runs("tick")); n != 2 {
			t.Fatalf("runs before the failure: %d, want 2", n)
		}
		if c := calls.Load(); c < 2 || c > 26 {
			t.Errorf("Guard called %d times in 25 ticks, want at most one a tick", c)
		}

		fail.Store(true)
		h.advance(time.Second)
		select {
		case err := <-h.eng.Failed():
			if !errors.Is(err, gone) {
				t.Errorf("Failed: %v, want %v", err, gone)
			}
		default:
			t.Fatal("Failed delivered nothing after Guard failed")
		}
		calls.Store(0)
		h.advance(time.Minute)
		if n := len(h.runs("tick")); n != 2 {
			t.Errorf("runs after the failure: %d, want still 2", n)
		}
		if _, err := h.fire("manual", engine.FireOptions{}); !errors.Is(err, engine.ErrStopped) {
			t.Errorf("fire after the failure: %v, want ErrStopped", err)
		}
		if n := len(h.runs("manual")); n != 0 {
			t.Errorf("manual runs after the failure: %d", n)
		}
		if c := calls.Load(); c != 0 {
			t.Errorf("Guard called %d times after it failed", c)
		}
	})
}
