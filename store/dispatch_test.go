package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/hookd/hookd/engine"
)

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

// StartRunWithEvent stores the event (dispatched) and starts the run in
// one transaction: when either part is refused, neither is stored.
func TestStartRunWithEvent(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	ev := &engine.Event{ID: "e1", Type: "deploy.finished", Source: "api", Time: t0, Data: map[string]any{"n": 1.0}}
	mustRun(t, d.StartRunWithEvent(ctx, &engine.Run{ID: "r1", Hook: "h", Trigger: "event", StartedAt: t0}, ev))
	if ev.Seq == 0 {
		t.Error("the event's seq is not set")
	}
	stored, err := d.ListEvents(ctx, "deploy.finished", 10)
	if err != nil || len(stored) != 1 || stored[0].ID != "e1" || stored[0].Seq != ev.Seq || stored[0].Data["n"] != 1.0 {
		t.Errorf("stored events: %+v %v", stored, err)
	}
	if p, err := d.PendingEvents(ctx, 10); err != nil || len(p) != 0 {
		t.Errorf("pending: %+v %v, want none (stored dispatched)", p, err)
	}
	if got, err := d.GetRun(ctx, "r1"); err != nil || got.Status != engine.StatusRunning {
		t.Errorf("run: %+v %v", got, err)
	}

	// The event's ID was stored before: the run is not started.
	dup := &engine.Event{ID: "e1", Type: "deploy.finished"}
	err = d.StartRunWithEvent(ctx, &engine.Run{ID: "r2", Hook: "h", Trigger: "event", StartedAt: t0}, dup)
	if !errors.Is(err, engine.ErrDuplicateEvent) {
		t.Errorf("start with a duplicate event: %v, want ErrDuplicateEvent", err)
	}
	if _, err := d.GetRun(ctx, "r2"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("the run of a duplicate event was stored: %v", err)
	}

	// The start is refused (its slot is taken): the event is not stored.
	mustRun(t, d.StartRun(ctx, &engine.Run{ID: "r3", Hook: "h", Trigger: "schedule", Slot: t0, StartedAt: t0}))
	err = d.StartRunWithEvent(ctx, &engine.Run{ID: "r4", Hook: "h", Trigger: "event", Slot: t0, StartedAt: t0},
		&engine.Event{ID: "e2", Type: "deploy.finished"})
	if !errors.Is(err, engine.ErrSlotTaken) {
		t.Errorf("start on a taken slot: %v, want ErrSlotTaken", err)
	}
	if stored, err := d.ListEvents(ctx, "deploy.finished", 10); err != nil || len(stored) != 1 {
		t.Errorf("events after a refused start: %+v %v, want e1 only", stored, err)
	}
	if _, err := d.GetRun(ctx, "r4"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("refused run stored: %v", err)
	}
}
