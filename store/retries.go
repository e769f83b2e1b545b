package store

import (
	"context"
	"fmt"
	"time"

	"github.com/hookd/hookd/engine"
)

// sqlRetries adds the table of pending retries: a failed run's retry
// waiting for its time (retry: in a hook), kept so that a restart keeps
// the schedule. A row is deleted once its retry fired; the retry's run
// then has the row's id.
const sqlRetries = `CREATE TABLE retries (
	run_id     TEXT    PRIMARY KEY,
	hook       TEXT    NOT NULL,
	retry_of   TEXT    NOT NULL,
	attempt    INTEGER NOT NULL,
	attempts   INTEGER NOT NULL,
	due_at     INTEGER NOT NULL,
	event      TEXT,
	event_type TEXT    NOT NULL DEFAULT '',
	depth      INTEGER NOT NULL DEFAULT 0
);`

// sqlRetryTrace is migration 26: the trace of a pending retry
// (engine.PendingRetry.TraceParent, or else its TraceLink), the caller's
// trace the failed run continued, as TraceArg writes it.
const sqlRetryTrace = `ALTER TABLE retries ADD COLUMN trace_parent TEXT;`

// AddRetry records a pending retry.
func (d *DB) AddRetry(ctx context.Context, r *engine.PendingRetry) error {
	_, err := d.w.ExecContext(ctx, `INSERT INTO retries (`+RetryCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, RetryArgs(r)...)
	if err != nil {
		return fmt.Errorf("add retry of run %s: %w", r.RetryOf, err)
	}
	return nil
}

// PendingRetries returns the pending retries, earliest due first.
func (d *DB) PendingRetries(ctx context.Context) ([]*engine.PendingRetry, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT `+RetryCols+` FROM retries ORDER BY due_at, run_id`)
	if err != nil {
		return nil, fmt.Errorf("list pending retries: %w", err)
	}
	defer rows.Close()
	out, err := Collect(rows, ScanRetry)
	if err != nil {
		return nil, fmt.Errorf("list pending retries: %w", err)
	}
	return out, nil
}

// DeleteRetry forgets a pending retry.
func (d *DB) DeleteRetry(ctx context.Context, runID string) error {
	if _, err := d.w.ExecContext(ctx, `DELETE FROM retries WHERE run_id = ?`, runID); err != nil {
		return fmt.Errorf("delete retry %s: %w", runID, err)
	}
	return nil
}

// StartsSince returns when hook's runs that started at or after since
// started, oldest first (rate: windows).
func (d *DB) StartsSince(ctx context.Context, hook string, since time.Time) ([]time.Time, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT started_at FROM runs WHERE hook = ? AND started_at >= ? ORDER BY started_at`,
		hook, timeInt(since))
	if err != nil {
		return nil, fmt.Errorf("list starts of %s: %w", hook, err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var ns int64
		if err := rows.Scan(&ns); err != nil {
			return nil, fmt.Errorf("list starts of %s: %w", hook, err)
		}
		out = append(out, intTime(ns))
	}
	return out, rows.Err()
}
