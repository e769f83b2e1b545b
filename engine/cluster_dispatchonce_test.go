package engine_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
)

// dyingDispatcher is a scheduler's PostgreSQL store whose node dies, once
// die is set, at the moment it would mark an event dispatched: the mark is
// not stored, and the node reads no pending event again.
type dyingDispatcher struct {
	diedStore
	die atomic.Bool
}

// diedStore is a node's PostgreSQL store that reads no event pending
// once dead is set: the node's process is gone.
type diedStore struct {
	*postgres.DB
	dead atomic.Bool
}

func (d *diedStore) PendingEvents(ctx context.Context, limit int) ([]*engine.Event, error) {
	if d.dead.Load() {
		return nil, errNodeDied
	}
	return d.DB.PendingEvents(ctx, limit)
}

var errNodeDied = errors.New("the node died before the event's mark was stored")

func (d *dyingDispatcher) MarkDispatched(ctx context.Context, seq int64) error {
	if d.die.Load() {
		d.dead.Store(true)
		return errNodeDied
	}
	return d.DB.MarkDispatched(ctx, seq)
}

// TestClusterEventOnceAcrossFailover performs a scheduler failover between
// the runs an event started and the event's mark, on a real PostgreSQL.
// Event e1 matches three hooks: node A, the scheduler, releases a run of a
// and one of b, merges e1 into c's pending rerun (overlap: queue; c's
// first run executes on A), and dies where it would mark e1 dispatched.
// Node B takes over and dispatches e1 again, as it must (pending): it must
// reach none of the three hooks a second time. a and b ran once; c ran its
// first run and the pending run e1 merged into. The same with c alone:
// an event that only merges into a pending run.
func TestClusterEventOnceAcrossFailover(t *testing.T) {
	t.Parallel()
	t.Run("several hooks", func(t *testing.T) { testClusterEventOnce(t, []string{"a", "b", "c"}) })
	t.Run("merged only", func(t *testing.T) { testClusterEventOnce(t, []string{"c"}) })
}

// testClusterEventOnce is TestClusterEventOnceAcrossFailover with the
// hooks names, of which c (overlap: queue) is the one e1 merges into.
func testClusterEventOnce(t *testing.T, names []string) {
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
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
			if name == "c" && first { // c's first run executes until its node stops
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return &engine.StepResult{Output: "ran"}, nil
		})
	}
	steps := func(name string) int { mu.Lock(); defer mu.Unlock(); return ran[name] }
	hooks := func() []*engine.Hook {
		var hs []*engine.Hook
		for _, name := range names {
			h := withSteps(newHook(name), counted(name))
			h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*"}
			if name == "c" {
				h.Overlap = engine.OverlapQueue
			}
			hs = append(hs, h)
		}
		return hs
	}

	lockNode(ctx, t, url, "node-a")
	dying := &dyingDispatcher{diedStore: diedStore{DB: db}}
	a := startClusterNode(ctx, t, engine.Config{Store: dying, Cluster: db.Member("node-a", 4, 2*time.Second), MaxConcurrent: 8}, hooks())
	poll(t, "node A leads", func() bool {
		_, err := a.Fire(ctx, "c", engine.FireOptions{})
		return err == nil
	})
	poll(t, "c's first run executes on A", func() bool { return steps("c") == 1 })
	pending, err := a.Fire(ctx, "c", engine.FireOptions{})
	if err != nil || pending.Status != engine.StatusQueued {
		t.Fatalf("fire c again: %v, %+v; want a pending rerun", err, pending)
	}

	dying.die.Store(true)
	runs, err := a.Emit(ctx, &engine.Event{ID: "e1", Type: "deploy.finished", Data: map[string]any{"n": 1.0}})
	if err != nil {
		t.Fatalf("emit e1 on the scheduler: %v", err)
	}
	got := map[string]string{}
	for _, r := range runs {
		got[r.Hook] = r.ID
	}
	if got["c"] != pending.ID || len(got) != len(names) || len(names) > 1 && (got["a"] == "" || got["b"] == "") {
		t.Fatalf("e1 gave runs %v; want a and b released (of %v) and c's pending run %s", got, names, pending.ID)
	}
	if !dying.dead.Load() {
		t.Fatal("node A did not come to marking e1 dispatched")
	}
	// A's claims go on (only its dispatch died): a's and b's runs end on
	// A before it stops. Stopped with no grace period, A would cancel one
	// it had started (shutdown), and the count below would find a run
	// cancelled, not one run twice (seen at load).
	for _, name := range names {
		if name == "c" {
			continue
		}
		poll(t, "hook "+name+"'s run ends on node A", func() bool {
			rs, err := db.ListRuns(ctx, engine.RunFilter{Hook: name, Limit: 10})
			return err == nil && len(rs) == 1 && rs[0].Status.Final()
		})
	}
	a.Stop()

	lockNode(ctx, t, url, "node-b")
	startClusterNode(ctx, t, engine.Config{Store: db, Cluster: db.Member("node-b", 4, 2*time.Second), MaxConcurrent: 8}, hooks())
	final := func() (map[string]int, bool) {
		if p, err := pendingOthers(ctx, db); err != nil || len(p) != 0 {
			return nil, false // B has not dispatched e1 yet
		}
		n := map[string]int{}
		for _, h := range names {
			rs, err := db.ListRuns(ctx, engine.RunFilter{Hook: h, Limit: 100})
			if err != nil {
				return nil, false
			}
			for _, r := range rs {
				if !r.Status.Final() {
					return nil, false
				}
			}
			n[h] = len(rs)
		}
		return n, n["c"] >= 2
	}
	var records map[string]int
	poll(t, "B dispatches e1 and every run is final", func() bool {
		var ok bool
		records, ok = final()
		return ok
	})
	want := map[string]int{"a": 1, "b": 1, "c": 2}
	for _, name := range names {
		n := want[name]
		if records[name] != n || steps(name) != n {
			t.Errorf("hook %s has %d runs and ran its step %d times, want %d", name, records[name], steps(name), n)
		}
	}
	if hooks, err := db.DispatchedTo(ctx, eventSeq(t, db, "e1")); err != nil || len(hooks) != 0 {
		t.Errorf("e1's dispatch records after its mark: %v %v; want none", hooks, err)
	}
}
