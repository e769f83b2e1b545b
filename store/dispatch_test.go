package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/hookd/hookd/engine"
)

func TestPendingEvents(t *testing.T) {
	ctx := context.Background()
	d, path := openTest(t)

	// Engine events (AppendEvents) and plain AppendEvent count as
	// dispatched; AppendPendingEvent does not, until MarkDispatched.
	mustRun(t, d.AppendEvents(ctx, []*engine.Event{{Type: "hook.run.started", Source: "engine"}}))
	mustRun(t, d.AppendEvent(ctx, &engine.Event{Type: "plain"}))
	a := &engine.Event{ID: "a", Type: "deploy.finished", Data: map[string]any{"env": "prod"}, Source: "api", Time: t0, Depth: 2}
	b := &engine.Event{ID: "b", Type: "deploy.started", Source: "api"}
	mustRun(t, d.AppendPendingEvent(ctx, a))
	mustRun(t, d.AppendPendingEvent(ctx, b))
	if a.Seq == 0 || b.Seq <= a.Seq {
		t.Fatalf("seqs %d, %d", a.Seq, b.Seq)
	}

	// A duplicate id is refused and keeps the first one's seq and state.
	dup := &engine.Event{ID: "a", Type: "deploy.finished"}
	if err := d.AppendPendingEvent(ctx, dup); !errors.Is(err, engine.ErrDuplicateEvent) || dup.Seq != a.Seq {
		t.Fatalf("duplicate: %v, seq %d (want %d)", err, dup.Seq, a.Seq)
	}

	pending, err := d.PendingEvents(ctx, 10)
	mustRun(t, err)
	if len(pending) != 2 || pending[0].ID != "a" || pending[1].ID != "b" {
		t.Fatalf("pending: %+v", pending)
	}
	if p := pending[0]; p.Seq != a.Seq || p.Data["env"] != "prod" || p.Source != "api" || !p.Time.Equal(t0) || p.Depth != 2 {
		t.Errorf("pending event read back as %+v", p)
	}
	if one, _ := d.PendingEvents(ctx, 1); len(one) != 1 || one[0].ID != "a" {
		t.Errorf("limit 1: %+v", one)
	}

	mustRun(t, d.MarkDispatched(ctx, a.Seq))
	mustRun(t, d.MarkDispatched(ctx, a.Seq)) // again: nothing to do
	pending, err = d.PendingEvents(ctx, 10)
	mustRun(t, err)
	if len(pending) != 1 || pending[0].ID != "b" {
		t.Fatalf("after marking a: %+v", pending)
	}

	// The state survives a reopen.
	mustRun(t, d.Close())
	d2, err := Open(path)
	mustRun(t, err)
	defer d2.Close()
	pending, err = d2.PendingEvents(ctx, 10)
	mustRun(t, err)
	if len(pending) != 1 || pending[0].ID != "b" {
		t.Fatalf("after reopen: %+v", pending)
	}
}

func TestEventsAfter(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	if seq, err := d.LastEventSeq(ctx); err != nil || seq != 0 {
		t.Fatalf("empty log: %d %v", seq, err)
	}
	var seqs []int64
	for i := range 5 {
		ev := &engine.Event{Type: "t", Data: map[string]any{"i": float64(i)}}
		if i%2 == 0 {
			mustRun(t, d.AppendEvent(ctx, ev))
		} else {
			mustRun(t, d.AppendPendingEvent(ctx, ev))
		}
		seqs = append(seqs, ev.Seq)
	}
	last, err := d.LastEventSeq(ctx)
	mustRun(t, err)
	if last != seqs[4] {
		t.Errorf("last seq %d, want %d", last, seqs[4])
	}
	evs, err := d.EventsAfter(ctx, seqs[1], 2)
	mustRun(t, err)
	if len(evs) != 2 || evs[0].Seq != seqs[2] || evs[1].Seq != seqs[3] || evs[0].Data["i"] != float64(2) {
		t.Errorf("after %d: %+v", seqs[1], evs)
	}
	if evs, _ := d.EventsAfter(ctx, last, 10); len(evs) != 0 {
		t.Errorf("after the last: %+v", evs)
	}
	if evs, _ := d.EventsAfter(ctx, 0, 0); len(evs) != 5 {
		t.Errorf("from the start: %d events", len(evs))
	}
}

// TestDispatchMigration: events stored before the dispatch state existed
// count as dispatched, so an upgrade does not dispatch history again.
func TestDispatchMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite3", path+"?_txlock=immediate")
	mustRun(t, err)
	mustRun(t, migrate(ctx, db, migrations[:1]))
	_, err = db.Exec(`INSERT INTO events (id, type) VALUES ('old', 'deploy.finished')`)
	mustRun(t, err)
	mustRun(t, db.Close())

	d, err := Open(path)
	mustRun(t, err)
	defer d.Close()
	pending, err := d.PendingEvents(ctx, 10)
	mustRun(t, err)
	if len(pending) != 0 {
		t.Errorf("an event stored before the upgrade is pending: %+v", pending)
	}
}

// StartRunDispatched starts the run and marks the event in one
// transaction; when the start is refused (a slot taken), the event stays
// pending.
func TestStartRunDispatched(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	ev := &engine.Event{ID: "e", Type: "deploy.finished"}
	mustRun(t, d.AppendPendingEvent(ctx, ev))
	r := &engine.Run{ID: "r1", Hook: "h", Trigger: "event", StartedAt: t0}
	mustRun(t, d.StartRunDispatched(ctx, r, ev.Seq))
	if p, err := d.PendingEvents(ctx, 10); err != nil || len(p) != 0 {
		t.Errorf("pending after StartRunDispatched: %+v %v", p, err)
	}
	if got, err := d.GetRun(ctx, "r1"); err != nil || got.Status != engine.StatusRunning {
		t.Errorf("run: %+v %v", got, err)
	}

	// Refused: nothing of it is stored, the event stays pending.
	ev2 := &engine.Event{ID: "e2", Type: "deploy.finished"}
	mustRun(t, d.AppendPendingEvent(ctx, ev2))
	mustRun(t, d.StartRun(ctx, &engine.Run{ID: "r2", Hook: "h", Trigger: "schedule", Slot: t0, StartedAt: t0}))
	err := d.StartRunDispatched(ctx, &engine.Run{ID: "r3", Hook: "h", Trigger: "event", Slot: t0, StartedAt: t0}, ev2.Seq)
	if !errors.Is(err, engine.ErrSlotTaken) {
		t.Fatalf("start on a taken slot: %v", err)
	}
	if p, err := d.PendingEvents(ctx, 10); err != nil || len(p) != 1 || p[0].ID != "e2" {
		t.Errorf("pending after a refused start: %+v %v", p, err)
	}
	if _, err := d.GetRun(ctx, "r3"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("refused run stored: %v", err)
	}
}
