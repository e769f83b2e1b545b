package postgres

import (
	"context"
	"fmt"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
)

// sqlReruns is migration 16: the table of pending reruns, each the rerun
// of a run a crash interrupted (on_interrupted: rerun) that a daemonless
// command recovered, left for the next hookd that schedules, or that the
// cluster's scheduler decided (Member.Follow) (engine.PendingRerun). A
// row is deleted once its rerun started.
const sqlReruns = `CREATE TABLE IF NOT EXISTS reruns (
	run_id      TEXT    PRIMARY KEY,
	hook        TEXT    NOT NULL,
	interrupted TEXT    NOT NULL,
	event       TEXT,
	event_type  TEXT    NOT NULL DEFAULT '',
	depth       INTEGER NOT NULL DEFAULT 0,
	planned_at  BIGINT  NOT NULL
);`

// sqlRerunTrace is migration 19: the trace parent of a pending rerun
// (engine.PendingRerun.TraceParent), the caller's trace it continues.
const sqlRerunTrace = `ALTER TABLE reruns ADD COLUMN IF NOT EXISTS trace_parent TEXT;`

// AddRerun records a pending rerun.
func (d *DB) AddRerun(ctx context.Context, r *engine.PendingRerun) error {
	_, err := d.pool.Exec(ctx, `INSERT INTO reruns (`+store.RerunCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, store.RerunArgs(r)...)
	if err != nil {
		return fmt.Errorf("add rerun of run %s: %w", r.Interrupted, err)
	}
	return nil
}

// PendingReruns returns the pending reruns, oldest planned first.
func (d *DB) PendingReruns(ctx context.Context) ([]*engine.PendingRerun, error) {
	rows, err := d.pool.Query(ctx, `SELECT `+store.RerunCols+` FROM reruns ORDER BY planned_at, run_id`)
	if err != nil {
		return nil, fmt.Errorf("list pending reruns: %w", err)
	}
	defer rows.Close()
	out, err := store.Collect(rows, store.ScanRerun)
	if err != nil {
		return nil, fmt.Errorf("list pending reruns: %w", err)
	}
	return out, nil
}

// DeleteRerun forgets a pending rerun.
func (d *DB) DeleteRerun(ctx context.Context, runID string) error {
	if _, err := d.pool.Exec(ctx, `DELETE FROM reruns WHERE run_id = $1`, runID); err != nil {
		return fmt.Errorf("delete rerun %s: %w", runID, err)
	}
	return nil
}
