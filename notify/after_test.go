package notify

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestNotifyAfter: notify:delivered handlers hear of a notification that
// reached its target, notify:failed handlers of one given up, with the
// target, the attempts, the error and the run's chain depth; for a run as
// deep as the event chain limit neither is called (logged), so that a
// notify:failed handler that fires a hook whose notification fails in
// turn cannot loop.
func TestNotifyAfter(t *testing.T) {
	rec := newReceiver(t, 200, 400, 400)
	lc := engine.NewRegistry()
	seen := make(chan string, 8)
	for _, point := range []engine.Point{engine.PointNotifyDelivered, engine.PointNotifyFailed} {
		lc.On(point, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
			seen <- fmt.Sprintf("%s %s %s %s attempts=%d depth=%d error=%q", p.Point, p.NotifyTarget, p.Hook.Name, p.RunID,
				p.NotifyAttempts, p.Depth, p.NotifyError)
			return engine.Decision{}, nil
		}, engine.HandlerOptions{Label: "audit"})
	}
	n, c, logs := newTest(t, Options{Lifecycle: lc, Targets: []engine.NotifyTarget{
		{Name: "ops", URL: rec.srv.URL, Format: engine.NotifyGeneric, On: []string{"failed"}},
	}})
	n.SetHooks([]*engine.Hook{{Name: "nightly"}})
	n.Observe(failedEvent("nightly", "r1")) // delivered
	if got := next(t, seen); got != `notify:delivered ops nightly r1 attempts=1 depth=0 error=""` {
		t.Errorf("delivered: %s", got)
	}
	ev := failedEvent("nightly", "r2") // refused by the webhook: given up at once
	ev.Outcome.Run.Depth = 3
	n.Observe(ev)
	if got := next(t, seen); got != `notify:failed ops nightly r2 attempts=1 depth=3 error="webhook answered 400 Bad Request"` {
		t.Errorf("failed: %s", got)
	}
	deep := failedEvent("nightly", "r3")
	deep.Outcome.Run.Depth = engine.DefaultMaxEventDepth
	n.Observe(deep)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n.Stop(ctx)
	select {
	case got := <-seen:
		t.Errorf("a handler was called for a run %d deep: %s", engine.DefaultMaxEventDepth, got)
	default:
	}
	if c.get(Undeliverable) != 2 || c.get(Delivered) != 1 {
		t.Errorf("undeliverable %d, delivered %d", c.get(Undeliverable), c.get(Delivered))
	}
	if !strings.Contains(logs.String(), "notification handlers not called: the run is a chain of runs too deep") {
		t.Errorf("log:\n%s", logs)
	}
}

// next is what the handlers told next, failing the test when none is
// called within 10 s.
func next(t *testing.T, seen <-chan string) string {
	t.Helper()
	select {
	case s := <-seen:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no notify:delivered or notify:failed handler was called")
		return ""
	}
}
