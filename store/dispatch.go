package store

import (
	"context"
	"database/sql"
	"encoding/json"
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

var _ engine.EventStarter = (*DB)(nil)

// AppendPendingEvent stores an event marked not yet dispatched and sets
// ev.Seq, in one transaction. An ID stored before is not stored again: its
// Seq is set to the stored one and the error wraps
// engine.ErrDuplicateEvent.
func (d *DB) AppendPendingEvent(ctx context.Context, ev *engine.Event) error {
	row, err := newEventRow(ev, false)
	if err == nil {
		err = d.write(ctx, func(ctx context.Context, tx *sql.Tx) error { return d.insertEventRow(ctx, tx, row) })
	}
	if err != nil {
		return fmt.Errorf("append event %s: %w", ev.ID, err)
	}
	return nil
}

// MarkDispatched records that the event with this seq was dispatched.
func (d *DB) MarkDispatched(ctx context.Context, seq int64) error {
	err := d.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.StmtContext(ctx, d.stmtMarkEvt).ExecContext(ctx, seq)
		return err
	})
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
	var evs []*engine.Event
	for rows.Next() {
		var (
			ev   engine.Event
			data string
			t    sql.NullInt64
		)
		if err := rows.Scan(&ev.Seq, &ev.ID, &ev.Type, &data, &ev.Source, &t, &ev.Depth); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(data), &ev.Data); err != nil {
			return nil, fmt.Errorf("decode data of %s: %w", ev.ID, err)
		}
		ev.Time = nullTime(t)
		evs = append(evs, &ev)
	}
	return evs, rows.Err()
}
