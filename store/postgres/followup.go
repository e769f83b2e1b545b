package postgres

import (
	"context"
	"fmt"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/jackc/pgx/v5"
)

// sqlOwed is migration 22: a run a cluster node interrupted (its node
// restarted, RecoverNode, or stopped heartbeating, ExpireNodes), or a
// single daemon did (RecoverInterrupted), is owed its follow-up (a retry,
// a rerun, or nothing, as the scheduler decides it: engine.Cluster.Follow,
// or a single daemon: engine.Store.Follow) from the transaction that
// interrupts it until the one that stores that decision, so that a
// scheduler (daemon) that dies in between leaves it to the next one
// (Owed).
const sqlOwed = `
ALTER TABLE runs ADD COLUMN IF NOT EXISTS owed BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX IF NOT EXISTS runs_owed ON runs (seq) WHERE owed;
`

// Owed returns the interrupted runs whose follow-up no scheduler stored
// yet, oldest first.
func (m *Member) Owed(ctx context.Context) ([]*engine.Run, error) { return m.db.Owed(ctx) }

// Owed returns the interrupted runs whose follow-up no engine stored
// yet, oldest first: a single daemon's (RecoverInterrupted), or a
// cluster's (Member.Owed).
func (d *DB) Owed(ctx context.Context) ([]*engine.Run, error) {
	runs, err := d.queryRuns(ctx, `SELECT `+runCols+`, seq FROM runs WHERE owed ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("list interrupted runs owed a follow-up: %w", err)
	}
	return runs, nil
}

// Follow stores the follow-up the scheduler decided for the interrupted
// run id (the pending retry retry, the pending rerun rerun, or neither)
// and that the run is owed nothing more, in one transaction fenced by the
// lease: see engine.Cluster.
func (m *Member) Follow(ctx context.Context, id string, retry *engine.PendingRetry, rerun *engine.PendingRerun) error {
	l, held := m.current()
	if !held {
		return fmt.Errorf("follow interrupted run %s: %w", id, engine.ErrLeaseLost)
	}
	return m.db.Follow(m.fenced(ctx, l), id, retry, rerun)
}

// Follow stores the follow-up decided for the interrupted run id (the
// pending retry retry, the pending rerun rerun, or neither) and that the
// run is owed nothing more, in one transaction (fenced when ctx is:
// Member.Follow): see engine.Store.
func (d *DB) Follow(ctx context.Context, id string, retry *engine.PendingRetry, rerun *engine.PendingRerun) error {
	err := d.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE runs SET owed = false WHERE id = $1 AND owed`, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("run is owed nothing: %w", engine.ErrNotFound)
		}
		if retry != nil {
			if _, err := tx.Exec(ctx, `INSERT INTO retries (`+store.RetryCols+`)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, store.RetryArgs(retry)...); err != nil {
				return err
			}
		}
		if rerun != nil {
			if _, err := tx.Exec(ctx, `INSERT INTO reruns (`+store.RerunCols+`)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, store.RerunArgs(rerun)...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("follow interrupted run %s: %w", id, err)
	}
	return nil
}
