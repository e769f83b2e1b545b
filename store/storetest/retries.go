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
// first, with their event, until deleted.
func testPendingRetries(t *testing.T, e *env) {
	ctx := context.Background()
	s, err := e.open()
	must(t, err)
	if got, err := s.PendingRetries(ctx); err != nil || len(got) != 0 {
		t.Fatalf("no retries yet: %v %v", got, err)
	}
	late := &engine.PendingRetry{RetryPlan: engine.RetryPlan{RunID: "r3", Attempt: 3, At: t0.Add(time.Hour)},
		Hook: "h", RetryOf: "r1", Attempts: 3}
	soon := &engine.PendingRetry{RetryPlan: engine.RetryPlan{RunID: "r2", Attempt: 2, At: t0},
		Hook: "g", RetryOf: "g1", Attempts: 5, Event: json.RawMessage(`{"k":"v"}`), EventType: "deploy", Depth: 1}
	must(t, s.AddRetry(ctx, late))
	must(t, s.AddRetry(ctx, soon))
	must(t, s.Close())

	s = e.store()
	got, err := s.PendingRetries(ctx)
	must(t, err)
	if want := []*engine.PendingRetry{soon, late}; !reflect.DeepEqual(got, want) {
		t.Fatalf("PendingRetries =\n%+v\nwant\n%+v", got, want)
	}
	must(t, s.DeleteRetry(ctx, "r2"))
	must(t, s.DeleteRetry(ctx, "r2")) // again: nothing to do
	got, err = s.PendingRetries(ctx)
	must(t, err)
	if len(got) != 1 || got[0].RunID != "r3" {
		t.Errorf("after delete: %+v", got)
	}
}
