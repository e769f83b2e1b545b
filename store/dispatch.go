package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hookd/hookd/engine"
)

// sqlEventDispatch adds the dispatch state of events (migration 2). Rows
// stored before it, and engine events (stored after they were dispatched),
// count as dispatched; AppendPendingEvent stores an event as not yet
// dispatched until MarkDispatched.
const sqlEventDispatch = `
ALTER TABLE events ADD COLUMN dispatched INTEGER NOT NULL DEFAULT 1;
CREATE INDEX events_pending ON events (seq) WHERE dispatched = 0;
`

// sqlDispatches is migration 14: which hooks a pending event reached
// (engine.Store.DispatchedTo). A row is written with the first
// record of each run the event triggers and with each merge of it into a
// pending run, in that write's transaction, and only while the event is
// pending; marking the event dispatched drops its rows. So the table holds
// the rows of pending events only: none once every event is dispatched.
const sqlDispatches = `
CREATE TABLE event_dispatches (
	seq    INTEGER NOT NULL,
	hook   TEXT    NOT NULL,
	run_id TEXT    NOT NULL,
	PRIMARY KEY (seq, hook)
) WITHOUT ROWID;
`

// sqlEventFate is migration 18: what became of an event once it was
// dispatched (engine.EventFate, JSON; NULL before, and for hookd's own
// events). It is a column of the event, so it is kept and pruned with it.
const sqlEventFate = `ALTER TABLE events ADD COLUMN fate TEXT;`

// sqlEventTrace is migration 22: the caller's trace an event continues
// (engine.Event.TraceParent).
const sqlEventTrace = `ALTER TABLE events ADD COLUMN trace_parent TEXT;`

// SetEventFate stores what became of the event with this seq.
func (d *DB) SetEventFate(ctx context.Context, seq int64, f *engine.EventFate) error {
	fate, err := FateArg(f)
	if err == nil {
		err = d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE events SET fate = ? WHERE seq = ?`, fate, seq)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("store the fate of event %d: %w", seq, err)
	}
	return nil
}

// sqlReached records that the pending event with seq (?1) reached hook
// (?2) with run id (?3); nothing for an event not pending, or a hook
// recorded already.
const sqlReached = `INSERT INTO event_dispatches (seq, hook, run_id)
	SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM events WHERE seq = ?1 AND dispatched = 0)
	ON CONFLICT (seq, hook) DO NOTHING`

// reached records, in tx, that the pending event with seq reached hook
// with run id (seq 0: nothing).
func (d *DB) reached(ctx context.Context, tx *sql.Tx, seq int64, hook, id string) error {
	if seq == 0 {
		return nil
	}
	_, err := tx.StmtContext(ctx, d.stmtReached).ExecContext(ctx, seq, hook, id)
	return err
}

// markIn marks the event with seq dispatched in tx and drops the records
// of the hooks it reached.
func (d *DB) markIn(ctx context.Context, tx *sql.Tx, seq int64) error {
	if _, err := tx.StmtContext(ctx, d.stmtMarkEvt).ExecContext(ctx, seq); err != nil {
		return err
	}
	_, err := tx.StmtContext(ctx, d.stmtUnreach).ExecContext(ctx, seq)
	return err
}

// AppendPendingEvent stores an event marked not yet dispatched and sets
// ev.Seq, in one transaction. An ID stored before is not stored again: its
// Seq is set to the stored one and the error wraps
// engine.ErrDuplicateEvent.
func (d *DB) AppendPendingEvent(ctx context.Context, ev *engine.Event) error {
	defer d.obs.EventsStored()
	row, err := newEventRow(ev, false)
	if err == nil {
		err = d.write(ctx, func(ctx context.Context, tx *sql.Tx) error { return d.insertEventRow(ctx, tx, row) })
	}
	if err != nil {
		return fmt.Errorf("append event %s: %w", ev.ID, err)
	}
	return nil
}

// MarkDispatched records that the event with this seq was dispatched and
// drops the records of the hooks it reached, in one transaction.
func (d *DB) MarkDispatched(ctx context.Context, seq int64) error {
	err := d.write(ctx, func(ctx context.Context, tx *sql.Tx) error { return d.markIn(ctx, tx, seq) })
	if err != nil {
		return fmt.Errorf("mark event %d dispatched: %w", seq, err)
	}
	return nil
}

// PendingEvents returns up to limit events not yet dispatched, oldest
// first. A limit of 0 or less means 50.
func (d *DB) PendingEvents(ctx context.Context, limit int) ([]*engine.Event, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	evs, err := d.queryEvents(ctx, `SELECT `+eventCols+` FROM events
		WHERE dispatched = 0 ORDER BY seq LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("read pending events: %w", err)
	}
	return evs, nil
}

// DispatchedTo returns the hooks the pending event with this seq reached
// (engine.Store.DispatchedTo), sorted.
func (d *DB) DispatchedTo(ctx context.Context, seq int64) ([]string, error) {
	rows, err := d.r.QueryContext(ctx, `SELECT hook FROM event_dispatches WHERE seq = ? ORDER BY hook`, seq)
	if err != nil {
		return nil, fmt.Errorf("read the hooks event %d reached: %w", seq, err)
	}
	defer rows.Close()
	var hooks []string
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, fmt.Errorf("read the hooks event %d reached: %w", seq, err)
		}
		hooks = append(hooks, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the hooks event %d reached: %w", seq, err)
	}
	return hooks, nil
}

// EventsAfter returns up to limit stored events whose seq is greater than
// after, oldest first: the event log read forward, for the live stream.
// Writes are serialized, so seqs become visible in order and a reader that
// sees seq N has seen every event before it. A limit of 0 or less means 50.
func (d *DB) EventsAfter(ctx context.Context, after int64, limit int) ([]*engine.Event, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	evs, err := d.queryEvents(ctx, `SELECT `+eventCols+` FROM events
		WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read events after %d: %w", after, err)
	}
	return evs, nil
}

// LastEventSeq returns the seq of the latest stored event, 0 when there is
// none.
func (d *DB) LastEventSeq(ctx context.Context) (int64, error) {
	var seq int64
	if err := d.r.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM events`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read last event seq: %w", err)
	}
	return seq, nil
}

// queryEvents runs a query on the read pool that selects eventCols.
func (d *DB) queryEvents(ctx context.Context, q string, args ...any) ([]*engine.Event, error) {
	rows, err := d.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return Collect(rows, ScanEvent)
}
