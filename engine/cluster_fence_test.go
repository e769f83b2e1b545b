package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
)

// dyingMerger is a scheduler's PostgreSQL store whose node is killed
// while the commit of a merge into a pending run is under way: once park
// is set, the next UpdateQueued waits until the test closes land (the
// commit, sent before the kill, lands when the database gets to it) and
// reports its outcome on landed; the node does nothing more with the
// store (it marks no event dispatched, reads none pending).
type dyingMerger struct {
	diedStore
	park   atomic.Bool
	parked chan struct{}
	land   chan struct{}
	landed chan error
}

func (d *dyingMerger) UpdateQueued(ctx context.Context, r *engine.Run, m engine.Merged) error {
	if !d.park.CompareAndSwap(true, false) {
		if d.dead.Load() {
			return errNodeDied
		}
		return d.DB.UpdateQueued(ctx, r, m)
	}
	d.dead.Store(true)
	close(d.parked)
	<-d.land
	err := d.DB.UpdateQueued(ctx, r, m)
	d.landed <- err
	return err
}

func (d *dyingMerger) MarkDispatched(ctx context.Context, seq int64) error {
	if d.dead.Load() {
		return errNodeDied
	}
	return d.DB.MarkDispatched(ctx, seq)
}

// landingAfterRead is the next scheduler's member: right after its
// takeover read the runs that wait, land is called (the dead scheduler's
// merge lands then).
type landingAfterRead struct {
	*postgres.Member
	once sync.Once
	land func()
}

func (l *landingAfterRead) Waiting(ctx context.Context) ([]*engine.Run, error) {
	runs, err := l.Member.Waiting(ctx)
	l.once.Do(l.land)
	return runs, err
}

// TestClusterMergeLandsAfterTakeover kills a scheduler (node A) with
// the commit of a merge under way, on a real PostgreSQL: hook q
// (overlap: queue) runs e1 on A and has a pending run for e2; A merges
// e3 into it, and its process dies before the commit lands and before
// it marks e3 dispatched. Node B takes the lease over, reads the pending
// run, and only then does A's commit reach the database. Every event
// must reach q's step. A's merge, fenced by its lease (Cluster.Fence),
// fails once B holds the lease, and B dispatches e3 itself. Unfenced, it
// committed: B released the pending run with the payload it had read
// ({e2}) and passed e3 by as reached, marking it dispatched. The same
// happened in TestClusterKills, where a scheduler killed just after an
// event was stored had the commit of its merge land after the next
// scheduler's takeover ("event e23 was accepted but no step saw it").
func TestClusterMergeLandsAfterTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	var (
		mu       sync.Mutex
		seen     = map[string]bool{}
		started  = make(chan struct{}, 16)
		release1 = make(chan struct{})
	)
	hooks := func() []*engine.Hook {
		h := withSteps(newHook("q"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			mu.Lock()
			for k := range env.Scope.Event {
				seen[k] = true
			}
			mu.Unlock()
			started <- struct{}{}
			if _, first := env.Scope.Event["e1"]; first {
				select { // e1's run executes until the test lets it end
				case <-release1:
				case <-ctx.Done():
				}
			}
			return &engine.StepResult{Output: "ran"}, nil
		}))
		h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "job.*"}
		h.Overlap = engine.OverlapQueue
		return []*engine.Hook{h}
	}
	emit := func(e *engine.Engine, key string) []*engine.Run {
		t.Helper()
		runs, err := e.Emit(ctx, &engine.Event{ID: key, Type: "job.done", Data: map[string]any{key: 1.0}})
		if err != nil {
			t.Fatalf("emit %s: %v", key, err)
		}
		return runs
	}

	lockA, err := postgres.LockNode(ctx, url, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	defer lockA.Unlock()
	dying := &dyingMerger{diedStore: diedStore{DB: db}, parked: make(chan struct{}), land: make(chan struct{}), landed: make(chan error, 1)}
	a := startClusterNode(ctx, t, engine.Config{Store: dying, Cluster: db.Member("node-a", 4, 2*time.Second),
		MaxConcurrent: 8, StoreTimeout: time.Minute}, hooks())
	poll(t, "node A leads", func() bool { self, _ := a.Scheduler(); return self })
	emit(a, "e1")
	<-started // e1's run executes on A
	if runs := emit(a, "e2"); len(runs) != 1 || runs[0].Status != engine.StatusQueued {
		t.Fatalf("e2 gave %+v; want q's pending run", runs)
	}

	dying.park.Store(true)
	go a.Emit(ctx, &engine.Event{ID: "e3", Type: "job.done", Data: map[string]any{"e3": 1.0}}) //nolint:errcheck // merged into the pending run; A dies with the commit under way
	<-dying.parked
	if err := lockA.Unlock(); err != nil { // its process is gone: so is its session
		t.Fatal(err)
	}

	var stale error
	lockNode(ctx, t, url, "node-b")
	b := startClusterNode(ctx, t, engine.Config{Store: db, MaxConcurrent: 8, StoreTimeout: time.Minute,
		Cluster: &landingAfterRead{Member: db.Member("node-b", 4, 2*time.Second), land: func() {
			close(dying.land)
			stale = <-dying.landed
		}}}, hooks())
	poll(t, "node B leads", func() bool { self, _ := b.Scheduler(); return self })
	select {
	case err := <-a.Failed(): // A, alive in this test, learns the lease moved
		t.Logf("node A: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("node A did not notice that B holds the lease")
	}
	t.Logf("A's merge, landing after B's takeover read: %v", stale)

	close(release1) // e1's run ends on A; B starts the pending run
	poll(t, "every event dispatched and q's runs final", func() bool {
		if p, err := pendingOthers(ctx, db); err != nil || len(p) != 0 {
			return false
		}
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "q", Limit: 100})
		if err != nil || len(runs) < 2 {
			return false
		}
		for _, r := range runs {
			if !r.Status.Final() {
				return false
			}
		}
		return true
	})
	mu.Lock()
	var got []string
	for k := range seen {
		got = append(got, k)
	}
	mu.Unlock()
	sort.Strings(got)
	if !slices.Equal(got, []string{"e1", "e2", "e3"}) {
		runs, _ := db.ListRuns(ctx, engine.RunFilter{Hook: "q", Limit: 100})
		for _, r := range runs {
			t.Logf("run %s %s %s event %s", r.ID, r.Trigger, r.Status, r.Event)
		}
		t.Errorf("q's step saw the events %v, want e1, e2 and e3", got)
	}
}

// leaseLostRecords is a scheduler's store whose records of new runs are
// refused as a fenced write is once another node holds the lease.
type leaseLostRecords struct {
	*postgres.DB
	refuse atomic.Bool
}

func (s *leaseLostRecords) InsertRun(ctx context.Context, r *engine.Run) error {
	if s.refuse.Load() {
		return fmt.Errorf("insert run %s: %w", r.ID, engine.ErrLeaseLost)
	}
	return s.DB.InsertRun(ctx, r)
}

// TestFencedRecordRefusedStopsScheduler: a scheduler whose record of a
// pending run is refused because it lost the lease (a fenced write,
// Cluster.Fence) stops scheduling at once, and does not report the
// store stalled: the write would fail forever, and the store answers.
// Before, the writer took the refusal for a stall, retried it, said
// "store stalled", and the node went on deciding from a state the
// database no longer had until its lease keeper noticed (here, whose
// lease renews, never).
func TestFencedRecordRefusedStopsScheduler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	h := heldHook(t, "q")
	h.Overlap = engine.OverlapQueue
	st := &leaseLostRecords{DB: db}
	a := leadWithHeldRun(ctx, t, url, db, engine.Config{Store: st, StoreTimeout: time.Minute}, h)
	st.refuse.Store(true)
	go a.Emit(ctx, &engine.Event{ID: "e2", Type: "job.done"}) //nolint:errcheck // its pending run's record is refused
	select {
	case err := <-a.Failed():
		if !errors.Is(err, engine.ErrLeaseLost) {
			t.Errorf("node A failed with %v, want ErrLeaseLost", err)
		}
	case <-time.After(time.Minute):
		stall, stalled := a.StoreStalled()
		t.Fatalf("node A still schedules a minute after its record was refused for a lost lease (store stalled: %v %+v)", stalled, stall)
	}
	if stall, stalled := a.StoreStalled(); stalled {
		t.Errorf("node A reports the store stalled after a refused fenced write: %+v", stall)
	}
}
