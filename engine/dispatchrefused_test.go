package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
)

// refusedEventRecord is a real SQLite store that, once refuse is set,
// refuses outright the next record of a run of hook that an event reached
// (Run.EventSeq: a run that waits): the store answers no, as to a write
// it will never take.
type refusedEventRecord struct {
	*store.DB
	hook   string
	refuse atomic.Bool
}

func (s *refusedEventRecord) InsertRun(ctx context.Context, r *engine.Run) error {
	if r.Hook == s.hook && r.EventSeq != 0 && s.refuse.CompareAndSwap(true, false) {
		return fmt.Errorf("insert run %s: event %d: %w", r.ID, r.EventSeq, engine.ErrNotFound)
	}
	return s.DB.InsertRun(ctx, r)
}

// TestMarkWaitsForEveryEventRecord: event e1 gives b and c (overlap:
// queue, each with a run in flight) a pending run each. The store refuses
// b's record of e1 and stores c's, the writer's last. e1 must stay
// pending, as it does when a record is not stored in time. Before,
// settle waited for the writer's last write alone, c's, and marked e1
// dispatched though b's record was refused:
//
//   - killed before b's pending run starts, the next start found e1
//     dispatched, and b never got it; now it dispatches e1 again to b
//     (c's record is stored: passed by, and its pending run runs);
//   - when hookd runs on, b's pending run, which the loop holds, runs
//     with e1 and its start records that e1 reached b: the next start
//     dispatches e1 to no hook again.
//
// Either way b and c get e1 once each.
func TestMarkWaitsForEveryEventRecord(t *testing.T) {
	t.Parallel()
	t.Run("runs on", func(t *testing.T) { synctest.Test(t, func(t *testing.T) { testMarkEveryRecord(t, false) }) })
	t.Run("killed", func(t *testing.T) { synctest.Test(t, func(t *testing.T) { testMarkEveryRecord(t, true) }) })
}

// testMarkEveryRecord is TestMarkWaitsForEveryEventRecord, with hookd
// killed before the pending runs start (kill) or not.
func testMarkEveryRecord(t *testing.T, kill bool) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hookd.db")
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		ran     = map[string]int{}
		withE   = map[string]int{}
		release = make(chan struct{})
	)
	counted := func(name string) engine.Step {
		return funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			mu.Lock()
			ran[name]++
			first := ran[name] == 1
			if env.Scope != nil && env.Scope.Event["n"] == 1.0 {
				withE[name]++
			}
			mu.Unlock()
			if first { // in flight until released: e1 gives the hook a pending run
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return &engine.StepResult{Output: "ran"}, nil
		})
	}
	hooks := func() []*engine.Hook {
		var hs []*engine.Hook
		for _, name := range []string{"b", "c"} {
			h := withSteps(newHook(name), counted(name))
			h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*"}
			h.Overlap = engine.OverlapQueue
			hs = append(hs, h)
		}
		return hs
	}
	pending := func() []string {
		p, err := db.PendingEvents(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, ev := range p {
			ids = append(ids, ev.ID)
		}
		return ids
	}

	st := &refusedEventRecord{DB: db, hook: "b"}
	first := startEventEngine(t, st, hooks())
	for _, name := range []string{"b", "c"} {
		if _, err := first.Fire(ctx, name, engine.FireOptions{}); err != nil {
			t.Fatalf("fire %s: %v", name, err)
		}
	}
	synctest.Wait()

	st.refuse.Store(true)
	if _, err := first.Emit(ctx, &engine.Event{ID: "e1", Type: "deploy.finished", Data: map[string]any{"n": 1.0}}); err != nil {
		t.Fatalf("emit e1: %v", err)
	}
	if st.refuse.Load() {
		t.Fatal("b's record of e1 was not refused")
	}
	if p := pending(); len(p) != 1 || p[0] != "e1" {
		t.Errorf("pending events once e1 is dispatched, b's record of it refused: %v; want e1", p)
	}

	if kill {
		// hookd is killed: the pending runs never start.
		db.Close()
		first.Stop()
		if db, err = store.Open(path); err != nil {
			t.Fatal(err)
		}
	} else {
		// The runs in flight end: b's and c's pending runs run with e1.
		close(release)
		synctest.Wait()
		first.Stop()
		mu.Lock()
		if withE["b"] != 1 || withE["c"] != 1 {
			t.Errorf("runs with e1 before the restart: %v; want b and c once each", withE)
		}
		mu.Unlock()
	}
	defer db.Close()

	second := startEventEngine(t, db, hooks())
	if _, err := second.DispatchPending(ctx); err != nil {
		t.Errorf("DispatchPending: %v", err)
	}
	synctest.Wait()
	second.Stop()
	mu.Lock()
	defer mu.Unlock()
	if withE["b"] != 1 || withE["c"] != 1 {
		t.Errorf("runs with e1 after the restart: %v; want b and c once each", withE)
	}
	if p := pending(); len(p) != 0 {
		t.Errorf("pending events after the restart: %v; want none", p)
	}
}
