package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// testStartRunDispatched: StartRunDispatched starts the run and marks the event in one
// transaction; when the start is refused (a slot taken), the event stays
// pending.
func testStartRunDispatched(t *testing.T, e *env) {
	ctx := context.Background()
	d := e.store()
	ev := &engine.Event{ID: "e", Type: "deploy.finished"}
	must(t, d.AppendPendingEvent(ctx, ev))
	r := &engine.Run{ID: "r1", Hook: "h", Trigger: "event", StartedAt: t0}
	must(t, d.StartRunDispatched(ctx, r, ev.Seq))
	if p, err := d.PendingEvents(ctx, 10); err != nil || len(p) != 0 {
		t.Errorf("pending after StartRunDispatched: %+v %v", p, err)
	}
	if got, err := d.GetRun(ctx, "r1"); err != nil || got.Status != engine.StatusRunning {
		t.Errorf("run: %+v %v", got, err)
	}

	// Refused: nothing of it is stored, the event stays pending.
	ev2 := &engine.Event{ID: "e2", Type: "deploy.finished"}
	must(t, d.AppendPendingEvent(ctx, ev2))
	must(t, d.StartRun(ctx, &engine.Run{ID: "r2", Hook: "h", Trigger: "schedule", Slot: t0, StartedAt: t0}))
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

// testStartRunWithEvent: StartRunWithEvent stores the event (dispatched) and starts the run in
// one transaction: when either part is refused, neither is stored.
func testStartRunWithEvent(t *testing.T, e *env) {
	ctx := context.Background()
	d := e.store()
	ev := &engine.Event{ID: "e1", Type: "deploy.finished", Source: "api", Time: t0, Data: map[string]any{"n": 1.0}}
	must(t, d.StartRunWithEvent(ctx, &engine.Run{ID: "r1", Hook: "h", Trigger: "event", StartedAt: t0}, ev))
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
	must(t, d.StartRun(ctx, &engine.Run{ID: "r3", Hook: "h", Trigger: "schedule", Slot: t0, StartedAt: t0}))
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

// testAppendEventsLater: AppendEventsLater stores what AppendEvents
// does, returning once the events are stored, and skips IDs stored
// before.
func testAppendEventsLater(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	must(t, s.AppendEvent(ctx, &engine.Event{ID: "e1", Type: "hook.run.started", Time: t0}))
	evs := []*engine.Event{
		{ID: "e1", Type: "hook.run.started", Time: t0},
		{ID: "e2", Type: "hook.step.finished", Time: t0, Data: map[string]any{"step": "a"}},
		{ID: "e3", Type: "hook.run.completed", Time: t0.Add(time.Second)},
	}
	must(t, s.AppendEventsLater(ctx, evs))
	stored, err := s.EventsAfter(ctx, 0, 10)
	must(t, err)
	var ids []string
	for _, ev := range stored {
		ids = append(ids, ev.ID)
	}
	if len(ids) != 3 || ids[0] != "e1" || ids[1] != "e2" || ids[2] != "e3" {
		t.Fatalf("stored %v, want [e1 e2 e3]", ids)
	}
	if stored[1].Data["step"] != "a" || !stored[2].Time.Equal(t0.Add(time.Second)) {
		t.Errorf("e2, e3 read back as %+v, %+v", stored[1], stored[2])
	}
	if evs[1].Seq != stored[1].Seq || evs[2].Seq != stored[2].Seq {
		t.Errorf("seqs set %d %d, stored %d %d", evs[1].Seq, evs[2].Seq, stored[1].Seq, stored[2].Seq)
	}
	if p, err := s.PendingEvents(ctx, 10); err != nil || len(p) != 0 {
		t.Errorf("pending: %+v %v, want none (stored dispatched)", p, err)
	}
}

// testSizeAndClose: a store tells its size, and Close is safe twice.
func testSizeAndClose(t *testing.T, e *env) {
	ctx := context.Background()
	s, err := e.open()
	must(t, err)
	must(t, s.AppendEvent(ctx, &engine.Event{ID: "e1", Type: "deploy", Time: t0}))
	size, err := s.Size(ctx)
	must(t, err)
	if size.Bytes <= 0 {
		t.Errorf("size %+v, want some bytes", size)
	}
	must(t, s.Close())
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// testObserver: every write that stores events tells the store's
// observer once, after the events are readable (the live stream, woken
// so, reads them); a write that stores none, and a read, tell nothing.
func testObserver(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	var (
		told int
		seen int64 // the last seq the observer could read when told
	)
	s.Observe(engine.StoreObserver{EventsStored: func() {
		told++
		seq, err := s.LastEventSeq(ctx)
		if err != nil {
			t.Errorf("read the log when told: %v", err)
		}
		seen = seq
	}})
	writes := []struct {
		name  string
		write func() (int64, error) // returns the seq of the last event it stored
	}{
		{"AppendEvent", func() (int64, error) {
			ev := &engine.Event{ID: "e1", Type: "deploy", Time: t0}
			err := s.AppendEvent(ctx, ev)
			return ev.Seq, err
		}},
		{"AppendEvents", func() (int64, error) {
			evs := []*engine.Event{{ID: "e2", Type: "deploy", Time: t0}, {ID: "e3", Type: "deploy", Time: t0}}
			err := s.AppendEvents(ctx, evs)
			return evs[1].Seq, err
		}},
		{"AppendEventsLater", func() (int64, error) {
			evs := []*engine.Event{{ID: "e4", Type: "hook.run.started", Time: t0}}
			err := s.AppendEventsLater(ctx, evs)
			return evs[0].Seq, err
		}},
		{"AppendPendingEvent", func() (int64, error) {
			ev := &engine.Event{ID: "e5", Type: "deploy", Time: t0}
			err := s.AppendPendingEvent(ctx, ev)
			return ev.Seq, err
		}},
		{"StartRunWithEvent", func() (int64, error) {
			ev := &engine.Event{ID: "e6", Type: "deploy", Time: t0}
			err := s.StartRunWithEvent(ctx, &engine.Run{ID: "r1", Hook: "h", Trigger: "event", StartedAt: t0}, ev)
			return ev.Seq, err
		}},
	}
	for _, w := range writes {
		before := told
		seq, err := w.write()
		if err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		if told != before+1 {
			t.Errorf("%s told the observer %d times, want 1", w.name, told-before)
		}
		if seen < seq {
			t.Errorf("%s told the observer before its event (seq %d) was readable (last seq %d)", w.name, seq, seen)
		}
	}
	before := told
	must(t, s.StartRun(ctx, &engine.Run{ID: "r2", Hook: "h", Trigger: "manual", StartedAt: t0}))
	_, err := s.ListEvents(ctx, "", 10)
	must(t, err)
	if told != before {
		t.Errorf("a run's start and a read told the observer %d times", told-before)
	}
}
