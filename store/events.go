package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/hookd/hookd/engine"
)

// Observe sets what the store tells of its writes.
func (d *DB) Observe(o engine.StoreObserver) { d.obs.Set(o) }

// AppendEvent stores an event and sets ev.Seq. An event without an ID gets
// a new ULID. An event whose ID was stored before is not stored again: its
// Seq is set to the stored one and the error wraps
// engine.ErrDuplicateEvent, which makes publishing with a client-chosen ID
// idempotent.
func (d *DB) AppendEvent(ctx context.Context, ev *engine.Event) error {
	defer d.obs.EventsStored()
	row, err := newEventRow(ev, true)
	if err != nil {
		return fmt.Errorf("append event %s: %w", ev.ID, err)
	}
	err = d.write(ctx, func(ctx context.Context, tx *sql.Tx) error { return d.insertEventRow(ctx, tx, row) })
	if err != nil {
		return fmt.Errorf("append event %s: %w", ev.ID, err)
	}
	return nil
}

// AppendEvents stores events in one transaction, in order, setting each
// one's Seq. Events whose ID was stored before are skipped (their Seq is
// the stored one); any other error stores none of them.
func (d *DB) AppendEvents(ctx context.Context, evs []*engine.Event) error {
	defer d.obs.EventsStored()
	write, err := d.insertEvents(evs)
	if err == nil {
		err = d.write(ctx, write)
	}
	if err != nil {
		return fmt.Errorf("append %d events: %w", len(evs), err)
	}
	return nil
}

// AppendEventsLater is AppendEvents for events that can wait a few
// milliseconds to be stored: they join the next commit of the store's
// other writes (a run's start, process group or end), or one of their
// own at most LaterDelay after they came (see group.go). It returns once
// they are stored.
func (d *DB) AppendEventsLater(ctx context.Context, evs []*engine.Event) error {
	defer d.obs.EventsStored()
	write, err := d.insertEvents(evs)
	if err == nil {
		err = d.writeLater(ctx, write)
	}
	if err != nil {
		return fmt.Errorf("append %d events: %w", len(evs), err)
	}
	return nil
}

// eventRow is an event ready to insert: its data encoded, its ID set.
// Events are encoded before their write joins a transaction, so that the
// encoding does not hold the writer.
type eventRow struct {
	ev   *engine.Event
	data string
	time any
	disp bool // stored dispatched (else pending, see dispatch.go)
	fate any  // its fate encoded (FateArg)
}

// newEventRow checks ev, gives it an ID if it has none, and encodes its
// data.
func newEventRow(ev *engine.Event, dispatched bool) (eventRow, error) {
	if ev.Type == "" {
		return eventRow{}, fmt.Errorf("event %s: empty type", ev.ID)
	}
	data := "{}"
	if ev.Data != nil {
		b, err := engine.MarshalData(ev.Data)
		if err != nil {
			return eventRow{}, fmt.Errorf("event %s: encode data: %w", ev.ID, err)
		}
		data = string(b)
	}
	fate, err := FateArg(ev.Fate)
	if err != nil {
		return eventRow{}, fmt.Errorf("event %s: %w", ev.ID, err)
	}
	if ev.ID == "" {
		ev.ID = engine.NewID()
	}
	return eventRow{ev: ev, data: data, time: timeArg(ev.Time), disp: dispatched, fate: fate}, nil
}

// args appends the values of the row's placeholders in sqlInsertEvents.
func (r *eventRow) args(dst []any) []any {
	ev := r.ev
	return append(dst, ev.ID, ev.Type, r.data, ev.Source, r.time, ev.Depth, r.disp, r.fate, TraceArg(ev.TraceParent, ev.TraceLink))
}

// eventArgs is the number of placeholders of an event in sqlInsertEvents.
const eventArgs = 9

// sqlInsertEvents inserts n events; an ID stored before is skipped.
func sqlInsertEvents(n int) string {
	return `INSERT INTO events (id, type, data, source, time, depth, dispatched, fate, trace_parent) VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?), ", n), ", ") +
		` ON CONFLICT (id) DO NOTHING`
}

// eventChunks are the numbers of rows of the prepared multi-row inserts
// of events (stmtInsertEvts), largest first: a batch is stored with the
// fewest of them (a run's four lifecycle events with one statement, not
// four).
var eventChunks = [...]int{16, 8, 4, 2, 1}

// insertEvents encodes evs and returns the write of AppendEvents: evs in
// as few statements as eventChunks allow.
func (d *DB) insertEvents(evs []*engine.Event) (func(ctx context.Context, tx *sql.Tx) error, error) {
	rows := make([]eventRow, len(evs))
	for i, ev := range evs {
		var err error
		if rows[i], err = newEventRow(ev, true); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context, tx *sql.Tx) error {
		args := make([]any, 0, eventArgs*min(len(rows), eventChunks[0]))
		for rest := rows; len(rest) > 0; {
			c := 0
			for eventChunks[c] > len(rest) {
				c++
			}
			n := eventChunks[c]
			chunk := rest[:n]
			rest = rest[n:]
			args = args[:0]
			for i := range chunk {
				args = chunk[i].args(args)
			}
			res, err := tx.StmtContext(ctx, d.stmtInsertEvts[c]).ExecContext(ctx, args...)
			if err != nil {
				return err
			}
			if err := d.eventSeqs(ctx, tx, res, chunk); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// eventSeqs sets the Seq of the events one insert statement was given.
// When it inserted them all, they took consecutive seqs, the last of
// which is the last insert rowid (AUTOINCREMENT gives each new row one
// more than the largest seq the table ever held, and this transaction
// holds the only writer); when it skipped an ID stored before, every seq
// is read back.
func (d *DB) eventSeqs(ctx context.Context, tx *sql.Tx, res sql.Result, chunk []eventRow) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == int64(len(chunk)) {
		last, err := res.LastInsertId()
		if err != nil {
			return err
		}
		for i := range chunk {
			chunk[i].ev.Seq = last - n + 1 + int64(i)
		}
		return nil
	}
	for i := range chunk {
		ev := chunk[i].ev
		if err := tx.StmtContext(ctx, d.stmtEventSeq).QueryRowContext(ctx, ev.ID).Scan(&ev.Seq); err != nil {
			return fmt.Errorf("read seq of event %s: %w", ev.ID, err)
		}
	}
	return nil
}

// insertEvent inserts one event within tx, marked dispatched or pending,
// and sets its Seq, returning engine.ErrDuplicateEvent for an ID stored
// before.
func (d *DB) insertEvent(ctx context.Context, tx *sql.Tx, ev *engine.Event, dispatched bool) error {
	row, err := newEventRow(ev, dispatched)
	if err != nil {
		return err
	}
	return d.insertEventRow(ctx, tx, row)
}

// insertEventRow is insertEvent of an event newEventRow prepared.
func (d *DB) insertEventRow(ctx context.Context, tx *sql.Tx, row eventRow) error {
	ev := row.ev
	res, err := tx.StmtContext(ctx, d.stmtInsertEvts[len(eventChunks)-1]).ExecContext(ctx, row.args(make([]any, 0, eventArgs))...)
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
	if err := tx.StmtContext(ctx, d.stmtEventSeq).QueryRowContext(ctx, ev.ID).Scan(&ev.Seq); err != nil {
		return err
	}
	return engine.ErrDuplicateEvent
}

// eventCols are the columns queryEvents reads, in its order.
const eventCols = EventCols

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
		if !runEventType(typ) {
			q += ` AND type NOT IN ` + sqlRunEventTypes // lets SQLite use events_type_seq_other
		}
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

// sqlEventsByType (migration 13) takes the events every run stores (its
// start and end, its steps' start and end: sqlRunEventTypes) out of the
// index of events by type. That index has a last leaf page per type, so a
// commit holding a run's four lifecycle events wrote four more pages to
// the log, a quarter of all a run writes; now a run's events touch only
// the pages at the end of the events table and of its ID index. Listing
// events of one of these types walks the table from its newest event,
// among which they are common (four a run); every other type (events
// clients send, a run's failure, cancellation or skip, denied tools)
// stays indexed.
const sqlEventsByType = `
DROP INDEX events_type_seq;
CREATE INDEX events_type_seq_other ON events (type, seq) WHERE type NOT IN ` + sqlRunEventTypes + `;
`

// sqlRunEventTypes are the types events_type_seq_other leaves out,
// written as its migration wrote them: a query uses the partial index only
// when its WHERE holds this very condition. Changing it needs a migration
// that recreates the index.
const sqlRunEventTypes = `('hook.run.started', 'hook.run.completed', 'hook.step.started', 'hook.step.finished')`

// runEventType reports whether typ is one of sqlRunEventTypes.
func runEventType(typ string) bool {
	switch typ {
	case engine.EventRunStarted, engine.EventRunCompleted, engine.EventStepStarted, engine.EventStepFinished:
		return true
	}
	return false
}
