package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/hookd/hookd/engine"
)

// collapsible reports whether r is a record that repeats as long as its
// hook stays paused or disabled, one per trigger: those are merged.
func collapsible(r *engine.Run) bool {
	return r.Status == engine.StatusSkipped && (r.Gate == engine.GatePaused || r.Gate == engine.GateDisabled)
}

// insertOrCollapse inserts r within tx, or, when r is collapsible and the
// hook's latest record is the same refusal (status, gate, reason, trigger
// and event type), merges r into that record: its repeats grow by one and
// its finished_at, event and slot become r's, so one record with a count
// and a time range (queued_at to finished_at) stands for them all. r then
// takes the record's ID, QueuedAt and Repeats. args are RunArgs(r).
func (d *DB) insertOrCollapse(ctx context.Context, tx *sql.Tx, r *engine.Run, args []any) error {
	if collapsible(r) {
		out, err := outcomeArg(r)
		if err != nil {
			return err
		}
		var (
			seq     int64
			id      string
			queued  sql.NullInt64
			repeats int
		)
		err = tx.QueryRowContext(ctx, `SELECT seq, id, queued_at, repeats FROM
			(SELECT * FROM runs WHERE hook = ? ORDER BY seq DESC LIMIT 1)
			WHERE status = ? AND reason = ? AND "trigger" = ? AND event_type = ? AND outcome IS ?`,
			r.Hook, string(r.Status), r.Reason, r.Trigger, r.EventType, out).Scan(&seq, &id, &queued, &repeats)
		switch {
		case err == nil:
			_, err = tx.ExecContext(ctx, `UPDATE runs SET repeats = repeats + 1, finished_at = ?,
				event = ?, slot = coalesce(?, slot) WHERE seq = ?`,
				timeArg(r.FinishedAt), RawArg(r.Event), timeArg(r.Slot), seq)
			if err != nil {
				return err
			}
			r.ID, r.QueuedAt, r.Repeats = id, nullTime(queued), repeats+1
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
	}
	_, err := tx.StmtContext(ctx, d.stmtInsertRun).ExecContext(ctx, args...)
	return err
}
