package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
)

// failingRelease is a scheduler whose next releases fail, as a database
// that drops the connection mid-commit does.
type failingRelease struct {
	*postgres.Member
	fail atomic.Int32 // how many of the next releases fail
}

func (m *failingRelease) Release(ctx context.Context, r *engine.Run, markSeq int64) error {
	if m.fail.Add(-1) >= 0 {
		return errors.New("release run " + r.ID + ": connection reset by peer")
	}
	return m.Member.Release(ctx, r, markSeq)
}

// TestClusterFailedReleaseKeepsEventPending: an event whose run the
// scheduler could not release stays pending, and is dispatched again,
// so that its hook runs for it once the release goes through. Before, it
// was marked dispatched all the same: an accepted event no step saw.
func TestClusterFailedReleaseKeepsEventPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	h := withSteps(newHook("on-job"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		return &engine.StepResult{Output: "ran"}, nil
	}))
	h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "job.*"}
	lockNode(ctx, t, url, "node-a")
	cl := &failingRelease{Member: db.Member("node-a", 4, 2*time.Second)}
	cl.fail.Store(1)
	a := startClusterNode(ctx, t, engine.Config{Store: db, Cluster: cl, MaxConcurrent: 8, StoreTimeout: time.Minute}, []*engine.Hook{h})
	poll(t, "node A leads", func() bool { self, _ := a.Scheduler(); return self })
	if _, err := a.Emit(ctx, &engine.Event{ID: "e1", Type: "job.done"}); err != nil {
		t.Fatal(err)
	}
	poll(t, "a run of on-job for e1, once its release went through", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "on-job", Limit: 10})
		return err == nil && len(runs) == 1 && runs[0].Status == engine.StatusCompleted
	})
	if pend, err := pendingOthers(ctx, db); err != nil || len(pend) != 0 {
		t.Errorf("events still pending after the run: %v %v", pend, err)
	}
}
