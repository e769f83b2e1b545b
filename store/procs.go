package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/hookd/hookd/engine"
)

// sqlRunProcs adds the column that holds the process groups a run's steps
// started (a JSON list of engine.ProcGroup), written as each starts, so a
// hookd started after a crash finds what the dead one left running.
const sqlRunProcs = `ALTER TABLE runs ADD COLUMN procs TEXT;`

// AddRunProc appends a process group to the record of run id. The daemon
// records groups in its process journal instead (engine.ProcJournal); the
// column stays, read by RecoverInterrupted after a crash of a hookd that
// wrote it, and this for an engine without a journal.
func (d *DB) AddRunProc(ctx context.Context, id string, g engine.ProcGroup) error {
	b, err := json.Marshal(g)
	if err != nil {
		return fmt.Errorf("record process group of run %s: %w", id, err)
	}
	err = d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.StmtContext(ctx, d.stmtAddProc).ExecContext(ctx, string(b), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("record process group of run %s: %w", id, err)
	}
	return nil
}

// runningProcs returns, in tx, the process groups of the runs marked
// running, by run id.
func runningProcs(ctx context.Context, tx *sql.Tx) (map[string][]engine.ProcGroup, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id, procs FROM runs WHERE status = ? AND procs IS NOT NULL`,
		string(engine.StatusRunning))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]engine.ProcGroup{}
	for rows.Next() {
		var id, procs string
		if err := rows.Scan(&id, &procs); err != nil {
			return nil, err
		}
		var gs []engine.ProcGroup
		if err := json.Unmarshal([]byte(procs), &gs); err != nil {
			return nil, fmt.Errorf("decode process groups of run %s: %w", id, err)
		}
		out[id] = gs
	}
	return out, rows.Err()
}
