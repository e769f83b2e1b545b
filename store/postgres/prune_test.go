package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
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
