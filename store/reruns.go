package store

import (
	"context"
	"fmt"

	"github.com/hookd/hookd/engine"
)

// sqlReruns is migration 21: the table of pending reruns, each the rerun
// of a run a crash interrupted (on_interrupted: rerun) that a daemonless
// command recovered, left for the next hookd that schedules
// (engine.PendingRerun). A row is deleted once its rerun started; the
// rerun's run then has the row's id.
const sqlReruns = `CREATE TABLE reruns (
	run_id      TEXT    PRIMARY KEY,
	hook        TEXT    NOT NULL,
	interrupted TEXT    NOT NULL,
	event       TEXT,
	event_type  TEXT    NOT NULL DEFAULT '',
	depth       INTEGER NOT NULL DEFAULT 0,
	planned_at  INTEGER NOT NULL
);`

// sqlRerunTrace is migration 24: the trace parent of a pending rerun
// (engine.PendingRerun.TraceParent), the caller's trace it continues.
const sqlRerunTrace = `ALTER TABLE reruns ADD COLUMN trace_parent TEXT;`

// AddRerun records a pending rerun.
func (d *DB) AddRerun(ctx context.Context, r *engine.PendingRerun) error {
	_, err := d.w.ExecContext(ctx, `INSERT INTO reruns (`+RerunCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, RerunArgs(r)...)
	if err != nil {
		return fmt.Errorf("add rerun of run %s: %w", r.Interrupted, err)
	}
	return nil
}

// PendingReruns returns the pending reruns, oldest planned first.
func (d *DB) PendingReruns(ctx context.Context) ([]*engine.PendingRerun, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT `+RerunCols+` FROM reruns ORDER BY planned_at, run_id`)
	if err != nil {
		return nil, fmt.Errorf("list pending reruns: %w", err)
	}
	defer rows.Close()
	out, err := Collect(rows, ScanRerun)
	if err != nil {
		return nil, fmt.Errorf("list pending reruns: %w", err)
	}
	return out, nil
}

// DeleteRerun forgets a pending rerun.
func (d *DB) DeleteRerun(ctx context.Context, runID string) error {
	if _, err := d.w.ExecContext(ctx, `DELETE FROM reruns WHERE run_id = ?`, runID); err != nil {
		return fmt.Errorf("delete rerun %s: %w", runID, err)
	}
	return nil
}
