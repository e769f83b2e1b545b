package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/jackc/pgx/v5"
)

// ErrPruning is returned by Prune while another process prunes the same
// database: one prune at a time, whichever node starts it.
var ErrPruning = errors.New("another hookd is pruning this database")

// lockPrune is held (a session advisory lock) while a node prunes.
const lockPrune int64 = 0x686f6f6b64_000004

// sqlProtected selects the runs the gates and catch-up read: each hook's
// latest started run and the run that holds its latest slot.
const sqlProtected = `(SELECT last_run_id FROM hook_state WHERE last_run_id <> ''
	UNION SELECT s.run_id FROM hook_state h JOIN slots s ON s.hook = h.hook AND s.slot = h.last_slot)`

// Statuses by how retention treats them, as the SQLite store's Prune.
var (
	retainedRuns = []string{string(engine.StatusCompleted), string(engine.StatusFailed),
		string(engine.StatusCancelled), string(engine.StatusInterrupted)}
	skipRecords = []string{string(engine.StatusSkipped), string(engine.StatusDropped)}
)

// Prune deletes the history p's retention lets go, as of now, by the
// rules of the SQLite store's Prune (store.DB.Prune): finished runs older
// than Runs (a hook's own, if it sets one) beyond each hook's newest
// KeepLast runs; skip and drop records older than Skipped; dispatched
// events older than Events. It never deletes a queued or running run, an
// event not yet dispatched, hook state, a hook's latest started run, the
// run that holds its latest slot, or its latest run with a context
// fingerprint. It deletes in transactions of at most p.Batch rows, so
// other writers wait at most for one.
//
// One node prunes at a time: while another holds the prune lock, Prune
// returns an error wrapping ErrPruning. PostgreSQL's autovacuum makes the
// space of deleted rows reusable; the files do not shrink (FreedBytes is
// 0), as that takes a VACUUM FULL, which locks the tables.
func (d *DB) Prune(ctx context.Context, now time.Time, p store.PrunePolicy) (store.PruneStats, error) {
	start := d.clock.Mono()
	if p.Batch <= 0 {
		p.Batch = store.DefaultPruneBatch
	}
	st := store.PruneStats{DryRun: p.DryRun}
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return st, fmt.Errorf("prune: %w", err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, lockPrune).Scan(&locked); err != nil {
		return st, fmt.Errorf("prune: take the prune lock: %w", err)
	}
	if !locked {
		return st, fmt.Errorf("prune: %w", ErrPruning)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, lockPrune)

	if err := d.pruneRuns(ctx, now, p, &st); err != nil {
		return st, fmt.Errorf("prune runs: %w", err)
	}
	if !p.DryRun && st.Runs+st.Skipped > 0 {
		// What the deleted runs held (their TOAST chunks, their search
		// index entries) is reusable after a VACUUM; autovacuum would
		// come in its time (a minute or more), while runs with large
		// outputs kept growing the files.
		if _, err := conn.Exec(ctx, `VACUUM runs`); err != nil {
			return st, fmt.Errorf("prune runs: vacuum: %w", err)
		}
		if err := reindexSearch(ctx, conn); err != nil {
			return st, fmt.Errorf("prune runs: %w", err)
		}
	}
	if p.Events > 0 {
		n, b, err := d.deleteBatches(ctx, p, `DELETE FROM events WHERE seq IN (SELECT seq FROM events
			WHERE dispatched AND time < $1 ORDER BY seq LIMIT %d)`,
			`SELECT count(*) FROM events WHERE dispatched AND time < $1`, timeInt(now.Add(-p.Events)))
		st.Events, st.Batches = n, st.Batches+b
		if err != nil {
			return st, fmt.Errorf("prune events: %w", err)
		}
	}
	st.Took = clock.Since(d.clock, start)
	return st, nil
}

func (d *DB) pruneRuns(ctx context.Context, now time.Time, p store.PrunePolicy, st *store.PruneStats) error {
	if p.Skipped > 0 {
		n, b, err := d.deleteBatches(ctx, p, `DELETE FROM runs WHERE seq IN (SELECT seq FROM runs
			WHERE status = ANY($2) AND finished_at < $1 AND id NOT IN `+sqlProtected+`
			ORDER BY seq LIMIT %d)`,
			`SELECT count(*) FROM runs WHERE status = ANY($2) AND finished_at < $1 AND id NOT IN `+sqlProtected,
			timeInt(now.Add(-p.Skipped)), skipRecords)
		st.Skipped, st.Batches = n, st.Batches+b
		if err != nil {
			return err
		}
	}
	hooks, err := d.runHooks(ctx)
	if err != nil {
		return err
	}
	for _, h := range hooks {
		r := p.Retention.For(p.Hooks[h])
		if r.Runs <= 0 {
			continue
		}
		keep, err := d.keepSeq(ctx, h, r.KeepLast)
		if err != nil {
			return err
		}
		// $1 cutoff, $2 statuses, $3 the hook, $4 keepSeq.
		cond := `hook = $3 AND status = ANY($2) AND finished_at < $1 AND seq < $4
			AND id NOT IN ` + sqlProtected + `
			AND seq <> coalesce((SELECT max(seq) FROM runs WHERE hook = $3 AND fingerprint <> ''), 0)`
		n, b, err := d.deleteBatches(ctx, p,
			`DELETE FROM runs WHERE seq IN (SELECT seq FROM runs WHERE `+cond+` ORDER BY seq LIMIT %d)`,
			`SELECT count(*) FROM runs WHERE `+cond,
			timeInt(now.Add(-r.Runs)), retainedRuns, h, keep)
		st.Runs, st.Batches = st.Runs+n, st.Batches+b
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// deleteBatches runs del (a DELETE whose %d is the batch size) with args
// until it deletes fewer than a batch, each in a transaction of its own,
// and returns how many rows it deleted in how many batches; on a dry run
// it counts them with count (the same args) instead.
func (d *DB) deleteBatches(ctx context.Context, p store.PrunePolicy, del, count string, args ...any) (n int64, batches int, err error) {
	del = fmt.Sprintf(del, p.Batch)
	if p.DryRun {
		if err := d.pool.QueryRow(ctx, count, args...).Scan(&n); err != nil {
			return 0, 0, err
		}
		return n, int((n + int64(p.Batch) - 1) / int64(p.Batch)), nil
	}
	for {
		tag, err := d.pool.Exec(ctx, del, args...)
		if err != nil {
			return n, batches, err
		}
		k := tag.RowsAffected()
		if k > 0 {
			n += k
			batches++
		}
		if k < int64(p.Batch) {
			return n, batches, nil
		}
		if err := ctx.Err(); err != nil {
			return n, batches, err
		}
	}
}

// runHooks returns the names of the hooks that have runs.
func (d *DB) runHooks(ctx context.Context) ([]string, error) {
	rows, err := d.pool.Query(ctx, `SELECT DISTINCT hook FROM runs ORDER BY hook`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// keepSeq returns the seq of the hook's keep-th newest retained run (runs
// from it on are kept), or 0 when the hook has no more than keep of them;
// a keep of 0 keeps none.
func (d *DB) keepSeq(ctx context.Context, hook string, keep int) (int64, error) {
	if keep <= 0 {
		return 1<<63 - 1, nil
	}
	var seq int64
	err := d.pool.QueryRow(ctx, `SELECT seq FROM runs WHERE hook = $1 AND status = ANY($2)
		ORDER BY seq DESC LIMIT 1 OFFSET $3`, hook, retainedRuns, keep-1).Scan(&seq)
	if errNoRows(err) {
		return 0, nil
	}
	return seq, err
}

// Size returns the database's size: pg_database_size of the whole
// database (PostgreSQL keeps no separate write-ahead log per database,
// and reuses the space of deleted rows inside its files).
func (d *DB) Size(ctx context.Context) (store.Size, error) {
	n, err := d.Bytes(ctx)
	return store.Size{Bytes: n}, err
}
