package storetest

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// testPendingReruns: pending reruns survive a reopen, oldest planned
// first, with their event and their trace parent, until deleted.
func testPendingReruns(t *testing.T, e *env) {
	ctx := context.Background()
	s, err := e.open()
	must(t, err)
	if got, err := s.PendingReruns(ctx); err != nil || len(got) != 0 {
		t.Fatalf("no reruns yet: %v %v", got, err)
	}
	later := &engine.PendingRerun{RunID: "b-rerun", Hook: "h", Interrupted: "b", PlannedAt: t0.Add(time.Minute)}
	first := &engine.PendingRerun{RunID: "a-rerun", Hook: "g", Interrupted: "a", Event: json.RawMessage(`{"k":"v"}`),
		EventType: "deploy", Depth: 2, PlannedAt: t0, TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	must(t, s.AddRerun(ctx, later))
	must(t, s.AddRerun(ctx, first))
	if err := s.AddRerun(ctx, first); err == nil {
		t.Error("AddRerun of a rerun id stored before: no error")
	}
	must(t, s.Close())

	s = e.store()
	got, err := s.PendingReruns(ctx)
	must(t, err)
	if want := []*engine.PendingRerun{first, later}; !reflect.DeepEqual(got, want) {
		t.Fatalf("PendingReruns =\n%+v\nwant\n%+v", got, want)
	}
	must(t, s.DeleteRerun(ctx, "a-rerun"))
	must(t, s.DeleteRerun(ctx, "a-rerun")) // again: nothing to do
	got, err = s.PendingReruns(ctx)
	must(t, err)
	if len(got) != 1 || got[0].RunID != "b-rerun" {
		t.Errorf("after delete: %+v", got)
	}
}
