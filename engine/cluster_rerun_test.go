package engine_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
)

// deafScheduler is a scheduler's member that hears of no run's end once
// deaf is set: its poll for the runs that ended waits until the node
// stops, as if its process had died there (its lease, renewed by a
// goroutine of its own, stays with it until the test lets it go).
type deafScheduler struct {
	*postgres.Member
	deaf atomic.Bool
}

func (d *deafScheduler) Final(ctx context.Context, ids []string) ([]*engine.Run, error) {
	if d.deaf.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return d.Member.Final(ctx, ids)
}

// killedWorker is a worker's member that stores no run's end once dead
// is set: its runs stay running in the store, as SIGKILL leaves them.
type killedWorker struct {
	*postgres.Member
	dead atomic.Bool
}

func (k *killedWorker) FinishOn(ctx context.Context, r *engine.Run) error {
	if k.dead.Load() {
		return errNodeDied
	}
	return k.Member.FinishOn(ctx, r)
}

// TestClusterRerunAcrossFailover interrupts a run of a hook with
// on_interrupted: rerun (or retry.on: [interrupted]) while the cluster's scheduler dies, on a real
// PostgreSQL. Node A schedules (and executes nothing); worker W executes
// the run and is killed; A dies before it hears of the run's end (it
// keeps its lease, as a scheduler whose machine lost power keeps it until
// it runs out); W restarts, marks the run interrupted (its earlier
// process left it running) and, once A's session is gone, takes the
// lease over. The rerun (retry) the run is owed must run, once. When the
// scheduler decided it only in memory, as it heard of the run's end, it
// never ran: the next scheduler found the run final, neither in flight
// nor with a pending rerun stored, and owed it nothing.
func TestClusterRerunAcrossFailover(t *testing.T) {
	t.Parallel()
	t.Run("rerun", func(t *testing.T) {
		t.Parallel()
		testClusterFollowAcrossFailover(t, engine.TriggerRerun)
	})
	t.Run("retry", func(t *testing.T) { // retry.on: [interrupted], likewise
		t.Parallel()
		testClusterFollowAcrossFailover(t, engine.TriggerRetry)
	})
}

// testClusterFollowAcrossFailover is TestClusterRerunAcrossFailover with
// the hook's policy for its interrupted runs: a rerun (TriggerRerun) or
// a retry (TriggerRetry).
func testClusterFollowAcrossFailover(t *testing.T, follow string) {
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	f := newFollowHook(t, follow)

	lockA, err := postgres.LockNode(ctx, url, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	defer lockA.Unlock()
	sched := &deafScheduler{Member: db.Member("node-a", 0, 2*time.Second)}
	a := startClusterNode(ctx, t, engine.Config{Store: db, Cluster: sched, MaxConcurrent: 8}, f.hooks())
	poll(t, "node A leads", func() bool { self, _ := a.Scheduler(); return self })

	interrupted := runOnKilledWorker(ctx, t, url, db, a, f, func() {
		sched.deaf.Store(true) // A dies: it hears of no run's end from now on
	})

	// W restarts: A's lease is still good, so it recovers its run as a
	// worker (interrupted), then takes the lease once A's session is gone.
	lockNode(ctx, t, url, "node-w")
	w2 := startClusterNode(ctx, t, engine.Config{Store: db, Cluster: db.Member("node-w", 4, 2*time.Second), MaxConcurrent: 8}, f.hooks())
	if self, _ := w2.Scheduler(); self {
		t.Fatal("the restarted W took the lease A holds")
	}
	if got, err := db.GetRun(ctx, interrupted.ID); err != nil || got.Status != engine.StatusInterrupted {
		t.Fatalf("the run after W's restart: %+v %v; want it interrupted", got, err)
	}
	if err := lockA.Unlock(); err != nil { // A's process is gone: so is its session
		t.Fatal(err)
	}
	poll(t, "the restarted W leads", func() bool { self, _ := w2.Scheduler(); return self })

	poll(t, "the interrupted run's "+follow+" executes", func() bool { return f.steps() == 2 })
	followedOnce(ctx, t, db, interrupted, follow)
	if p, err := db.PendingReruns(ctx); err != nil || len(p) != 0 {
		t.Errorf("pending reruns left: %+v %v", p, err)
	}
	if p, err := db.PendingRetries(ctx); err != nil || len(p) != 0 {
		t.Errorf("pending retries left: %+v %v", p, err)
	}
}

// followHook is hook h, whose runs execute until the test ends or their
// node stops, with follow (TriggerRerun: on_interrupted: rerun;
// TriggerRetry: retry.on: [interrupted]) for its interrupted runs.
type followHook struct {
	follow  string
	release chan struct{}

	mu      sync.Mutex
	started int // its runs that executed
}

func newFollowHook(t *testing.T, follow string) *followHook {
	f := &followHook{follow: follow, release: make(chan struct{})}
	t.Cleanup(func() { close(f.release) })
	return f
}

// hooks are a node's hooks: h.
func (f *followHook) hooks() []*engine.Hook {
	h := withSteps(newHook("h"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		f.mu.Lock()
		f.started++
		f.mu.Unlock()
		select { // each run executes until the test ends, or its node stops
		case <-f.release:
		case <-ctx.Done():
		}
		return &engine.StepResult{Output: "ran"}, nil
	}))
	h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "job.*"}
	if f.follow == engine.TriggerRerun {
		h.OnInterrupted = engine.InterruptedRerun
	} else {
		h.Retry = engine.RetryPolicy{Attempts: 2, On: []engine.Status{engine.StatusInterrupted}, Backoff: 50 * time.Millisecond}
	}
	return []*engine.Hook{h}
}

// steps is how many runs of h executed.
func (f *followHook) steps() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started
}

// runOnKilledWorker starts worker W (node-w), has scheduler a dispatch
// an event to h, waits until its run executes on W, calls before (when
// set), and kills W: the run stays running in the store. It returns that
// run.
func runOnKilledWorker(ctx context.Context, t *testing.T, url string, db *postgres.DB, a *engine.Engine, f *followHook, before func()) *engine.Run {
	t.Helper()
	lockW, err := postgres.LockNode(ctx, url, "node-w")
	if err != nil {
		t.Fatal(err)
	}
	defer lockW.Unlock()
	worker := &killedWorker{Member: db.Member("node-w", 4, 2*time.Second)}
	w := startClusterNode(ctx, t, engine.Config{Store: db, Cluster: worker, MaxConcurrent: 8}, f.hooks())
	if _, err := a.Emit(ctx, &engine.Event{ID: "e1", Type: "job.done"}); err != nil {
		t.Fatal(err)
	}
	var interrupted *engine.Run
	poll(t, "e1's run executes on W", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "h", Limit: 10})
		if err != nil || len(runs) != 1 || runs[0].Status != engine.StatusRunning || f.steps() != 1 {
			return false
		}
		interrupted = runs[0]
		return true
	})
	if before != nil {
		before()
	}
	worker.dead.Store(true)
	w.Stop() // W is killed: the run stays running in the store
	if err := lockW.Unlock(); err != nil {
		t.Fatal(err)
	}
	return interrupted
}

// followedOnce checks that h has one run besides interrupted, its
// follow-up, running, and returns it.
func followedOnce(ctx context.Context, t *testing.T, db *postgres.DB, interrupted *engine.Run, follow string) *engine.Run {
	t.Helper()
	runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "h", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var again []*engine.Run
	for _, r := range runs {
		if r.ID != interrupted.ID {
			again = append(again, r)
		}
	}
	if len(again) != 1 || again[0].Trigger != follow || again[0].Status != engine.StatusRunning {
		t.Fatalf("runs of h besides the interrupted one: %+v; want its one %s, running", again, follow)
	}
	return again[0]
}
