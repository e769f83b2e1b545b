package engine_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
)

// heldEventRecord is a real SQLite store whose record of a run of hook
// that an event reached (Run.EventSeq: a run that waits), while hold is
// set, does not return until unhold is closed: a slow store, or one with
// a backlog of writes. kill closes the database, as when hookd is killed:
// the held write, released then, stores nothing.
type heldEventRecord struct {
	*store.DB
	hook    string
	hold    atomic.Bool
	holding atomic.Int32
	unhold  chan struct{}
}

func (s *heldEventRecord) InsertRun(ctx context.Context, r *engine.Run) error {
	if s.hold.Load() && r.Hook == s.hook && r.EventSeq != 0 {
		s.holding.Add(1)
		<-s.unhold
	}
	return s.DB.InsertRun(ctx, r)
}

// TestMarkWaitsForEventRecords performs a kill of a single daemon while
// the record of what an event did to one hook waits in the writer. Event
// e1 matches a (idle: its run starts) and b (overlap: queue, in flight:
// e1 gives it a pending run, whose record is held). e1 must stay pending
// while b's record is not stored; killed then, the next start dispatches
// e1 again and b gets it, once. Before, e1 was marked dispatched once a's
// start was recorded, and b never saw e1.
func TestMarkWaitsForEventRecords(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "hookd.db")
		var (
			mu    sync.Mutex
			ran   = map[string]int{}
			withE = map[string]int{}
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
				if name == "b" && first { // b's first run is in flight until the daemon stops
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return &engine.StepResult{Output: "ran"}, nil
			})
		}
		hooks := func() []*engine.Hook {
			a := withSteps(newHook("a"), counted("a"))
			a.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*"}
			b := withSteps(newHook("b"), counted("b"))
			b.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*"}
			b.Overlap = engine.OverlapQueue
			return []*engine.Hook{a, b}
		}
		start := func(st engine.Store) *engine.Engine {
			return startEventEngine(t, st, hooks())
		}
		db, err := store.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st := &heldEventRecord{DB: db, hook: "b", unhold: make(chan struct{})}
		first := start(st)
		if _, err := first.Fire(ctx, "b", engine.FireOptions{}); err != nil {
			t.Fatalf("fire b: %v", err)
		}
		synctest.Wait()

		st.hold.Store(true)
		emitted := make(chan error, 1)
		go func() {
			_, err := first.Emit(ctx, &engine.Event{ID: "e1", Type: "deploy.finished", Data: map[string]any{"n": 1.0}})
			emitted <- err
		}()
		synctest.Wait()
		if st.holding.Load() != 1 {
			t.Fatal("b's record of e1 is not held")
		}
		// However long the record is held, e1 is not marked before it.
		time.Sleep(time.Minute)
		synctest.Wait()
		if p, err := db.PendingEvents(ctx, 10); err != nil || len(p) != 1 || p[0].ID != "e1" {
			t.Errorf("pending events while b's record of e1 is held: %v %v; want e1", p, err)
		}
		// hookd is killed: b's record is never stored.
		db.Close()
		close(st.unhold)
		<-emitted
		first.Stop()

		db, err = store.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		second := start(db)
		n, err := second.DispatchPending(ctx)
		if err != nil || n != 1 {
			t.Errorf("DispatchPending: %d %v; want e1 dispatched", n, err)
		}
		synctest.Wait()
		second.Stop()

		mu.Lock()
		defer mu.Unlock()
		if withE["a"] != 1 || withE["b"] != 1 {
			t.Errorf("runs with e1: %v; want a and b once each", withE)
		}
		if p, err := db.PendingEvents(ctx, 10); err != nil || len(p) != 0 {
			t.Errorf("pending events after the redispatch: %v %v; want none", p, err)
		}
	})
}
