package postgres

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestTellOnce: a run a node finishes (FinishRunOn), or a restarted node
// recovers, or the scheduler expires, is untold from the transaction that
// stores its end; the outcome event a scheduler tells for it is stored
// pending once, with the run untold no more, and only while the
// scheduler holds the lease: a second Tell of the run, or one by a node
// without the lease (a deposed scheduler's late write), stores nothing.
// A run the single daemon finishes (FinishRun) is never untold.
func TestTellOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, a, b, lockA := claimedThree(ctx, t)
	must(t, d.StartRun(ctx, &engine.Run{ID: "r4", Hook: "h", Status: engine.StatusRunning, StartedAt: t0}))
	untold := func() []string {
		t.Helper()
		runs, err := a.Untold(ctx)
		must(t, err)
		return runIDs(runs)
	}
	pending := func() []string {
		t.Helper()
		evs, err := d.PendingEvents(ctx, 10)
		must(t, err)
		var ids []string
		for _, ev := range evs {
			ids = append(ids, ev.Data["run_id"].(string))
		}
		return ids
	}
	must(t, d.FinishRun(ctx, &engine.Run{ID: "r4", Hook: "h", Status: engine.StatusCompleted, FinishedAt: t0}))
	if got := untold(); len(got) != 0 {
		t.Fatalf("runs untold before a node ends one: %v", got)
	}
	must(t, d.FinishRunOn(ctx, "w", &engine.Run{ID: "r1", Hook: "h", Status: engine.StatusFailed, FinishedAt: t0}))
	if got := untold(); !slices.Equal(got, []string{"r1"}) {
		t.Fatalf("untold after w finished r1: %v, want r1", got)
	}
	if _, err := d.RecoverNode(ctx, "w", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.pool.Exec(ctx, `UPDATE nodes SET heartbeat_at = now() - interval '1 hour' WHERE name = 's'`); err != nil {
		t.Fatal(err) // s falls silent
	}
	if _, err := d.ExpireNodes(ctx, time.Minute, t0); err != nil {
		t.Fatal(err)
	}
	if got := untold(); !slices.Equal(got, []string{"r1", "r2", "r3"}) {
		t.Fatalf("untold after w's recovery and s's expiry: %v, want r1 r2 r3", got)
	}
	// A restarted node that reaps what an interrupted run left behind
	// stores its record again (FinishRun, no node): the run stays untold.
	must(t, d.FinishRun(ctx, &engine.Run{ID: "r2", Hook: "h", Status: engine.StatusInterrupted, Reason: "reaped", FinishedAt: t0}))
	if got := untold(); !slices.Equal(got, []string{"r1", "r2", "r3"}) {
		t.Fatalf("untold after r2's record was stored again without a node: %v, want r1 r2 r3", got)
	}

	outcome := func(id string, st engine.Status) *engine.Event {
		return engine.RunEvent(&engine.Run{ID: id, Hook: "h", Status: st, FinishedAt: t0})
	}
	if err := b.Tell(ctx, "r1", outcome("r1", engine.StatusFailed)); !errors.Is(err, engine.ErrLeaseLost) {
		t.Errorf("Tell by b, which never held the lease: %v, want ErrLeaseLost", err)
	}
	must(t, a.Tell(ctx, "r1", outcome("r1", engine.StatusFailed)))
	if err := a.Tell(ctx, "r1", outcome("r1", engine.StatusFailed)); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("a second Tell of r1: %v, want ErrNotFound", err)
	}
	if got := pending(); !slices.Equal(got, []string{"r1"}) {
		t.Errorf("pending events of runs %v, want r1's alone", got)
	}

	// The lease moves to b; a, which has not noticed, stores nothing.
	must(t, lockA.Unlock())
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, ok, err := b.Lead(ctx); err != nil {
			t.Fatal(err)
		} else if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b never took the lease of dead a")
		}
	}
	if err := a.Tell(ctx, "r2", outcome("r2", engine.StatusInterrupted)); !errors.Is(err, engine.ErrLeaseLost) {
		t.Errorf("Tell by deposed a: %v, want ErrLeaseLost", err)
	}
	if got := untold(); !slices.Equal(got, []string{"r2", "r3"}) {
		t.Fatalf("untold after a's stale Tell: %v, want r2 r3", got)
	}
	must(t, b.Tell(ctx, "r2", outcome("r2", engine.StatusInterrupted)))
	must(t, b.Tell(ctx, "r3", outcome("r3", engine.StatusInterrupted)))
	if got := pending(); !slices.Equal(got, []string{"r1", "r2", "r3"}) {
		t.Errorf("pending events of runs %v, want r1 r2 r3", got)
	}
	if got := untold(); len(got) != 0 {
		t.Errorf("untold at the end: %v", got)
	}
}
