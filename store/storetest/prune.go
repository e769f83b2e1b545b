package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
)

const day = 24 * time.Hour

// record stores a final run of hook with status st that finished at t
// (queued or running: not finished).
func record(t testing.TB, s Store, hook string, st engine.Status, at time.Time, mod ...func(*engine.Run)) *engine.Run {
	t.Helper()
	r := &engine.Run{ID: engine.NewID(), Hook: hook, Trigger: "manual", Status: st, QueuedAt: at, FinishedAt: at}
	if st == engine.StatusSkipped || st == engine.StatusDropped {
		r.Gate, r.Reason = engine.GateCooldown, fmt.Sprintf("cooldown: %s left", at.Format(time.StampNano))
	} else {
		r.StartedAt = at
	}
	for _, f := range mod {
		f(r)
	}
	ctx := context.Background()
	if st.Final() && r.StartedAt.IsZero() || st == engine.StatusQueued {
		must(t, s.InsertRun(ctx, r))
		return r
	}
	fin := *r
	r.Status, r.FinishedAt = engine.StatusRunning, time.Time{}
	must(t, s.StartRun(ctx, r))
	if st == engine.StatusRunning {
		return r
	}
	must(t, s.FinishRun(ctx, &fin))
	return &fin
}

// testPruneKeepsWhatMatters builds a history older than every retention
// and checks what Prune deletes and what it must keep: each hook's newest
// keep_last runs, queued and running runs, pending events, hook state,
// the hook's latest start and slot, its latest fingerprint, a hook's own
// longer retention, and anything younger than its retention.
func testPruneKeepsWhatMatters(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	now := t0.Add(100 * day)
	old := now.Add(-40 * day)

	var a []*engine.Run // 150 old completed runs; the newest 100 stay
	for i := range 150 {
		a = append(a, record(t, s, "a", engine.StatusCompleted, old.Add(time.Duration(i)*time.Minute)))
	}
	queued := record(t, s, "a", engine.StatusQueued, old)
	running := record(t, s, "q", engine.StatusRunning, old)
	young := record(t, s, "y", engine.StatusFailed, now.Add(-29*day))
	var b []*engine.Run // b keeps its runs 90 days
	for range 3 {
		b = append(b, record(t, s, "b", engine.StatusCompleted, old))
	}
	oldSkip := record(t, s, "c", engine.StatusSkipped, now.Add(-4*day))
	oldDrop := record(t, s, "c", engine.StatusDropped, now.Add(-4*day))
	// f keeps no run for its count, only what the gates need.
	fOld := record(t, s, "f", engine.StatusCompleted, old, func(r *engine.Run) { r.Fingerprint = "sha256:1" })
	fPrint := record(t, s, "f", engine.StatusCompleted, old.Add(time.Minute), func(r *engine.Run) { r.Fingerprint = "sha256:2" })
	fSlot := record(t, s, "f", engine.StatusCompleted, old.Add(2*time.Minute), func(r *engine.Run) { r.Slot = old })
	fLast := record(t, s, "f", engine.StatusCancelled, old.Add(3*time.Minute))
	newSkip := record(t, s, "c", engine.StatusSkipped, now.Add(-2*day))
	oldEv := &engine.Event{Type: "x", Time: now.Add(-8 * day)}
	pendingEv := &engine.Event{Type: "x", Time: now.Add(-8 * day)}
	youngEv := &engine.Event{Type: "x", Time: now.Add(-6 * day)}
	must(t, s.AppendEvent(ctx, oldEv))
	must(t, s.AppendPendingEvent(ctx, pendingEv))
	must(t, s.AppendEvent(ctx, youngEv))
	statesBefore, err := s.HookStates(ctx)
	must(t, err)

	ninety, none := 90*day, 0
	pol := store.PrunePolicy{
		Retention: engine.Retention{Runs: 30 * day, KeepLast: 100, Events: 7 * day, Skipped: 3 * day},
		Hooks:     map[string]engine.HookRetention{"b": {Runs: &ninety}, "f": {KeepLast: &none}},
	}
	dry := pol
	dry.DryRun = true
	want := store.PruneStats{Runs: 50 + 1, Skipped: 2, Events: 1}
	countA := func() int {
		runs, err := s.ListRuns(ctx, engine.RunFilter{Hook: "a", Limit: 1000})
		must(t, err)
		return len(runs)
	}
	got, err := s.Prune(ctx, now, dry)
	must(t, err)
	if got.Runs != want.Runs || got.Skipped != want.Skipped || got.Events != want.Events {
		t.Errorf("dry run: %+v, want runs %d skipped %d events %d", got, want.Runs, want.Skipped, want.Events)
	}
	if n := countA(); n != 151 {
		t.Fatalf("dry run deleted runs: a has %d", n)
	}
	got, err = s.Prune(ctx, now, pol)
	must(t, err)
	if got.Runs != want.Runs || got.Skipped != want.Skipped || got.Events != want.Events {
		t.Errorf("prune: %+v, want runs %d skipped %d events %d", got, want.Runs, want.Skipped, want.Events)
	}
	check := func(what string, r *engine.Run, want bool) {
		t.Helper()
		_, err := s.GetRun(ctx, r.ID)
		if kept := err == nil; kept != want {
			t.Errorf("%s: kept %v, want %v (%v)", what, kept, want, err)
		}
	}
	for i, r := range a {
		check(fmt.Sprintf("a run %d", i), r, i >= 50)
	}
	check("old queued run", queued, true)
	check("old running run", running, true)
	check("young failed run", young, true)
	for i, r := range b {
		check(fmt.Sprintf("b run %d (runs: 90d)", i), r, true)
	}
	check("old skip record", oldSkip, false)
	check("old drop record", oldDrop, false)
	check("young skip record", newSkip, true)
	check("f: an older fingerprint", fOld, false)
	check("f: the latest fingerprint", fPrint, true)
	check("f: the run holding the last slot", fSlot, true)
	check("f: the latest start", fLast, true)

	evs, err := s.EventsAfter(ctx, 0, 100)
	must(t, err)
	gotEv := map[string]bool{}
	for _, ev := range evs {
		gotEv[ev.ID] = true
	}
	if gotEv[oldEv.ID] || !gotEv[pendingEv.ID] || !gotEv[youngEv.ID] {
		t.Errorf("events left %v; want only the pending %s and the young %s", gotEv, pendingEv.ID, youngEv.ID)
	}
	statesAfter, err := s.HookStates(ctx)
	must(t, err)
	if fmt.Sprint(statesAfter) != fmt.Sprint(statesBefore) {
		t.Errorf("hook state changed:\n got %v\nwant %v", statesAfter, statesBefore)
	}
	got, err = s.Prune(ctx, now, pol)
	must(t, err)
	if got.Runs+got.Skipped+got.Events != 0 {
		t.Errorf("second prune deleted %+v", got)
	}
}

// testPruneInBatches: Prune deletes in transactions of at most Batch rows.
func testPruneInBatches(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	now := t0.Add(100 * day)
	for i := range 100 {
		record(t, s, "h", engine.StatusCompleted, now.Add(-40*day+time.Duration(i)*time.Second))
	}
	pol := store.PrunePolicy{Retention: engine.Retention{Runs: 30 * day, KeepLast: 10}, Batch: 7}
	st, err := s.Prune(ctx, now, pol)
	must(t, err)
	if st.Runs != 90 || st.Batches < 13 {
		t.Errorf("pruned %d runs in %d batches, want 90 in at least 13 (batch 7)", st.Runs, st.Batches)
	}
	runs, err := s.ListRuns(ctx, engine.RunFilter{Hook: "h", Limit: 1000})
	must(t, err)
	if len(runs) != 10 {
		t.Errorf("%d runs left, want the newest 10", len(runs))
	}
}
