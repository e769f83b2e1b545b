package engine_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestRetryContinuesTrace: the retry of a failed run continues the
// caller's trace the failed run continued, and links to the run that
// started it as the failed run did, whether the hookd that planned the
// retry fires it or a hookd started later fires it from the store.
func TestRetryContinuesTrace(t *testing.T) {
	t.Parallel()
	const (
		caller engine.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		span   engine.TraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	)
	for _, restart := range []bool{false, true} {
		name := "in memory"
		if restart {
			name = "stored"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n, m atomic.Int32
				h := newHarness(t, []*engine.Hook{retryHook("called", 2, failing(1, &n)), retryHook("linked", 2, failing(1, &m))})
				first, err := h.fire("called", engine.FireOptions{TraceParent: caller})
				if err != nil {
					t.Fatal(err)
				}
				linked, err := h.fire("linked", engine.FireOptions{TraceLink: span})
				if err != nil {
					t.Fatal(err)
				}
				h.settle()
				if restart {
					h.restart(time.Second)
				}
				defer h.stop()
				h.advance(time.Minute)
				for _, c := range []struct {
					hook  string
					first string
				}{{"called", first.ID}, {"linked", linked.ID}} {
					runs := h.runs(c.hook)
					if len(runs) != 2 || runs[1].Trigger != engine.TriggerRetry || runs[1].RetryOf != c.first {
						t.Fatalf("%s: want the failed run and its retry, got %v", c.hook, statuses(runs))
					}
					r1, r2 := runs[0], runs[1]
					if r2.TraceParent != r1.TraceParent || r2.TraceLinks.StartedBy != r1.TraceLinks.StartedBy {
						t.Errorf("%s: the retry's trace parent %q, started by %q; want the failed run's %q, %q",
							c.hook, r2.TraceParent, r2.TraceLinks.StartedBy, r1.TraceParent, r1.TraceLinks.StartedBy)
					}
				}
				if got := h.runs("called")[0].TraceParent; got != caller {
					t.Errorf("the failed run's trace parent = %q, want the caller's %q", got, caller)
				}
				if got := h.runs("linked")[0].TraceLinks.StartedBy; got != span {
					t.Errorf("the failed run is started by %q, want %q", got, span)
				}
			})
		})
	}
}
