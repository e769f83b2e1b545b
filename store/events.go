package store

import (
	"context"
	"database/sql"
	"encoding/json"
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
	if ev.Type == "" {
		return fmt.Errorf("append event %s: empty type", ev.ID)
	}
	data := "{}"
	if ev.Data != nil {
		b, err := json.Marshal(ev.Data)
		if err != nil {
			return fmt.Errorf("append event %s: encode data: %w", ev.ID, err)
		}
		data = string(b)
	}
	if ev.ID == "" {
		ev.ID = engine.NewID()
	}
	var seq int64
	err := d.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, d.stmtInsertEvt).ExecContext(ctx,
			ev.ID, ev.Type, data, ev.Source, timeArg(ev.Time), ev.Depth)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 1 {
			seq, err = res.LastInsertId()
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT seq FROM events WHERE id = ?`, ev.ID).Scan(&seq); err != nil {
			return err
		}
		return engine.ErrDuplicateEvent
	})
	if err == nil || errors.Is(err, engine.ErrDuplicateEvent) {
		ev.Seq = seq
	}
	if err != nil {
		return fmt.Errorf("append event %s: %w", ev.ID, err)
	}
	return nil
}

// ListEvents returns stored events of type typ ("" for all), newest first.
// A limit of 0 or less means 50.
func (d *DB) ListEvents(ctx context.Context, typ string, limit int) ([]*engine.Event, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	q := `SELECT seq, id, type, data, source, time, depth FROM events`
	args := []any{}
	if typ != "" {
		q += ` WHERE type = ?`
		args = append(args, typ)
	}
	q += ` ORDER BY seq DESC LIMIT ?`
	args = append(args, limit)
	rows, err := d.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
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
			return nil, fmt.Errorf("list events: %w", err)
		}
		if err := json.Unmarshal([]byte(data), &ev.Data); err != nil {
			return nil, fmt.Errorf("list events: decode data of %s: %w", ev.ID, err)
		}
		ev.Time = nullTime(t)
		evs = append(evs, &ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return evs, nil
}
