package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/store/churntest"
)

// TestPruneOneAtATime: while one node prunes (holds the prune lock),
// another node's Prune refuses with ErrPruning and deletes nothing; once
// the lock is free it prunes.
func TestPruneOneAtATime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
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
// to until autovacuum's turn. By default 12 runs (without the vacuum
// their TOAST ends at 8 times the live outputs, the bound 3);
// HOOKD_TEST_LONG=1 runs 40.
func TestPruneLetsSpaceBeReused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := open(t, migrated.NewDatabase(t))
	runs := testtool.Count(12, 40)
	const keep, size = 2, 256 << 10
	churnAndPrune(t, d, runs, keep, size)
	var toast, live int64
	must(t, d.pool.QueryRow(ctx, `SELECT pg_total_relation_size(reltoastrelid), (SELECT sum(pg_column_size(steps)) FROM runs)
		FROM pg_class WHERE oid = 'runs'::regclass`).Scan(&toast, &live))
	if toast > 3*live {
		t.Errorf("after %d runs of %d KB with %d kept, the runs table's TOAST takes %d KB for %d KB of live outputs", runs, size>>10, keep, toast>>10, live>>10)
	}
}

// TestPruneKeepsSearchIndexToLiveRuns: under churn of runs whose output's
// words are all new (base64 text), the search index (GIN) stays about
// the live runs' size: GIN keeps a key for every word it ever held, so
// Prune rebuilds it once it outgrows them. Before, 60 runs of 64 KiB with
// 2 kept left an index of 5.6 MB for 0.2 MB of live tsvectors. By
// default 32 runs (past the index's 1 MB floor, so Prune rebuilds it;
// without the rebuilds it ends at 5.3 MB); HOOKD_TEST_LONG=1 runs 60.
func TestPruneKeepsSearchIndexToLiveRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := open(t, migrated.NewDatabase(t))
	runs := testtool.Count(32, 60)
	const keep, size = 2, 64 << 10
	churnAndPrune(t, d, runs, keep, size)
	var index, vectors int64
	must(t, d.pool.QueryRow(ctx, `SELECT pg_relation_size('runs_search'), (SELECT sum(pg_column_size(search)) FROM runs)`).Scan(&index, &vectors))
	t.Logf("after %d runs of %d KB with %d kept: the search index takes %d KB for %d KB of live tsvectors", runs, size>>10, keep, index>>10, vectors>>10)
	if index > 2<<20 {
		t.Errorf("after %d runs of %d KB with %d kept, the search index takes %d KB for %d KB of live tsvectors", runs, size>>10, keep, index>>10, vectors>>10)
	}
	hits, err := d.SearchRuns(ctx, engine.SearchQuery{Text: "manual"})
	must(t, err)
	if len(hits) != keep {
		t.Errorf("search after the rebuild: %d hits, want the %d runs kept", len(hits), keep)
	}
}

// churnAndPrune stores runs runs whose shell step printed size bytes of
// base64 text (it does not compress, and its words are all new), each
// followed by a prune keeping keep.
func churnAndPrune(t *testing.T, d *DB, runs, keep, size int) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	pol := store.PrunePolicy{Retention: engine.Retention{Runs: time.Second, KeepLast: keep}}
	at := t0
	for range runs {
		at = at.Add(time.Minute)
		out := churntest.Output(rng, size)
		r := &engine.Run{ID: engine.NewID(), Hook: "big", Trigger: "manual", Status: engine.StatusRunning, StartedAt: at, QueuedAt: at}
		must(t, d.StartRun(ctx, r))
		r.Status, r.FinishedAt = engine.StatusCompleted, at.Add(time.Second)
		r.Steps = []*engine.StepResult{{Index: 0, Name: "dump", Type: "shell", Output: out}}
		must(t, d.FinishRun(ctx, r))
		_, err := d.Prune(ctx, at.Add(time.Hour), pol)
		must(t, err)
	}
}
