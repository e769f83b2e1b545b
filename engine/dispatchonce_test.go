package engine_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
)

// dyingStore is a real SQLite store whose daemon dies, once die is set, at
// the moment it would mark an event dispatched: the database is closed
// instead, so nothing more is written (the event stays pending, and the
// runs in flight keep the record of their start), as when hookd is killed
// there.
type dyingStore struct {
	*store.DB
	die, dead atomic.Bool
}

func (d *dyingStore) MarkDispatched(ctx context.Context, seq int64) error {
	if !d.die.Load() {
		return d.DB.MarkDispatched(ctx, seq)
	}
	d.dead.Store(true)
	d.DB.Close()
	return errors.New("hookd died before the event's mark was stored")
}

// TestRedispatchReachesEachHookOnce performs a crash of a single daemon
// between the runs an event started and the event's mark, on a real
// SQLite file. Event e1 matches four hooks: it starts a and b, merges into
// c's pending rerun (overlap: queue; c's first run is in flight) and is
// refused by d's cooldown. The daemon dies where it would mark e1
// dispatched; the next start dispatches e1 again, as it must (pending),
// and must reach none of the four hooks a second time: a and b ran once,
// c ran its first run and the pending run e1 merged into, d has one
// refusal of e1.
func TestRedispatchReachesEachHookOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "hookd.db")
		var (
			mu  sync.Mutex
			ran = map[string]int{}
		)
		counted := func(name string) engine.Step {
			return funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
				mu.Lock()
				ran[name]++
				first := ran[name] == 1
				mu.Unlock()
				if name == "c" && first { // c's first run is in flight until the daemon stops
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return &engine.StepResult{Output: "ran"}, nil
			})
		}
		hooks := func() []*engine.Hook {
			var hs []*engine.Hook
			for _, name := range []string{"a", "b", "c", "d"} {
				h := withSteps(newHook(name), counted(name))
				h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*"}
				hs = append(hs, h)
			}
			hs[2].Overlap = engine.OverlapQueue
			hs[3].Cooldown = time.Hour
			return hs
		}
		start := func(st engine.Store) *engine.Engine {
			return startEventEngine(t, st, hooks())
		}
		db, err := store.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		dying := &dyingStore{DB: db}
		first := start(dying)
		fire := func(name string) *engine.Run {
			r, err := first.Fire(ctx, name, engine.FireOptions{})
			if err != nil {
				t.Fatalf("fire %s: %v", name, err)
			}
			return r
		}
		fire("c")
		pending := fire("c")
		fire("d") // d cools down from here
		synctest.Wait()
		if pending.Status != engine.StatusQueued {
			t.Fatalf("c's second fire is %s, want a pending rerun", pending.Status)
		}

		dying.die.Store(true)
		runs, err := first.Emit(ctx, &engine.Event{ID: "e1", Type: "deploy.finished", Data: map[string]any{"n": 1.0}})
		if err != nil {
			t.Fatalf("emit e1: %v", err)
		}
		got := map[string]string{}
		for _, r := range runs {
			got[r.Hook] = r.ID
		}
		if got["a"] == "" || got["b"] == "" || got["c"] != pending.ID || len(got) != 3 {
			t.Fatalf("e1 gave runs %v; want a and b started and c's pending run %s", got, pending.ID)
		}
		synctest.Wait()
		if !dying.dead.Load() {
			t.Fatal("the daemon did not come to marking e1 dispatched")
		}
		first.Stop()

		// The next start, on the same file.
		db, err = store.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if p, err := db.PendingEvents(ctx, 10); err != nil || len(p) != 1 || p[0].ID != "e1" {
			t.Fatalf("pending events after the crash: %v %v; want e1", p, err)
		}
		second := start(db)
		n, err := second.DispatchPending(ctx)
		if err != nil || n != 1 {
			t.Fatalf("DispatchPending: %d %v; want e1 dispatched", n, err)
		}
		synctest.Wait()
		second.Stop()

		mu.Lock()
		defer mu.Unlock()
		want := map[string]int{"a": 1, "b": 1, "c": 2, "d": 1}
		for name, n := range want {
			if ran[name] != n {
				t.Errorf("hook %s ran %d times, want %d (steps run: %v)", name, ran[name], n, ran)
			}
		}
		refusals := 0
		all, err := db.ListRuns(ctx, engine.RunFilter{Hook: "d", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range all {
			if r.Trigger == "event" {
				refusals++
				if r.Gate != engine.GateCooldown {
					t.Errorf("d's record of e1 is %s (gate %q), want a cooldown refusal", r.Status, r.Gate)
				}
			}
		}
		if refusals != 1 {
			t.Errorf("d has %d records of e1, want 1", refusals)
		}
		if p, err := db.PendingEvents(ctx, 10); err != nil || len(p) != 0 {
			t.Errorf("pending events after the redispatch: %v %v; want none", p, err)
		}
		if hooks, err := db.DispatchedTo(ctx, eventSeq(t, db, "e1")); err != nil || len(hooks) != 0 {
			t.Errorf("e1's dispatch records after its mark: %v %v; want none", hooks, err)
		}
	})
}

// eventSeq returns the seq of the stored event with id, from either store.
func eventSeq(t *testing.T, db interface {
	ListEvents(ctx context.Context, typ string, limit int) ([]*engine.Event, error)
}, id string) int64 {
	t.Helper()
	evs, err := db.ListEvents(context.Background(), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.ID == id {
			return ev.Seq
		}
	}
	t.Fatalf("no event %s stored", id)
	return 0
}
