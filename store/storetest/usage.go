package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/hookd/hookd/budget"
)

// testUsage: the spend ledger survives a reopen, oldest first from a
// time on, a run's second record replaces its first, and records older
// than budget.UsageKept go when a newer one is added; a replay's record
// keeps its tag.
func testUsage(t *testing.T, e *env) {
	ctx := context.Background()
	s, err := e.open()
	must(t, err)
	if got, err := s.UsageSince(ctx, time.Time{}); err != nil || len(got) != 0 {
		t.Fatalf("no usage yet: %v %v", got, err)
	}
	old := &budget.Usage{RunID: "r0", Hook: "h", Model: "m", At: t0.Add(-budget.UsageKept - time.Minute), Prompt: 5, Completion: 5}
	a := &budget.Usage{RunID: "r1", Hook: "h", Model: "gpt-4o", At: t0, Prompt: 1200, Completion: 300}
	b := &budget.Usage{RunID: "r2", Hook: "g", Model: "llama3", At: t0.Add(time.Hour), Prompt: 7, Unreported: true, Tag: budget.UsageReplay}
	must(t, s.AddUsage(ctx, old))
	must(t, s.AddUsage(ctx, b))
	must(t, s.AddUsage(ctx, &budget.Usage{RunID: "r1", Hook: "h", Model: "gpt-4o", At: t0, Prompt: 1}))
	must(t, s.AddUsage(ctx, a)) // replaces r1's first record
	must(t, s.Close())

	s = e.store()
	got, err := s.UsageSince(ctx, time.Time{})
	must(t, err)
	if want := []*budget.Usage{a, b}; !reflect.DeepEqual(got, want) {
		t.Fatalf("UsageSince(zero) =\n%+v\nwant (r0 is older than UsageKept before r2)\n%+v", got, want)
	}
	got, err = s.UsageSince(ctx, t0.Add(time.Nanosecond))
	must(t, err)
	if len(got) != 1 || got[0].RunID != "r2" {
		t.Errorf("UsageSince(after r1) = %+v, want r2 only", got)
	}
	got, err = s.UsageSince(ctx, t0)
	must(t, err)
	if len(got) != 2 {
		t.Errorf("UsageSince(r1's time) = %+v, want r1 and r2 (at or after)", got)
	}
}
