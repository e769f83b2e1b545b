package storetest

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// testPendingRetries: pending retries survive a reopen, earliest due
// first, with their event and their trace (the caller's, or else the
// span of the run that started the failed run), until deleted.
func testPendingRetries(t *testing.T, e *env) {
	ctx := context.Background()
	s, err := e.open()
	must(t, err)
	if got, err := s.PendingRetries(ctx); err != nil || len(got) != 0 {
		t.Fatalf("no retries yet: %v %v", got, err)
	}
	late := &engine.PendingRetry{RetryPlan: engine.RetryPlan{RunID: "r3", Attempt: 3, At: t0.Add(time.Hour)},
		Hook: "h", RetryOf: "r1", Attempts: 3, TraceLink: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	soon := &engine.PendingRetry{RetryPlan: engine.RetryPlan{RunID: "r2", Attempt: 2, At: t0},
		Hook: "g", RetryOf: "g1", Attempts: 5, Event: json.RawMessage(`{"k":"v"}`), EventType: "deploy", Depth: 1,
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	plain := &engine.PendingRetry{RetryPlan: engine.RetryPlan{RunID: "r4", Attempt: 2, At: t0.Add(2 * time.Hour)},
		Hook: "k", RetryOf: "k1", Attempts: 2}
	must(t, s.AddRetry(ctx, late))
	must(t, s.AddRetry(ctx, soon))
	must(t, s.AddRetry(ctx, plain))
	must(t, s.Close())

	s = e.store()
	got, err := s.PendingRetries(ctx)
	must(t, err)
	if want := []*engine.PendingRetry{soon, late, plain}; !reflect.DeepEqual(got, want) {
		t.Fatalf("PendingRetries =\n%+v\nwant\n%+v", got, want)
	}
	must(t, s.DeleteRetry(ctx, "r2"))
	must(t, s.DeleteRetry(ctx, "r2")) // again: nothing to do
	got, err = s.PendingRetries(ctx)
	must(t, err)
	if len(got) != 2 || got[0].RunID != "r3" || got[1].RunID != "r4" {
		t.Errorf("after delete: %+v", got)
	}
}
