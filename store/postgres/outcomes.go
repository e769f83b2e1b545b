package postgres

import (
	"context"
	"fmt"

	"github.com/hookd/hookd/engine"
	"github.com/jackc/pgx/v5"
)

// sqlUntold is migration 23: a run a cluster node ended (FinishRunOn) or
// interrupted (RecoverNode, ExpireNodes) is untold, its outcome event not
// yet published, from the transaction that stores its end until the one
// in which a scheduler stores that event pending (engine.Cluster.Tell),
// so that a scheduler that dies in between leaves it to the next one
// (Member.Untold).
const sqlUntold = `
ALTER TABLE runs ADD COLUMN IF NOT EXISTS untold BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX IF NOT EXISTS runs_untold ON runs (seq) WHERE untold;
`

// Untold returns the runs whose end a node stored and whose outcome event
// no scheduler stored yet, oldest first.
func (m *Member) Untold(ctx context.Context) ([]*engine.Run, error) {
	runs, err := m.db.queryRuns(ctx, `SELECT `+runCols+`, seq FROM runs WHERE untold ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("list runs whose outcome is untold: %w", err)
	}
	return runs, nil
}

// Tell stores ev, the outcome event of run id, pending for the scheduler
// to dispatch, and that the run is untold no more, in one transaction
// fenced by the lease that also wakes the scheduler (ChannelEvents, at
// commit): see engine.Cluster.
func (m *Member) Tell(ctx context.Context, id string, ev *engine.Event) error {
	l, held := m.current()
	if !held {
		return fmt.Errorf("tell the outcome of run %s: %w", id, engine.ErrLeaseLost)
	}
	err := m.db.eventTx(m.fenced(ctx, l), func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE runs SET untold = false WHERE id = $1 AND untold`, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("run's outcome is told: %w", engine.ErrNotFound)
		}
		if err := insertEvent(ctx, tx, ev, false); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, 'outcome')`, ChannelEvents)
		return err
	})
	if err != nil {
		return fmt.Errorf("tell the outcome of run %s: %w", id, err)
	}
	m.db.obs.EventsStored()
	return nil
}
