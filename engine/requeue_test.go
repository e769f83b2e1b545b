package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestRequeueKeepsCoalescedPayload: a start that finds more queued
// records of a hook (overlap: queue) than the one queued run and one
// pending run it may have (a record the store was to end stayed queued:
// a stalled store, a cluster's failed release) coalesces the later ones
// into the pending run, as a trigger of the hook would be: the pending
// run executes with their payload merged into its own (later keys win),
// the latest event type, and links to their traces, and each later run
// ends cancelled naming it. Before, a later run ended cancelled as
// coalesced with nothing of it merged: the pending run executed with its
// own payload only.
func TestRequeueKeepsCoalescedPayload(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var (
			mu   sync.Mutex
			seen = map[string]map[string]any{} // run id -> the event its step saw
		)
		hk := withSteps(newHook("q"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			mu.Lock()
			seen[env.RunID] = maps.Clone(env.Scope.Event)
			mu.Unlock()
			return &engine.StepResult{Output: "ok"}, nil
		}))
		hk.Overlap = engine.OverlapQueue
		h := newHarness(t, []*engine.Hook{hk}, func(c *engine.Config) { c.MaxConcurrent = 1 })
		h.stop()

		tp := func(i int) engine.TraceParent { return engine.TraceParent(fmt.Sprintf("00-%032x-%016x-01", i, i)) }
		waiting := []*engine.Run{
			{Event: json.RawMessage(`{"n":1,"first":true}`), EventType: "job.a", TraceParent: tp(1)},
			{Event: json.RawMessage(`{"n":2,"a":"x"}`), EventType: "job.b", TraceParent: tp(2)},
			{Event: json.RawMessage(`{"n":3,"b":"y"}`), EventType: "job.c", TraceParent: tp(3),
				TraceLinks: engine.TraceLinks{Parents: []engine.TraceParent{tp(4)}}},
			{Event: json.RawMessage(`{"n":4,"c":"z"}`), EventType: "job.d", TraceParent: tp(5)},
		}
		db := h.dbAt()
		for i, r := range waiting {
			r.ID, r.Hook, r.Trigger, r.Status = fmt.Sprintf("w%d", i+1), "q", "event", engine.StatusQueued
			r.QueuedAt = h.clock.Now()
			if err := db.InsertRun(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
		h.start()
		defer h.stop()
		h.settle()

		pending, queued := waiting[1], waiting[0]
		mu.Lock()
		got := seen[pending.ID]
		first := seen[queued.ID]
		mu.Unlock()
		if want := map[string]any{"n": 4.0, "a": "x", "b": "y", "c": "z"}; !maps.Equal(got, want) {
			t.Errorf("the pending run %s executed with event %v, want %v (the later runs' payloads merged into its own)", pending.ID, got, want)
		}
		if want := map[string]any{"n": 1.0, "first": true}; !maps.Equal(first, want) {
			t.Errorf("the queued run %s executed with event %v, want its own %v", queued.ID, first, want)
		}
		if r := h.run(pending.ID); r.Status != engine.StatusCompleted || r.EventType != "job.d" ||
			!slices.Equal(r.TraceLinks.Parents, []engine.TraceParent{tp(3), tp(4), tp(5)}) {
			t.Errorf("the pending run: %s, event type %q, trace links %+v; want completed, job.d, links to %s %s %s",
				r.Status, r.EventType, r.TraceLinks, tp(3), tp(4), tp(5))
		}
		for _, later := range waiting[2:] {
			r := h.run(later.ID)
			if r.Status != engine.StatusCancelled || !strings.Contains(r.Reason, "merged into run "+pending.ID) {
				t.Errorf("later run %s: %s %q, want cancelled, merged into %s", later.ID, r.Status, r.Reason, pending.ID)
			}
			if !slices.Equal(r.Event, later.Event) {
				t.Errorf("later run %s: its record's event %s, want its own %s", later.ID, r.Event, later.Event)
			}
		}
	})
}

// TestClusterTakeoverKeepsCoalescedPayload: a scheduler that takes over
// and finds more waiting runs of a hook than its one queued and one
// pending run coalesces the later ones into the pending run, which
// executes with their payloads merged into its own, as a restart does
// (TestRequeueKeepsCoalescedPayload).
func TestClusterTakeoverKeepsCoalescedPayload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	var (
		mu   sync.Mutex
		seen = map[string]map[string]any{} // run id -> the event its step saw
	)
	hk := withSteps(newHook("q"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		mu.Lock()
		seen[env.RunID] = maps.Clone(env.Scope.Event)
		mu.Unlock()
		return &engine.StepResult{Output: "ok"}, nil
	}))
	hk.Overlap = engine.OverlapQueue
	hk.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "job.*"}
	for i, ev := range []string{`{"n":1}`, `{"n":2,"a":"x"}`, `{"n":3,"b":"y"}`} {
		r := &engine.Run{ID: fmt.Sprintf("w%d", i+1), Hook: "q", Trigger: "event", Status: engine.StatusQueued,
			Event: json.RawMessage(ev), EventType: "job.x", QueuedAt: time.Now()}
		if err := db.InsertRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	lockNode(ctx, t, url, "node-a")
	startClusterNode(ctx, t, engine.Config{Store: db, Cluster: db.Member("node-a", 4, 2*time.Second), MaxConcurrent: 1},
		[]*engine.Hook{hk})
	poll(t, "the pending run w2 completed", func() bool {
		r, err := db.GetRun(ctx, "w2")
		return err == nil && r.Status == engine.StatusCompleted
	})
	mu.Lock()
	got := seen["w2"]
	mu.Unlock()
	if want := map[string]any{"n": 3.0, "a": "x", "b": "y"}; !maps.Equal(got, want) {
		t.Errorf("the pending run w2 executed with event %v, want %v", got, want)
	}
	if r, err := db.GetRun(ctx, "w3"); err != nil || r.Status != engine.StatusCancelled || !strings.Contains(r.Reason, "merged into run w2") {
		t.Errorf("w3: %+v %v, want cancelled, merged into w2", r, err)
	}
}
