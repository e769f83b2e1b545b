package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/jackc/pgx/v5"
)

// Observe sets what the store tells of its writes.
func (d *DB) Observe(o engine.StoreObserver) { d.obs.Set(o) }

// AppendEvent stores an event and sets ev.Seq. An event without an ID
// gets a new ULID; an ID stored before is not stored again: its Seq is
// set to the stored one and the error wraps engine.ErrDuplicateEvent.
func (d *DB) AppendEvent(ctx context.Context, ev *engine.Event) error {
	defer d.obs.EventsStored()
	err := d.eventTx(ctx, func(tx pgx.Tx) error { return insertEvent(ctx, tx, ev, true) })
	if err != nil {
		return fmt.Errorf("append event %s: %w", ev.ID, err)
	}
	return nil
}

// AppendEvents stores events in one transaction, in order, setting each
// one's Seq. IDs stored before are skipped; any other error stores none.
func (d *DB) AppendEvents(ctx context.Context, evs []*engine.Event) error {
	defer d.obs.EventsStored()
	err := d.eventTx(ctx, func(tx pgx.Tx) error {
		for _, ev := range evs {
			if err := insertEvent(ctx, tx, ev, true); err != nil && !errors.Is(err, engine.ErrDuplicateEvent) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("append %d events: %w", len(evs), err)
	}
	return nil
}

// AppendEventsLater stores events as AppendEvents does. PostgreSQL has
// no group commit to join: they take a transaction of their own at once.
func (d *DB) AppendEventsLater(ctx context.Context, evs []*engine.Event) error {
	return d.AppendEvents(ctx, evs)
}

// AppendPendingEvent stores an event marked not yet dispatched and sets
// ev.Seq. A duplicate ID gives engine.ErrDuplicateEvent and the stored
// Seq.
func (d *DB) AppendPendingEvent(ctx context.Context, ev *engine.Event) error {
	defer d.obs.EventsStored()
	err := d.eventTx(ctx, func(tx pgx.Tx) error { return insertEvent(ctx, tx, ev, false) })
	if err != nil {
		return fmt.Errorf("append event %s: %w", ev.ID, err)
	}
	return nil
}

// eventTx runs fn in a transaction that holds the events lock, so that
// events commit in the order of their seqs (see the package doc).
func (d *DB) eventTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return d.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockEvents); err != nil {
			return fmt.Errorf("lock the event log: %w", err)
		}
		return fn(tx)
	})
}

// insertEvent inserts one event within tx and sets its Seq, returning
// engine.ErrDuplicateEvent for an ID stored before.
func insertEvent(ctx context.Context, tx pgx.Tx, ev *engine.Event, dispatched bool) error {
	if ev.Type == "" {
		return fmt.Errorf("event %s: empty type", ev.ID)
	}
	data := "{}"
	if ev.Data != nil {
		b, err := engine.MarshalData(ev.Data)
		if err != nil {
			return fmt.Errorf("event %s: encode data: %w", ev.ID, err)
		}
		data = string(b)
	}
	fate, err := store.FateArg(ev.Fate)
	if err != nil {
		return fmt.Errorf("event %s: %w", ev.ID, err)
	}
	if ev.ID == "" {
		ev.ID = engine.NewID()
	}
	err = tx.QueryRow(ctx, `INSERT INTO events (id, type, data, source, time, depth, dispatched, fate, trace_parent)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING RETURNING seq`,
		ev.ID, ev.Type, data, ev.Source, timeArg(ev.Time), ev.Depth, dispatched, fate, store.TraceArg(ev.TraceParent, ev.TraceLink)).Scan(&ev.Seq)
	if err == nil {
		return nil
	}
	if !errNoRows(err) {
		return err
	}
	if err := tx.QueryRow(ctx, `SELECT seq FROM events WHERE id = $1`, ev.ID).Scan(&ev.Seq); err != nil {
		return err
	}
	return engine.ErrDuplicateEvent
}

const eventCols = store.EventCols

// ListEvents returns stored events of type typ ("" for all), newest
// first. A limit of 0 or less means 50.
func (d *DB) ListEvents(ctx context.Context, typ string, limit int) ([]*engine.Event, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	var (
		evs []*engine.Event
		err error
	)
	if typ == "" {
		evs, err = d.queryEvents(ctx, `SELECT `+eventCols+` FROM events ORDER BY seq DESC LIMIT $1`, limit)
	} else {
		evs, err = d.queryEvents(ctx, `SELECT `+eventCols+` FROM events WHERE type = $1
			ORDER BY seq DESC LIMIT $2`, typ, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return evs, nil
}

// sqlEventFate is migration 13: what became of an event once it was
// dispatched (engine.EventFate, JSON), as in the SQLite store: a column
// of the event, kept and pruned with it.
const sqlEventFate = `ALTER TABLE events ADD COLUMN IF NOT EXISTS fate TEXT;`

// sqlEventTrace is migration 17: the caller's trace an event continues
// (engine.Event.TraceParent).
const sqlEventTrace = `ALTER TABLE events ADD COLUMN IF NOT EXISTS trace_parent TEXT;`

// SetEventFate stores what became of the event with this seq.
func (d *DB) SetEventFate(ctx context.Context, seq int64, f *engine.EventFate) error {
	fate, err := store.FateArg(f)
	if err == nil {
		_, err = d.pool.Exec(ctx, `UPDATE events SET fate = $1 WHERE seq = $2`, fate, seq)
	}
	if err != nil {
		return fmt.Errorf("store the fate of event %d: %w", seq, err)
	}
	return nil
}

// sqlDispatches is migration 10: which hooks a pending event reached
// (engine.Store.DispatchedTo), as in the SQLite store: a row is
// written with the first record of each run the event triggers (a
// release included) and with each merge of it into a pending run, in that
// write's transaction, only while the event is pending; marking the
// event dispatched drops its rows.
const sqlDispatches = `
CREATE TABLE IF NOT EXISTS event_dispatches (
	seq    BIGINT NOT NULL,
	hook   TEXT   NOT NULL,
	run_id TEXT   NOT NULL,
	PRIMARY KEY (seq, hook)
);
`

// reached records, in tx, that the pending event with seq reached hook
// with run id; nothing for seq 0, an event not pending, or a hook
// recorded already.
func reached(ctx context.Context, tx pgx.Tx, seq int64, hook, id string) error {
	if seq == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO event_dispatches (seq, hook, run_id)
		SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM events WHERE seq = $1 AND NOT dispatched)
		ON CONFLICT (seq, hook) DO NOTHING`, seq, hook, id)
	return err
}

// markIn marks the event with seq dispatched in tx and drops the records
// of the hooks it reached.
func markIn(ctx context.Context, tx pgx.Tx, seq int64) error {
	if _, err := tx.Exec(ctx, `UPDATE events SET dispatched = true WHERE seq = $1 AND NOT dispatched`, seq); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM event_dispatches WHERE seq = $1`, seq)
	return err
}

// MarkDispatched records that the event with this seq was dispatched and
// drops the records of the hooks it reached, in one transaction.
func (d *DB) MarkDispatched(ctx context.Context, seq int64) error {
	if err := d.tx(ctx, func(tx pgx.Tx) error { return markIn(ctx, tx, seq) }); err != nil {
		return fmt.Errorf("mark event %d dispatched: %w", seq, err)
	}
	return nil
}

// DispatchedTo returns the hooks the pending event with this seq reached
// (engine.Store.DispatchedTo), sorted.
func (d *DB) DispatchedTo(ctx context.Context, seq int64) ([]string, error) {
	rows, err := d.pool.Query(ctx, `SELECT hook FROM event_dispatches WHERE seq = $1 ORDER BY hook`, seq)
	if err != nil {
		return nil, fmt.Errorf("read the hooks event %d reached: %w", seq, err)
	}
	hooks, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the hooks event %d reached: %w", seq, err)
	}
	return hooks, nil
}

// PendingEvents returns up to limit events not yet dispatched, oldest
// first. A limit of 0 or less means 50.
func (d *DB) PendingEvents(ctx context.Context, limit int) ([]*engine.Event, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	evs, err := d.queryEvents(ctx, `SELECT `+eventCols+` FROM events
		WHERE NOT dispatched ORDER BY seq LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("read pending events: %w", err)
	}
	return evs, nil
}

// EventsAfter returns up to limit events whose seq is greater than after,
// oldest first. Events commit in seq order (the events lock), so a reader
// that sees seq N has seen every event before it. A limit of 0 or less
// means 50.
func (d *DB) EventsAfter(ctx context.Context, after int64, limit int) ([]*engine.Event, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	evs, err := d.queryEvents(ctx, `SELECT `+eventCols+` FROM events
		WHERE seq > $1 ORDER BY seq LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read events after %d: %w", after, err)
	}
	return evs, nil
}

// LastEventSeq returns the seq of the latest stored event, 0 when none.
func (d *DB) LastEventSeq(ctx context.Context) (int64, error) {
	var seq int64
	if err := d.pool.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM events`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read last event seq: %w", err)
	}
	return seq, nil
}

func (d *DB) queryEvents(ctx context.Context, q string, args ...any) ([]*engine.Event, error) {
	rows, err := d.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.Collect(rows, store.ScanEvent)
}
