package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hookd/hookd/engine"
)

// sqlOwed is migration 27: a run RecoverInterrupted marks interrupted is
// owed its follow-up (a retry, a rerun, or nothing, as the engine decides
// it) from the transaction that interrupts it until the one that stores
// that decision (Follow), so that a hookd killed, or a store failing, in
// between leaves it to the next hookd (Owed). Runs interrupted before
// this migration are owed nothing.
const sqlOwed = `
ALTER TABLE runs ADD COLUMN owed INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_owed ON runs (seq) WHERE owed;
`

// Owed returns the interrupted runs whose follow-up no engine stored
// yet, oldest first.
func (d *DB) Owed(ctx context.Context) ([]*engine.Run, error) {
	runs, err := d.queryRuns(ctx, `SELECT `+runCols+`, seq FROM runs WHERE owed ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("list interrupted runs owed a follow-up: %w", err)
	}
	return runs, nil
}

// Follow stores the follow-up decided for the interrupted run id (the
// pending retry retry, the pending rerun rerun, or neither) and that the
// run is owed nothing more, in one transaction: see engine.Store.
func (d *DB) Follow(ctx context.Context, id string, retry *engine.PendingRetry, rerun *engine.PendingRerun) error {
	err := d.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET owed = 0 WHERE id = ? AND owed`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("run is owed nothing: %w", engine.ErrNotFound)
		}
		if retry != nil {
			if _, err := tx.ExecContext(ctx, `INSERT INTO retries (`+RetryCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, RetryArgs(retry)...); err != nil {
				return err
			}
		}
		if rerun != nil {
			if _, err := tx.ExecContext(ctx, `INSERT INTO reruns (`+RerunCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, RerunArgs(rerun)...); err != nil {
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
