package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/store/churntest"
	"github.com/hookd/hookd/store/pgtest"
)

// TestPruneOneAtATime: while one node prunes (holds the prune lock),
// another node's Prune refuses with ErrPruning and deletes nothing; once
// the lock is free it prunes.
func TestPruneOneAtATime(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	a, b := open(t, url), open(t, url)
	now := t0.Add(100 * 24 * time.Hour)
	must(t, b.InsertRun(ctx, &engine.Run{ID: "old", Hook: "h", Status: engine.StatusSkipped, Reason: "cooldown",
		QueuedAt: t0, FinishedAt: t0}))
	conn, err := a.pool.Acquire(ctx)
	must(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockPrune)
	must(t, err)
	pol := store.PrunePolicy{Retention: engine.Retention{Skipped: time.Hour}}
	if st, err := b.Prune(ctx, now, pol); !errors.Is(err, ErrPruning) || st.Skipped != 0 {
		t.Fatalf("prune while another node prunes: %+v %v, want ErrPruning", st, err)
	}
	if _, err := b.GetRun(ctx, "old"); err != nil {
		t.Fatalf("the refused prune deleted: %v", err)
	}
	_, err = conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, lockPrune)
	must(t, err)
	st, err := b.Prune(ctx, now, pol)
	if err != nil || st.Skipped != 1 {
		t.Fatalf("prune after the lock was freed: %+v %v", st, err)
	}
	if _, err := b.GetRun(ctx, "old"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("the old skip record is still there: %v", err)
	}
}

// TestPruneLetsSpaceBeReused: under churn — a run with a large output
// stored, then pruned, over and over — the runs table's TOAST stays
// about the live rows' size: Prune vacuums the table after it deleted
// runs, so the space of the deleted outputs is reused instead of added
// to until autovacuum's turn.
func TestPruneLetsSpaceBeReused(t *testing.T) {
	ctx := context.Background()
	d := open(t, pgtest.NewDatabase(t))
	rng := rand.New(rand.NewPCG(3, 4))
	const runs, keep, size = 40, 2, 256 << 10
	pol := store.PrunePolicy{Retention: engine.Retention{Runs: time.Second, KeepLast: keep}}
	at := t0
	for range runs {
		at = at.Add(time.Minute)
		out := churntest.Output(rng, size) // does not compress: every chunk is stored
		r := &engine.Run{ID: engine.NewID(), Hook: "big", Trigger: "manual", Status: engine.StatusRunning, StartedAt: at, QueuedAt: at}
		must(t, d.StartRun(ctx, r))
		r.Status, r.FinishedAt = engine.StatusCompleted, at.Add(time.Second)
		r.Steps = []*engine.StepResult{{Index: 0, Name: "dump", Type: "shell", Output: out}}
		must(t, d.FinishRun(ctx, r))
		_, err := d.Prune(ctx, at.Add(time.Hour), pol)
		must(t, err)
	}
	var toast, live int64
	must(t, d.pool.QueryRow(ctx, `SELECT pg_total_relation_size(reltoastrelid), (SELECT sum(pg_column_size(steps)) FROM runs)
		FROM pg_class WHERE oid = 'runs'::regclass`).Scan(&toast, &live))
	if toast > 3*live {
		t.Errorf("after %d runs of %d KB with %d kept, the runs table's TOAST takes %d KB for %d KB of live outputs", runs, size>>10, keep, toast>>10, live>>10)
	}
}
