package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/engine"
)

func TestAppendEventsBatch(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	if err := d.AppendEvent(ctx, &engine.Event{ID: "seen", Type: "a"}); err != nil {
		t.Fatal(err)
	}
	evs := []*engine.Event{{Type: "b"}, {ID: "seen", Type: "a"}, {Type: "c", Data: map[string]any{"k": 1.0}}}
	if err := d.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if evs[0].Seq == 0 || evs[2].Seq <= evs[0].Seq || evs[1].Seq != 1 {
		t.Errorf("seqs = %d %d %d", evs[0].Seq, evs[1].Seq, evs[2].Seq)
	}
	got, err := d.ListEvents(ctx, "", 10)
	if err != nil || len(got) != 3 {
		t.Fatalf("stored %d events (%v), want 3", len(got), err)
	}
	if err := d.AppendEvents(ctx, []*engine.Event{{Type: "d"}, {Type: ""}}); err == nil {
		t.Error("a batch with a bad event was stored")
	}
	if got, _ := d.ListEvents(ctx, "", 10); len(got) != 3 {
		t.Errorf("a failed batch stored %d events", len(got)-3)
	}
}

// TestAppendEventsChunks stores batches that take several multi-row
// inserts (eventChunks), with IDs stored before and repeated within the
// batch, after retention deleted the latest events: every event's Seq is
// the seq its ID is stored with, the new ones in batch order, above every
// seq the table held, and each stored event has its own data.
func TestAppendEventsChunks(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	seen := &engine.Event{ID: "seen", Type: "a"}
	mustRun(t, d.AppendEvent(ctx, seen))
	mustRun(t, d.AppendEvents(ctx, []*engine.Event{{ID: "gone1", Type: "g"}, {ID: "gone2", Type: "g"}}))
	if _, err := d.w.Exec(`DELETE FROM events WHERE type = 'g'`); err != nil { // a seq is never reused
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 3, 4, 7, 16, 31, 37} {
		for _, dups := range []bool{false, true} {
			var evs []*engine.Event
			copyOf := map[int]int{} // event i repeats the ID of event copyOf[i] of the batch
			for i := range n {
				ev := &engine.Event{Type: fmt.Sprintf("t%d", i%3), Data: map[string]any{"i": float64(i), "n": float64(n)}}
				if dups && i%5 == 2 {
					ev = &engine.Event{ID: "seen", Type: "a"}
				}
				if dups && i%7 == 3 && i > 0 { // the ID of an earlier event of this batch
					ev = &engine.Event{ID: evs[i-1].ID, Type: "x"}
					if ev.ID == "" {
						ev.ID = fmt.Sprintf("in-batch-%d-%d", n, i)
						evs[i-1].ID = ev.ID
					}
					copyOf[i] = i - 1
				}
				evs = append(evs, ev)
			}
			before, err := d.LastEventSeq(ctx)
			mustRun(t, err)
			mustRun(t, d.AppendEvents(ctx, evs))
			last := before
			for i, ev := range evs {
				var id, typ, data string
				if err := d.r.QueryRow(`SELECT id, type, data FROM events WHERE seq = ?`, ev.Seq).Scan(&id, &typ, &data); err != nil {
					t.Fatalf("n=%d dups=%v: event %d (%s) has seq %d, which holds nothing: %v", n, dups, i, ev.ID, ev.Seq, err)
				}
				if id != ev.ID {
					t.Fatalf("n=%d dups=%v: event %d (%s) has seq %d, which holds %s", n, dups, i, ev.ID, ev.Seq, id)
				}
				if j, ok := copyOf[i]; ok {
					if ev.Seq != evs[j].Seq {
						t.Errorf("n=%d: event %d repeats %s: seq %d, want %d", n, i, ev.ID, ev.Seq, evs[j].Seq)
					}
				} else if ev.Seq > before { // stored by this batch
					if ev.Seq <= last || typ != ev.Type || data != fmt.Sprintf(`{"i":%d,"n":%d}`, i, n) {
						t.Errorf("n=%d dups=%v: event %d: seq %d after %d, %s %s", n, dups, i, ev.Seq, last, typ, data)
					}
					last = ev.Seq
				} else if ev.ID != "seen" {
					t.Errorf("n=%d dups=%v: event %d (%s) got old seq %d", n, dups, i, ev.ID, ev.Seq)
				}
			}
			if ev := evs[len(evs)-1]; ev.ID == "seen" && ev.Seq != seen.Seq {
				t.Errorf("n=%d: the duplicate of seen has seq %d, want %d", n, ev.Seq, seen.Seq)
			}
		}
	}
}

// TestListEventsByType lists events by type in a log where a run's
// lifecycle events (out of the index by type since migration 13) are
// interleaved with others: each listing is right, newest first, and an
// indexed type's listing finds its rows through events_type_seq_other
// while a run's lifecycle type walks the log from its newest event.
func TestListEventsByType(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	types := []string{"deploy.done", engine.EventRunStarted, engine.EventStepStarted, engine.EventStepFinished,
		engine.EventRunCompleted, engine.EventRunFailed}
	var evs []*engine.Event
	for i := range 60 {
		evs = append(evs, &engine.Event{Type: types[i%len(types)], Data: map[string]any{"i": float64(i)}})
	}
	mustRun(t, d.AppendEvents(ctx, evs))
	for _, typ := range types {
		got, err := d.ListEvents(ctx, typ, 4)
		mustRun(t, err)
		if len(got) != 4 {
			t.Fatalf("ListEvents(%s) = %d events, want 4", typ, len(got))
		}
		for j, ev := range got {
			want := evs[len(evs)-len(types)+slices.Index(types, typ)-j*len(types)]
			if ev.Type != typ || ev.Seq != want.Seq {
				t.Errorf("ListEvents(%s)[%d] = %s seq %d, want seq %d", typ, j, ev.Type, ev.Seq, want.Seq)
			}
		}
	}
	for _, typ := range types {
		q := `SELECT ` + eventCols + ` FROM events WHERE type = ?`
		if !runEventType(typ) {
			q += ` AND type NOT IN ` + sqlRunEventTypes
		}
		plan := queryPlan(t, d, q+` ORDER BY seq DESC LIMIT ?`, typ, 50)
		indexed := strings.Contains(plan, "USING INDEX events_type_seq_other")
		if indexed == runEventType(typ) || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("ListEvents(%s): plan %s", typ, plan)
		}
	}
	// runEventType and the index's condition name the same types.
	for _, typ := range []string{engine.EventRunStarted, engine.EventRunCompleted, engine.EventStepStarted, engine.EventStepFinished} {
		if !runEventType(typ) || !strings.Contains(sqlRunEventTypes, "'"+typ+"'") {
			t.Errorf("%s: runEventType %v, in sqlRunEventTypes %v", typ, runEventType(typ), strings.Contains(sqlRunEventTypes, "'"+typ+"'"))
		}
	}
	if n := strings.Count(sqlRunEventTypes, "'"); n != 8 {
		t.Errorf("sqlRunEventTypes names %d types, runEventType 4", n/2)
	}
}

// TestEventsByTypeMigration: a database of schema 12 (every event in the
// index by type) keeps its events, listed by type as before, and loses
// the full index for the partial one.
func TestEventsByTypeMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hookd.db")
	db, err := sql.Open("sqlite3", path+"?_txlock=immediate")
	mustRun(t, err)
	mustRun(t, migrate(ctx, db, migrations[:12], clock.System{}))
	_, err = db.ExecContext(ctx, `INSERT INTO events (id, type, data) VALUES
		('e1', 'deploy.done', '{"n":1}'), ('e2', 'hook.run.started', '{}'), ('e3', 'hook.run.failed', '{}'),
		('e4', 'deploy.done', '{"n":2}'), ('e5', 'hook.run.started', '{}')`)
	mustRun(t, err)
	mustRun(t, db.Close())

	d, err := Open(path)
	mustRun(t, err)
	defer d.Close()
	for typ, want := range map[string][]string{
		"deploy.done": {"e4", "e1"}, engine.EventRunStarted: {"e5", "e2"}, engine.EventRunFailed: {"e3"}, "none": nil,
	} {
		evs, err := d.ListEvents(ctx, typ, 10)
		mustRun(t, err)
		var got []string
		for _, ev := range evs {
			got = append(got, ev.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("ListEvents(%s) = %v, want %v", typ, got, want)
		}
	}
	var idx []string
	rows, err := d.r.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' AND name LIKE 'events_type%'`)
	mustRun(t, err)
	for rows.Next() {
		var n string
		mustRun(t, rows.Scan(&n))
		idx = append(idx, n)
	}
	mustRun(t, rows.Err())
	if !slices.Equal(idx, []string{"events_type_seq_other"}) {
		t.Errorf("indexes of events by type: %v", idx)
	}
}

// queryPlan is SQLite's plan for q, its steps joined by "; ".
func queryPlan(t *testing.T, d *DB, q string, args ...any) string {
	t.Helper()
	rows, err := d.r.Query(`EXPLAIN QUERY PLAN `+q, args...)
	mustRun(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		mustRun(t, rows.Scan(&id, &parent, &notused, &detail))
		plan = append(plan, detail)
	}
	mustRun(t, rows.Err())
	return strings.Join(plan, "; ")
}
