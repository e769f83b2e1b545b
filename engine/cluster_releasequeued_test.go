package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
)

// refusedReleaseOf is a scheduler whose first release of a run of hook
// fails, as a database that drops the connection mid-commit does; it
// tells refused once it refused.
type refusedReleaseOf struct {
	*postgres.Member
	hook    string
	once    sync.Once
	refused chan string // the id of the run whose release failed
}

func (m *refusedReleaseOf) Release(ctx context.Context, r *engine.Run, markSeq int64) error {
	var err error
	if r.Hook == m.hook {
		m.once.Do(func() {
			err = errors.New("release run " + r.ID + ": connection reset by peer")
			m.refused <- r.ID
		})
	}
	if err != nil {
		return err
	}
	return m.Member.Release(ctx, r, markSeq)
}

// TestClusterFailedReleaseOfQueuedRunEndsItsRecord: a queued run whose
// release the database refuses is not executed, and its record says so
// at once: failed, with the store's error, no longer queued (a next
// scheduler would take a queued record for a run that waits, and run
// it), as the single daemon's queued run whose start cannot be recorded
// ends, and as a queued run not released because its queued record was
// not stored in time does; the hook then runs for its next trigger.
// Before, the record stayed queued until the next takeover, while this
// scheduler had given the run up.
func TestClusterFailedReleaseOfQueuedRunEndsItsRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	unblock := make(chan struct{})
	block := withSteps(newHook("block"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		select {
		case <-unblock:
		case <-ctx.Done():
		}
		return &engine.StepResult{Output: "ran"}, nil
	}))
	block.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "block.*"}
	var (
		mu  sync.Mutex
		ran []string // the ids of the events q's runs executed for
	)
	q := withSteps(newHook("q"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		mu.Lock()
		id, _ := env.Scope.Event["id"].(string)
		ran = append(ran, id)
		mu.Unlock()
		return &engine.StepResult{Output: "ran"}, nil
	}))
	q.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "job.*"}

	lockNode(ctx, t, url, "node-a")
	cl := &refusedReleaseOf{Member: db.Member("node-a", 4, 2*time.Second), hook: "q", refused: make(chan string, 1)}
	a := startClusterNode(ctx, t, engine.Config{Store: db, Cluster: cl, MaxConcurrent: 1, StoreTimeout: time.Minute},
		[]*engine.Hook{block, q})
	poll(t, "node A leads", func() bool { self, _ := a.Scheduler(); return self })

	// block takes the one place; q's run for e1 waits queued.
	if _, err := a.Emit(ctx, &engine.Event{ID: "b1", Type: "block.x"}); err != nil {
		t.Fatal(err)
	}
	poll(t, "block's run executing", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "block", Limit: 10})
		return err == nil && len(runs) == 1 && runs[0].Status == engine.StatusRunning
	})
	if _, err := a.Emit(ctx, &engine.Event{ID: "e1", Type: "job.x", Data: map[string]any{"id": "e1"}}); err != nil {
		t.Fatal(err)
	}
	poll(t, "q's run for e1 queued", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "q", Limit: 10})
		return err == nil && len(runs) == 1 && runs[0].Status == engine.StatusQueued
	})
	// Its turn comes; its release is refused.
	close(unblock)
	var id string
	select {
	case id = <-cl.refused:
	case <-time.After(time.Minute):
		t.Fatal("q's queued run was not released within a minute of its turn")
	}

	poll(t, "q's run for e1 recorded failed, no longer queued", func() bool {
		r, err := db.GetRun(ctx, id)
		return err == nil && r.Status != engine.StatusQueued
	})
	if r, err := db.GetRun(ctx, id); err != nil || r.Status != engine.StatusFailed || !strings.Contains(r.Error, "connection reset by peer") {
		t.Fatalf("q's run for e1: %+v %v; want failed with the store's error", r, err)
	}
	if waiting, err := cl.Waiting(ctx); err != nil || len(waiting) != 0 {
		t.Errorf("runs a next scheduler would take as waiting: %d %v, want none", len(waiting), err)
	}

	// The hook is not held: its next trigger runs.
	if _, err := a.Emit(ctx, &engine.Event{ID: "e2", Type: "job.y", Data: map[string]any{"id": "e2"}}); err != nil {
		t.Fatal(err)
	}
	poll(t, "q's run for e2 completed", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "q", Limit: 10})
		return err == nil && len(runs) == 2 && runs[0].Status == engine.StatusCompleted
	})
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 1 || ran[0] != "e2" {
		t.Errorf("q's runs executed for %v, want [e2]", ran)
	}
}
