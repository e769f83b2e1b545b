package engine_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestRerunContinuesTrace: the rerun of an interrupted run (on_interrupted:
// rerun) continues the caller's trace the interrupted run continued,
// whether the daemon that recovers the crash runs it itself or a
// daemonless command recovers it and leaves the rerun, stored, for the
// next daemon.
func TestRerunContinuesTrace(t *testing.T) {
	t.Parallel()
	const tp engine.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, daemonless := range []bool{false, true} {
		name := "daemon"
		if daemonless {
			name = "daemonless"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hk := newHook("x")
				hk.OnInterrupted = engine.InterruptedRerun
				h := newHarness(t, []*engine.Hook{hk})
				h.stop()
				// What a crash leaves: a run, continuing a caller's trace, still marked running.
				db := h.dbAt()
				run := &engine.Run{ID: engine.NewID(), Hook: "x", Trigger: "manual", Status: engine.StatusRunning,
					StartedAt: time.Now(), TraceParent: tp}
				if err := db.StartRun(context.Background(), run); err != nil {
					t.Fatal(err)
				}
				db.Close()
				if daemonless {
					h.cfg.Manual = true // recovers the crash, stores the rerun
					h.start()
					h.settle()
					if n := len(h.runs("x")); n != 1 {
						t.Fatalf("the daemonless engine ran the rerun: %d runs", n)
					}
					h.stop()
					h.cfg.Manual = false
				}
				h.start()
				defer h.stop()
				h.settle()
				runs := h.runs("x")
				if len(runs) != 2 || runs[0].Status != engine.StatusInterrupted || runs[1].Trigger != engine.TriggerRerun {
					t.Fatalf("want the interrupted run and its rerun, got %d runs: %+v", len(runs), runs)
				}
				if got := runs[1].TraceParent; got != tp {
					t.Errorf("the rerun's trace parent = %q, want the interrupted run's %q", got, tp)
				}
			})
		})
	}
}
