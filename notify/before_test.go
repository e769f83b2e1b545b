package notify

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestNotifyBefore: notify:before handlers see each notification with its
// target before it is sent; one amends the summary for a target, one
// cancels the notification for another, which is then never sent.
func TestNotifyBefore(t *testing.T) {
	rec := newReceiver(t)
	lc := engine.NewRegistry()
	seen := make(chan string, 4)
	lc.On(engine.PointNotifyBefore, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
		var m Message
		if err := json.Unmarshal(p.Notification, &m); err != nil {
			return engine.Decision{}, err
		}
		seen <- p.NotifyTarget + " " + p.Hook.Name + " " + m.Outcome + " " + p.RunID
		switch p.NotifyTarget {
		case "quiet":
			return engine.Decision{Cancel: true, Reason: "muted at night"}, nil
		default:
			return engine.Decision{Changes: map[string]any{engine.ChangeSummary: "see the runbook"}}, nil
		}
	}, engine.HandlerOptions{Label: "editor"})
	n, c, logs := newTest(t, Options{Lifecycle: lc, Targets: []engine.NotifyTarget{
		{Name: "quiet", URL: rec.srv.URL + "/quiet", Format: engine.NotifyGeneric, On: []string{"failed"}},
		{Name: "loud", URL: rec.srv.URL + "/loud", Format: engine.NotifyGeneric, On: []string{"failed"}},
	}})
	n.SetHooks([]*engine.Hook{{Name: "nightly"}})
	n.Observe(failedEvent("nightly", "r1"))
	var m Message
	if err := json.Unmarshal(rec.wait(t), &m); err != nil {
		t.Fatal(err)
	}
	if m.Summary != "see the runbook" || m.RunID != "r1" {
		t.Errorf("delivered %+v", m)
	}
	got := []string{<-seen, <-seen}
	slices.Sort(got) // each URL has its own worker
	if strings.Join(got, "|") != "loud nightly failed r1|quiet nightly failed r1" {
		t.Errorf("handler saw %q", got)
	}
	// Stop waits for the worker, so the counts are final.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n.Stop(ctx)
	if rec.requests() != 1 || c.get(Cancelled) != 1 || c.get(Delivered) != 1 {
		t.Errorf("requests %d, cancelled %d, delivered %d", rec.requests(), c.get(Cancelled), c.get(Delivered))
	}
	if !strings.Contains(logs.String(), "notification cancelled by a lifecycle handler") || !strings.Contains(logs.String(), "muted at night") {
		t.Errorf("log:\n%s", logs)
	}
}
