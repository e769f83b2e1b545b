package storetest

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

func testAppendEvent(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()

	ev := &engine.Event{ID: "client-1", Type: "deploy.failed", Data: map[string]any{"env": "prod", "n": float64(3),
		"nested": map[string]any{"ok": false}}, Source: "cli", Time: t0, Depth: 1,
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	must(t, s.AppendEvent(ctx, ev))
	if ev.Seq == 0 {
		t.Fatal("AppendEvent did not set Seq")
	}
	first := ev.Seq

	// Publishing the same id again is idempotent: same seq, nothing stored.
	again := &engine.Event{ID: "client-1", Type: "deploy.failed", Data: map[string]any{"other": true}}
	err := s.AppendEvent(ctx, again)
	if !errors.Is(err, engine.ErrDuplicateEvent) {
		t.Fatalf("second AppendEvent: %v, want ErrDuplicateEvent", err)
	}
	if again.Seq != first {
		t.Errorf("duplicate Seq = %d, want %d", again.Seq, first)
	}

	// An event without an id gets one.
	anon := &engine.Event{Type: "hook.run.completed", Source: "engine"}
	must(t, s.AppendEvent(ctx, anon))
	if len(anon.ID) != 26 || anon.Seq <= first {
		t.Errorf("generated id %q seq %d", anon.ID, anon.Seq)
	}
	must(t, s.AppendEvent(ctx, &engine.Event{Type: "deploy.failed", Source: "api"}))

	if err := s.AppendEvent(ctx, &engine.Event{ID: "x"}); err == nil {
		t.Error("AppendEvent without a type succeeded")
	}

	all, err := s.ListEvents(ctx, "", 0)
	must(t, err)
	if len(all) != 3 || all[0].Source != "api" || all[2].ID != "client-1" {
		t.Fatalf("ListEvents(all) = %+v", all)
	}
	if !reflect.DeepEqual(all[2], ev) {
		t.Errorf("round trip:\n got %+v\nwant %+v", all[2], ev)
	}
	if len(all[1].Data) != 0 || !all[1].Time.IsZero() {
		t.Errorf("event without data or time read back as %+v", all[1])
	}

	cases := []struct {
		typ   string
		limit int
		want  []string // sources, newest first
	}{
		{"deploy.failed", 0, []string{"api", "cli"}},
		{"deploy.failed", 1, []string{"api"}},
		{"hook.run.completed", 10, []string{"engine"}},
		{"deploy", 10, nil},
		{"", 2, []string{"api", "engine"}},
	}
	for _, tc := range cases {
		evs, err := s.ListEvents(ctx, tc.typ, tc.limit)
		must(t, err)
		var got []string
		for _, e := range evs {
			got = append(got, e.Source)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ListEvents(%q, %d) = %v, want %v", tc.typ, tc.limit, got, tc.want)
		}
	}
}

func testAppendEventsBatch(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	seen := &engine.Event{ID: "seen", Type: "a"}
	must(t, s.AppendEvent(ctx, seen))
	evs := []*engine.Event{{Type: "b"}, {ID: "seen", Type: "a"}, {Type: "c", Data: map[string]any{"k": 1.0}}}
	must(t, s.AppendEvents(ctx, evs))
	if evs[0].Seq <= seen.Seq || evs[2].Seq <= evs[0].Seq || evs[1].Seq != seen.Seq {
		t.Errorf("seqs = %d %d %d (the one seen before: %d)", evs[0].Seq, evs[1].Seq, evs[2].Seq, seen.Seq)
	}
	got, err := s.ListEvents(ctx, "", 10)
	if err != nil || len(got) != 3 {
		t.Fatalf("stored %d events (%v), want 3", len(got), err)
	}
	if err := s.AppendEvents(ctx, []*engine.Event{{Type: "d"}, {Type: ""}}); err == nil {
		t.Error("a batch with a bad event was stored")
	}
	if got, _ := s.ListEvents(ctx, "", 10); len(got) != 3 {
		t.Errorf("a failed batch stored %d events", len(got)-3)
	}
}

func testPendingEvents(t *testing.T, e *env) {
	ctx := context.Background()
	s, err := e.open()
	must(t, err)
	defer s.Close()

	// Engine events (AppendEvents) and plain AppendEvent count as
	// dispatched; AppendPendingEvent does not, until MarkDispatched.
	must(t, s.AppendEvents(ctx, []*engine.Event{{Type: "hook.run.started", Source: "engine"}}))
	must(t, s.AppendEvent(ctx, &engine.Event{Type: "plain"}))
	a := &engine.Event{ID: "a", Type: "deploy.finished", Data: map[string]any{"env": "prod"}, Source: "api", Time: t0, Depth: 2}
	b := &engine.Event{ID: "b", Type: "deploy.started", Source: "api"}
	must(t, s.AppendPendingEvent(ctx, a))
	must(t, s.AppendPendingEvent(ctx, b))
	if a.Seq == 0 || b.Seq <= a.Seq {
		t.Fatalf("seqs %d, %d", a.Seq, b.Seq)
	}

	// A duplicate id is refused and keeps the first one's seq and state.
	dup := &engine.Event{ID: "a", Type: "deploy.finished"}
	if err := s.AppendPendingEvent(ctx, dup); !errors.Is(err, engine.ErrDuplicateEvent) || dup.Seq != a.Seq {
		t.Fatalf("duplicate: %v, seq %d (want %d)", err, dup.Seq, a.Seq)
	}

	pending, err := s.PendingEvents(ctx, 10)
	must(t, err)
	if len(pending) != 2 || pending[0].ID != "a" || pending[1].ID != "b" {
		t.Fatalf("pending: %+v", pending)
	}
	if p := pending[0]; p.Seq != a.Seq || p.Data["env"] != "prod" || p.Source != "api" || !p.Time.Equal(t0) || p.Depth != 2 {
		t.Errorf("pending event read back as %+v", p)
	}
	if one, _ := s.PendingEvents(ctx, 1); len(one) != 1 || one[0].ID != "a" {
		t.Errorf("limit 1: %+v", one)
	}

	must(t, s.MarkDispatched(ctx, a.Seq))
	must(t, s.MarkDispatched(ctx, a.Seq)) // again: nothing to do
	pending, err = s.PendingEvents(ctx, 10)
	must(t, err)
	if len(pending) != 1 || pending[0].ID != "b" {
		t.Fatalf("after marking a: %+v", pending)
	}

	// The state survives a reopen.
	must(t, s.Close())
	pending, err = e.store().PendingEvents(ctx, 10)
	must(t, err)
	if len(pending) != 1 || pending[0].ID != "b" {
		t.Fatalf("after reopen: %+v", pending)
	}
}

// testDispatchRecords: each first record of a run a pending event
// triggers (queued, refused, started) and each merge of it into a queued
// run records the hook it reached, in that write (a write that fails
// records nothing); a hook is recorded once; nothing is recorded for an
// event not pending; the records survive a reopen and go when the event
// is marked dispatched.
func testDispatchRecords(t *testing.T, e *env) {
	ctx := context.Background()
	s, err := e.open()
	must(t, err)
	a := &engine.Event{ID: "a", Type: "deploy.finished", Source: "api"}
	must(t, s.AppendPendingEvent(ctx, a))
	reached := func(s Store, seq int64) []string {
		t.Helper()
		hooks, err := s.DispatchedTo(ctx, seq)
		must(t, err)
		return hooks
	}
	if got := reached(s, a.Seq); len(got) != 0 {
		t.Fatalf("a new event reached %v", got)
	}
	must(t, s.InsertRun(ctx, &engine.Run{ID: "q1", Hook: "h1", Status: engine.StatusQueued, Trigger: "event", QueuedAt: t0, EventSeq: a.Seq}))
	must(t, s.InsertRun(ctx, &engine.Run{ID: "r2", Hook: "h2", Status: engine.StatusSkipped, Gate: engine.GateCooldown,
		Trigger: "event", QueuedAt: t0, FinishedAt: t0, EventSeq: a.Seq}))
	must(t, s.StartRun(ctx, &engine.Run{ID: "s3", Hook: "h3", Trigger: "event", QueuedAt: t0, StartedAt: t0, EventSeq: a.Seq}))
	must(t, s.InsertRun(ctx, &engine.Run{ID: "p4", Hook: "h4", Status: engine.StatusQueued, Trigger: "manual", QueuedAt: t0}))
	must(t, s.UpdateQueued(ctx, &engine.Run{ID: "p4", Hook: "h4", Trigger: "event", Reason: "coalesced"}, engine.Merged{EventSeq: a.Seq}))
	// Writes that fail record nothing: a merge into a run not queued, a
	// start for a slot another run holds.
	if err := s.UpdateQueued(ctx, &engine.Run{ID: "r2", Hook: "h5"}, engine.Merged{EventSeq: a.Seq}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("merge into a refused run: %v, want ErrNotFound", err)
	}
	must(t, s.StartRun(ctx, &engine.Run{ID: "slot", Hook: "h6", Trigger: "schedule", Slot: t0, QueuedAt: t0, StartedAt: t0}))
	if err := s.StartRun(ctx, &engine.Run{ID: "s6", Hook: "h6", Trigger: "event", Slot: t0, QueuedAt: t0, StartedAt: t0,
		EventSeq: a.Seq}); !isSlotTaken(err) {
		t.Errorf("start for a taken slot: %v, want ErrSlotTaken", err)
	}
	// A hook is recorded once, with its first run.
	must(t, s.StartRun(ctx, &engine.Run{ID: "q1", Hook: "h1", Trigger: "event", QueuedAt: t0, StartedAt: t0, EventSeq: a.Seq}))
	want := []string{"h1", "h2", "h3", "h4"}
	if got := reached(s, a.Seq); !reflect.DeepEqual(got, want) {
		t.Fatalf("a reached %v, want %v", got, want)
	}

	// An event that is not pending records nothing.
	b := &engine.Event{ID: "b", Type: "deploy.finished", Source: "api"}
	must(t, s.AppendEvent(ctx, b))
	must(t, s.InsertRun(ctx, &engine.Run{ID: "q7", Hook: "h7", Status: engine.StatusQueued, Trigger: "event", QueuedAt: t0, EventSeq: b.Seq}))
	if got := reached(s, b.Seq); len(got) != 0 {
		t.Errorf("an event not pending reached %v", got)
	}

	must(t, s.Close())
	s = e.store()
	if got := reached(s, a.Seq); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a reopen, a reached %v, want %v", got, want)
	}
	must(t, s.MarkDispatched(ctx, a.Seq))
	if got := reached(s, a.Seq); len(got) != 0 {
		t.Errorf("a dispatched event keeps its records: %v", got)
	}
	must(t, s.InsertRun(ctx, &engine.Run{ID: "q8", Hook: "h8", Status: engine.StatusQueued, Trigger: "event", QueuedAt: t0, EventSeq: a.Seq}))
	if got := reached(s, a.Seq); len(got) != 0 {
		t.Errorf("a record for a dispatched event: %v", got)
	}
}

func testEventsAfter(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	if seq, err := s.LastEventSeq(ctx); err != nil || seq != 0 {
		t.Fatalf("empty log: %d %v", seq, err)
	}
	var seqs []int64
	for i := range 5 {
		ev := &engine.Event{Type: "t", Data: map[string]any{"i": float64(i)}}
		if i%2 == 0 {
			must(t, s.AppendEvent(ctx, ev))
		} else {
			must(t, s.AppendPendingEvent(ctx, ev))
		}
		seqs = append(seqs, ev.Seq)
	}
	last, err := s.LastEventSeq(ctx)
	must(t, err)
	if last != seqs[4] {
		t.Errorf("last seq %d, want %d", last, seqs[4])
	}
	evs, err := s.EventsAfter(ctx, seqs[1], 2)
	must(t, err)
	if len(evs) != 2 || evs[0].Seq != seqs[2] || evs[1].Seq != seqs[3] || evs[0].Data["i"] != float64(2) {
		t.Errorf("after %d: %+v", seqs[1], evs)
	}
	if evs, _ := s.EventsAfter(ctx, last, 10); len(evs) != 0 {
		t.Errorf("after the last: %+v", evs)
	}
	if evs, _ := s.EventsAfter(ctx, 0, 0); len(evs) != 5 {
		t.Errorf("from the start: %d events", len(evs))
	}
}

func testWatchSnapshots(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	if _, ok, err := s.LoadSnapshot(ctx, "h"); err != nil || ok {
		t.Fatalf("no snapshot yet: ok=%v err=%v", ok, err)
	}
	// An empty tree is a snapshot too.
	must(t, s.SaveSnapshot(ctx, "h", nil))
	if files, ok, err := s.LoadSnapshot(ctx, "h"); err != nil || !ok || len(files) != 0 {
		t.Fatalf("empty snapshot: %v %v %v", files, ok, err)
	}
	mt := time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC)
	want := map[string]engine.FileStamp{"/a": {Size: 1, ModTime: mt}, "/b": {Size: 2, ModTime: mt.Add(time.Second)}}
	must(t, s.SaveSnapshot(ctx, "h", want))
	must(t, s.SaveSnapshot(ctx, "other", map[string]engine.FileStamp{"/x": {}}))
	files, ok, err := s.LoadSnapshot(ctx, "h")
	if err != nil || !ok || !maps.Equal(files, want) {
		t.Fatalf("snapshot = %v %v %v, want %v", files, ok, err, want)
	}

	must(t, s.UpdateSnapshot(ctx, "h", map[string]engine.FileStamp{"/b": {Size: 3, ModTime: mt}, "/c": {Size: 4}}, []string{"/a"}))
	files, _, _ = s.LoadSnapshot(ctx, "h")
	want = map[string]engine.FileStamp{"/b": {Size: 3, ModTime: mt}, "/c": {Size: 4}}
	if !maps.Equal(files, want) {
		t.Fatalf("after update: %v, want %v", files, want)
	}
	// Replacing drops what is not given.
	must(t, s.SaveSnapshot(ctx, "h", map[string]engine.FileStamp{"/d": {Size: 5}}))
	if files, _, _ = s.LoadSnapshot(ctx, "h"); len(files) != 1 {
		t.Fatalf("after save: %v", files)
	}
	// An update creates the snapshot when there is none.
	must(t, s.UpdateSnapshot(ctx, "new", map[string]engine.FileStamp{"/n": {Size: 1}}, nil))
	if files, ok, _ := s.LoadSnapshot(ctx, "new"); !ok || len(files) != 1 {
		t.Fatalf("update without a snapshot: %v %v", files, ok)
	}
	must(t, s.DeleteSnapshot(ctx, "h"))
	if _, ok, _ := s.LoadSnapshot(ctx, "h"); ok {
		t.Error("deleted snapshot still there")
	}
	if files, ok, _ := s.LoadSnapshot(ctx, "other"); !ok || len(files) != 1 {
		t.Errorf("another hook's snapshot: %v %v", files, ok)
	}
}

// testEventFate: an event's fate is stored with it, set at insert
// (AppendEvent, StartRunWithEvent) or later (SetEventFate, which
// replaces it), read back by ListEvents and EventsAfter, absent (nil)
// for an event stored without one, and pruned with the event.
func testEventFate(t *testing.T, e *env) {
	ctx := context.Background()
	s := e.store()
	now := t0.Add(30 * 24 * time.Hour)

	unheard := &engine.EventFate{Unheard: true, Nearest: []string{"deploy.finished", "deploy.started"}}
	// The log is in time order: the old event first.
	old := &engine.Event{ID: "old", Type: "deploy.finishd", Source: "cli", Time: t0, Fate: unheard}
	must(t, s.AppendEvent(ctx, old))
	typo := &engine.Event{ID: "typo", Type: "deploy.finishd", Source: "cli", Time: now, Fate: unheard}
	must(t, s.AppendEvent(ctx, typo))

	pending := &engine.Event{ID: "pend", Type: "deploy.finished", Source: "api", Time: now}
	must(t, s.AppendPendingEvent(ctx, pending))
	claimed := &engine.EventFate{ClaimedBy: "router"}
	must(t, s.SetEventFate(ctx, pending.Seq, claimed))
	ran := &engine.EventFate{Rejected: []string{"a", "b"},
		Runs: []engine.FateRun{{ID: "r1", Hook: "c"}, {ID: "r2", Hook: "d", Gate: engine.GateCooldown}}}
	must(t, s.SetEventFate(ctx, pending.Seq, ran)) // replaces

	carried := &engine.Event{ID: "carried", Type: "deploy.finished", Source: "api", Time: now,
		Fate: &engine.EventFate{Runs: []engine.FateRun{{ID: "r9", Hook: "c"}}}}
	must(t, s.StartRunWithEvent(ctx, &engine.Run{ID: "r9", Hook: "c", Trigger: "event", StartedAt: now}, carried))
	engineEv := &engine.Event{Type: "hook.run.completed", Source: "engine", Time: now}
	must(t, s.AppendEvents(ctx, []*engine.Event{engineEv}))

	want := map[string]*engine.EventFate{"typo": unheard, "pend": ran, "carried": carried.Fate, engineEv.ID: nil, "old": unheard}
	check := func(how string, evs []*engine.Event, n int) {
		t.Helper()
		if len(evs) != n {
			t.Fatalf("%s: %d events, want %d", how, len(evs), n)
		}
		for _, ev := range evs {
			if !reflect.DeepEqual(ev.Fate, want[ev.ID]) {
				t.Errorf("%s: fate of %s = %+v, want %+v", how, ev.ID, ev.Fate, want[ev.ID])
			}
		}
	}
	all, err := s.ListEvents(ctx, "", 10)
	must(t, err)
	check("ListEvents", all, 5)
	after, err := s.EventsAfter(ctx, 0, 10)
	must(t, err)
	check("EventsAfter", after, 5)

	// Retention prunes the fate with its event.
	must(t, s.MarkDispatched(ctx, pending.Seq))
	got, err := s.Prune(ctx, now, engine.PrunePolicy{Retention: engine.Retention{Events: 7 * 24 * time.Hour}})
	must(t, err)
	if got.Events != 1 {
		t.Errorf("pruned %d events, want 1 (old)", got.Events)
	}
	all, err = s.ListEvents(ctx, "deploy.finishd", 10)
	must(t, err)
	delete(want, "old")
	check("ListEvents after prune", all, 1)
}
