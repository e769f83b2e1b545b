package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// testStartsSince: the start times of a hook's runs from a time on,
// oldest first, read back after a reopen (rate: windows survive a
// restart); runs that never started and other hooks' are not listed.
func testStartsSince(t *testing.T, e *env) {
	ctx := context.Background()
	s, err := e.open()
	must(t, err)
	for i, r := range []*engine.Run{
		{ID: "r1", Hook: "h", Trigger: "manual", Status: engine.StatusRunning, QueuedAt: t0, StartedAt: t0},
		{ID: "r2", Hook: "h", Trigger: "manual", Status: engine.StatusRunning, QueuedAt: t0.Add(time.Hour), StartedAt: t0.Add(time.Hour)},
		{ID: "r3", Hook: "g", Trigger: "manual", Status: engine.StatusRunning, QueuedAt: t0.Add(time.Hour), StartedAt: t0.Add(time.Hour)},
	} {
		if i == 0 {
			must(t, s.StartRun(ctx, r))
			r.Status, r.FinishedAt = engine.StatusCompleted, t0.Add(time.Minute)
			must(t, s.FinishRun(ctx, r))
			continue
		}
		must(t, s.StartRun(ctx, r))
	}
	must(t, s.InsertRun(ctx, &engine.Run{ID: "r4", Hook: "h", Trigger: "manual", Status: engine.StatusSkipped,
		Gate: engine.GateRate, Reason: "rate: …", QueuedAt: t0.Add(2 * time.Hour), FinishedAt: t0.Add(2 * time.Hour)}))
	must(t, s.Close())

	s = e.store()
	got, err := s.StartsSince(ctx, "h", t0)
	must(t, err)
	if want := []time.Time{t0, t0.Add(time.Hour)}; !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("StartsSince(h, t0) = %v, want %v", got, want)
	}
	got, err = s.StartsSince(ctx, "h", t0.Add(time.Nanosecond))
	must(t, err)
	if len(got) != 1 || !got[0].Equal(t0.Add(time.Hour)) {
		t.Errorf("StartsSince(h, after r1) = %v, want r2's start", got)
	}
}
