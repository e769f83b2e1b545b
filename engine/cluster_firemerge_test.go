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

// dyingDecider is a scheduler that dies, once die is set, right after it
// decided a fire request and before the answer is stored: the
// transaction that holds the request rolls back, as the death of the
// node would have it, and the node decides nothing more.
type dyingDecider struct {
	*postgres.Member
	die     atomic.Bool
	dead    atomic.Bool
	decided chan engine.FireAnswer
}

func (d *dyingDecider) DecideFires(ctx context.Context, decide func(context.Context, engine.FireRequest) (engine.FireAnswer, error)) (int, error) {
	if d.dead.Load() {
		return 0, errors.New("the node is dead")
	}
	return d.Member.DecideFires(ctx, func(ctx context.Context, req engine.FireRequest) (engine.FireAnswer, error) {
		a, err := decide(ctx, req)
		if err != nil || !d.die.Load() {
			return a, err
		}
		d.dead.Store(true)
		d.decided <- a
		return engine.FireAnswer{}, errors.New("the node died before the answer was stored")
	})
}

// TestClusterFireMergedOnceAcrossFailover performs a failover between the
// merge of a forwarded fire into a pending run and the storing of the
// answer, on a real PostgreSQL. Node A schedules and executes a's first
// run; a fire of a, requested by another node, merges into a's pending
// rerun; A dies before its answer is stored. Node B takes over: a's
// first run ended with A, so the pending rerun starts on B. B then finds
// the request unanswered and decides it again: it must answer with the
// run the fire merged into, not fire a once more (a third run of a for
// two fires).
func TestClusterFireMergedOnceAcrossFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	var (
		mu    sync.Mutex
		steps int
	)
	release := make(chan struct{})
	defer close(release)
	aStep := funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		mu.Lock()
		steps++
		first := steps == 1
		mu.Unlock()
		if first { // a's first run holds until its node stops
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-release:
			}
		}
		return &engine.StepResult{Output: "ran"}, nil
	})
	hooks := func() []*engine.Hook {
		a := withSteps(newHook("a"), aStep)
		a.Overlap = engine.OverlapQueue
		return []*engine.Hook{a}
	}
	node := func(cl engine.Cluster) *engine.Engine {
		return startClusterNode(ctx, t, engine.Config{Store: db, Cluster: cl, MaxConcurrent: 4}, hooks())
	}

	lockNode(ctx, t, url, "node-a")
	dying := &dyingDecider{Member: db.Member("node-a", 1, 2*time.Second), decided: make(chan engine.FireAnswer, 1)}
	a := node(dying)
	var (
		first *engine.Run
		err   error
	)
	poll(t, "node A leads", func() bool {
		first, err = a.Fire(ctx, "a", engine.FireOptions{})
		return err == nil
	})
	poll(t, "a's first run executes on A", func() bool { mu.Lock(); defer mu.Unlock(); return steps == 1 })
	pending, err := a.Fire(ctx, "a", engine.FireOptions{Event: map[string]any{"n": 1}})
	if err != nil || pending.Status != engine.StatusQueued {
		t.Fatalf("fire a again: %v, %+v; want a pending rerun", err, pending)
	}

	// Another node asks for a fire of a; A merges it into the pending
	// rerun and dies before its answer is stored.
	dying.die.Store(true)
	lockNode(ctx, t, url, "node-c")
	asker := db.Member("node-c", 1, 2*time.Second)
	req := engine.FireRequest{ID: engine.NewID(), Hook: "a", Event: map[string]any{"n": 2}, Node: "node-c"}
	if err := asker.RequestFire(ctx, req); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-dying.decided:
		if got.Run == nil || got.Run.ID != pending.ID {
			t.Fatalf("A decided %+v; want the fire merged into the pending run %s", got.Run, pending.ID)
		}
	case <-time.After(time.Minute):
		t.Fatal("A did not decide the fire request")
	}
	a.Stop()

	lockNode(ctx, t, url, "node-b")
	b := node(db.Member("node-b", 4, 2*time.Second))
	var ans engine.FireAnswer
	poll(t, "B answers the fire request", func() bool {
		var ok bool
		ans, ok, err = asker.FireAnswer(ctx, req.ID)
		return err == nil && ok
	})
	if ans.Run == nil || ans.Run.ID != pending.ID {
		t.Errorf("B answered %+v (gate %v, error %q); want the run the fire merged into, %s", ans.Run, ans.Gate, ans.Error, pending.ID)
	}
	poll(t, "a's runs are final", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "a", Limit: 100})
		if err != nil {
			return false
		}
		for _, r := range runs {
			if !r.Status.Final() {
				return false
			}
		}
		return len(runs) >= 2
	})
	runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "a", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID+" "+string(r.Status))
	}
	if len(runs) != 2 {
		t.Errorf("a has %d runs: %v; want 2 (%s, and %s that the fire merged into)", len(runs), ids, first.ID, pending.ID)
	}
	_ = b
}
