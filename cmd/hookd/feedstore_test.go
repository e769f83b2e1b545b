package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
)

// TestFeedStoreStartsDispatched: the store the daemon gives its engine
// keeps SQLite's StartRunDispatched, so an event that starts one run is
// marked dispatched in the transaction of that run's start (through a
// wrapper that only embedded engine.Store, the engine did not see it and
// marked every event in a write of its own).
func TestFeedStoreStartsDispatched(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	ds := newFeedStore(db, newEventFeed())
	ev := &engine.Event{Type: "deploy", Source: "test", Time: time.Now()}
	if err := ds.AppendPendingEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	run := &engine.Run{ID: engine.NewID(), Hook: "h", Trigger: "event", Status: engine.StatusRunning, QueuedAt: now, StartedAt: now}
	if err := ds.StartRunDispatched(ctx, run, ev.Seq); err != nil {
		t.Fatal(err)
	}
	if p, err := ds.PendingEvents(ctx, 10); err != nil || len(p) != 0 {
		t.Errorf("pending after the start: %d events, %v; want none", len(p), err)
	}
	got, err := db.GetRun(ctx, run.ID)
	if err != nil || got.Status != engine.StatusRunning {
		t.Errorf("run after the start: %+v, %v", got, err)
	}
}

// TestFeedStoreStartsWithEvent: the store the daemon gives its engine
// keeps SQLite's StartRunWithEvent, so an event Emit gave an ID is stored
// in the transaction of the run it starts, and the event stream is woken
// by that write.
func TestFeedStoreStartsWithEvent(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	feed := newEventFeed()
	es := newFeedStore(db, feed)
	woken := feed.changed()
	ev := &engine.Event{ID: engine.NewID(), Type: "deploy", Source: "test", Time: time.Now()}
	now := time.Now()
	run := &engine.Run{ID: engine.NewID(), Hook: "h", Trigger: "event", Status: engine.StatusRunning, QueuedAt: now, StartedAt: now}
	if err := es.StartRunWithEvent(ctx, run, ev); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woken:
	default:
		t.Error("the event stream was not woken by the event's write")
	}
	if evs, err := db.EventsAfter(ctx, 0, 10); err != nil || len(evs) != 1 || evs[0].ID != ev.ID {
		t.Errorf("events: %+v %v", evs, err)
	}
	if got, err := db.GetRun(ctx, run.ID); err != nil || got.Status != engine.StatusRunning {
		t.Errorf("run after the start: %+v %v", got, err)
	}
}
