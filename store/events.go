package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hookd/hookd/engine"
)

// AppendEvent stores an event and sets ev.Seq. An event without an ID gets
// a new ULID. An event whose ID was stored before is not stored again: its
// Seq is set to the stored one and the error wraps
// engine.ErrDuplicateEvent, which makes publishing with a client-chosen ID
// idempotent.
func (d *DB) AppendEvent(ctx context.Context, ev *engine.Event) error {
	err := d.write(ctx, func(ctx context.Context, tx *sql.Tx) error { return d.insertEvent(ctx, tx, ev, true) })
	if err != nil {
		return fmt.Errorf("append event %s: %w", ev.ID, err)
	}
	return nil
}

// AppendEvents stores events in one transaction, in order, setting each
// one's Seq. Events whose ID was stored before are skipped (their Seq is
// the stored one); any other error stores none of them.
func (d *DB) AppendEvents(ctx context.Context, evs []*engine.Event) error {
	if err := d.write(ctx, d.insertEvents(evs)); err != nil {
		return fmt.Errorf("append %d events: %w", len(evs), err)
	}
	return nil
}

// AppendEventsLater is AppendEvents for events that can wait a few
// milliseconds to be stored: they join the next commit of the store's
// other writes (a run's start, process group or end), or one of their
// own at most LaterDelay after they came (see group.go). It returns once
// they are stored (engine.EventLogStore).
func (d *DB) AppendEventsLater(ctx context.Context, evs []*engine.Event) error {
	if err := d.writeLater(ctx, d.insertEvents(evs)); err != nil {
		return fmt.Errorf("append %d events: %w", len(evs), err)
	}
	return nil
}

// insertEvents is the write of AppendEvents.
func (d *DB) insertEvents(evs []*engine.Event) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		for _, ev := range evs {
			if err := d.insertEvent(ctx, tx, ev, true); err != nil && !errors.Is(err, engine.ErrDuplicateEvent) {
				return err
			}
		}
		return nil
	}
}

// insertEvent inserts one event within tx, marked dispatched or pending,
// and sets its Seq, returning engine.ErrDuplicateEvent for an ID stored
// before.
func (d *DB) insertEvent(ctx context.Context, tx *sql.Tx, ev *engine.Event, dispatched bool) error {
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
	if ev.ID == "" {
		ev.ID = engine.NewID()
	}
	res, err := tx.StmtContext(ctx, d.stmtInsertEvt).ExecContext(ctx,
		ev.ID, ev.Type, data, ev.Source, timeArg(ev.Time), ev.Depth, dispatched)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 1 {
		ev.Seq, err = res.LastInsertId()
		return err
	}
	if err := tx.QueryRowContext(ctx, `SELECT seq FROM events WHERE id = ?`, ev.ID).Scan(&ev.Seq); err != nil {
		return err
	}
	return engine.ErrDuplicateEvent
}

// eventCols are the columns queryEvents reads, in its order.
const eventCols = `seq, id, type, data, source, time, depth`

// ListEvents returns stored events of type typ ("" for all), newest first.
// A limit of 0 or less means 50.
func (d *DB) ListEvents(ctx context.Context, typ string, limit int) ([]*engine.Event, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	q := `SELECT ` + eventCols + ` FROM events`
	args := []any{}
	if typ != "" {
		q += ` WHERE type = ?`
		args = append(args, typ)
	}
	q += ` ORDER BY seq DESC LIMIT ?`
	args = append(args, limit)
	evs, err := d.queryEvents(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return evs, nil
}
