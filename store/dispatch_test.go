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
