package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
)

// TestClusterOutcomeAcrossFailover has a run fail on worker W, on a real
// PostgreSQL, and checks that hook react (trigger: event:
// hook.run.failed) runs once for it. In "failover", scheduler A dies
// (it hears of no run's end) before it reads that end, and W takes the
// lease over. When the scheduler published a released run's outcome only
// as it read its end, from its memory, no hook.run.failed was ever
// dispatched: the next scheduler found the run final, not in flight, and
// told nobody. In "scheduler reads it", A reads the end itself: its
// outcome is dispatched once, not a second time by the poll that tells
// the runs a scheduler before did not.
func TestClusterOutcomeAcrossFailover(t *testing.T) {
	t.Parallel()
	t.Run("failover", func(t *testing.T) {
		t.Parallel()
		testClusterOutcome(t, true)
	})
	t.Run("scheduler reads it", func(t *testing.T) {
		t.Parallel()
		testClusterOutcome(t, false)
	})
}

func testClusterOutcome(t *testing.T, failover bool) {
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	o := newOutcomeHooks(t, engine.EventRunFailed)

	lockA, err := postgres.LockNode(ctx, url, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	defer lockA.Unlock()
	sched := &deafScheduler{Member: db.Member("node-a", 0, 2*time.Second)}
	a := startClusterNode(ctx, t, engine.Config{Store: db, Cluster: sched, MaxConcurrent: 8}, o.hooks())
	poll(t, "node A leads", func() bool { self, _ := a.Scheduler(); return self })
	lockNode(ctx, t, url, "node-w")
	w := startClusterNode(ctx, t, engine.Config{Store: db, Cluster: db.Member("node-w", 4, 2*time.Second), MaxConcurrent: 8}, o.hooks())

	if _, err := a.Emit(ctx, &engine.Event{ID: "e1", Type: "job.done"}); err != nil {
		t.Fatal(err)
	}
	var failed *engine.Run
	poll(t, "e1's run executes on W", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "h", Limit: 10})
		if err != nil || len(runs) != 1 || runs[0].Status != engine.StatusRunning {
			return false
		}
		failed = runs[0]
		return true
	})
	if failover {
		sched.deaf.Store(true) // A dies: it hears of no run's end from now on
	}
	close(o.fail)
	poll(t, "W stores the run's end", func() bool {
		r, err := db.GetRun(ctx, failed.ID)
		return err == nil && r.Status == engine.StatusFailed
	})
	if failover {
		if err := lockA.Unlock(); err != nil { // A's process is gone: so is its session
			t.Fatal(err)
		}
		poll(t, "W leads", func() bool { self, _ := w.Scheduler(); return self })
	}

	poll(t, "react runs for hook.run.failed", func() bool { return o.reacted() >= 1 })
	poll(t, "no event pending", func() bool {
		p, err := db.PendingEvents(ctx, 10)
		return err == nil && len(p) == 0
	})
	o.toldOnce(ctx, t, db, failed)
}

// TestClusterInterruptedOutcomeAcrossFailover: the run of worker W,
// killed, is marked interrupted by scheduler A's expiry of W's runs; A
// dies before it reads that end, and node B takes the lease over. Hook
// react (trigger: event: hook.run.failed, the event of an interrupted
// run too) must run once. When the
// scheduler published the outcome only from its memory as it read the
// end, it never ran.
func TestClusterInterruptedOutcomeAcrossFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	o := newOutcomeHooks(t, engine.EventRunFailed)

	lockA, err := postgres.LockNode(ctx, url, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	defer lockA.Unlock()
	sched := &deafScheduler{Member: db.Member("node-a", 0, 2*time.Second)}
	a := startClusterNode(ctx, t, engine.Config{Store: db, Cluster: sched, MaxConcurrent: 8}, o.hooks())
	poll(t, "node A leads", func() bool { self, _ := a.Scheduler(); return self })
	lockW, err := postgres.LockNode(ctx, url, "node-w")
	if err != nil {
		t.Fatal(err)
	}
	defer lockW.Unlock()
	worker := &killedWorker{Member: db.Member("node-w", 4, 2*time.Second)}
	w := startClusterNode(ctx, t, engine.Config{Store: db, Cluster: worker, MaxConcurrent: 8}, o.hooks())
	if _, err := a.Emit(ctx, &engine.Event{ID: "e1", Type: "job.done"}); err != nil {
		t.Fatal(err)
	}
	var interrupted *engine.Run
	poll(t, "e1's run executes on W", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "h", Limit: 10})
		if err != nil || len(runs) != 1 || runs[0].Status != engine.StatusRunning {
			return false
		}
		interrupted = runs[0]
		return true
	})
	sched.deaf.Store(true) // A dies: it hears of no run's end from now on
	worker.dead.Store(true)
	w.Stop() // W is killed: the run stays running in the store
	if err := lockW.Unlock(); err != nil {
		t.Fatal(err)
	}
	poll(t, "A's expiry marks W's run interrupted", func() bool {
		r, err := db.GetRun(ctx, interrupted.ID)
		return err == nil && r.Status == engine.StatusInterrupted
	})

	lockNode(ctx, t, url, "node-b")
	b := startClusterNode(ctx, t, engine.Config{Store: db, Cluster: db.Member("node-b", 4, 2*time.Second), MaxConcurrent: 8}, o.hooks())
	if err := lockA.Unlock(); err != nil { // A's process is gone: so is its session
		t.Fatal(err)
	}
	poll(t, "B leads", func() bool { self, _ := b.Scheduler(); return self })
	poll(t, "react runs for the interrupted run's hook.run.failed", func() bool { return o.reacted() >= 1 })
	poll(t, "no event pending", func() bool {
		p, err := db.PendingEvents(ctx, 10)
		return err == nil && len(p) == 0
	})
	o.toldOnce(ctx, t, db, interrupted)
}

// toldOnce fails t unless run r's outcome event (of type o.on) is stored
// once and react ran once.
func (o *outcomeHooks) toldOnce(ctx context.Context, t *testing.T, db *postgres.DB, r *engine.Run) {
	t.Helper()
	var told []*engine.Event
	evs, err := db.ListEvents(ctx, o.on, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Data["run_id"] == r.ID {
			told = append(told, ev)
		}
	}
	if len(told) != 1 {
		t.Errorf("%s events of run %s: %d; want 1", o.on, r.ID, len(told))
	}
	runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "react", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || o.reacted() != 1 {
		t.Errorf("runs of react: %d stored, %d executed; want 1", len(runs), o.reacted())
	}
}

// outcomeHooks are hook h, of job.* events, whose runs fail once fail is
// closed (or their node stops), and hook react, of outcome events of
// type on, whose runs it counts.
type outcomeHooks struct {
	fail chan struct{}
	on   string

	mu    sync.Mutex
	react int
}

func newOutcomeHooks(t *testing.T, on string) *outcomeHooks {
	return &outcomeHooks{fail: make(chan struct{}), on: on}
}

func (o *outcomeHooks) hooks() []*engine.Hook {
	h := withSteps(newHook("h"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		select {
		case <-o.fail:
		case <-ctx.Done():
		}
		return nil, errors.New("boom")
	}))
	h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "job.*"}
	react := withSteps(newHook("react"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		o.mu.Lock()
		o.react++
		o.mu.Unlock()
		return &engine.StepResult{Output: "reacted"}, nil
	}))
	react.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: o.on}
	return []*engine.Hook{h, react}
}

// reacted is how many runs of react executed.
func (o *outcomeHooks) reacted() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.react
}
