package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
	"github.com/jackc/pgx/v5"
)

// releaseErrs is a scheduler whose failed releases are reported on errs.
type releaseErrs struct {
	*postgres.Member
	errs chan error
}

func (m *releaseErrs) Release(ctx context.Context, r *engine.Run, markSeq int64) error {
	err := m.Member.Release(ctx, r, markSeq)
	if err != nil {
		select {
		case m.errs <- err:
		default:
		}
	}
	return err
}

// TestClusterReleaseStalled: a release that the database does not answer
// (here its transaction waits for a row another session holds locked: the
// event its run marks dispatched) gives up after StoreTimeout, as the
// scheduler's other writes do, and is a failed release: the event stays
// pending, and once the database answers, the scheduler dispatches it
// again and its hook runs for it, once; other events are dispatched
// meanwhile. Before, the release had no deadline and waited for as long
// as the lock was held: its hook stayed in flight, and the scheduler's
// dispatching of events and fires waited for the run's start with it.
func TestClusterReleaseStalled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	h := withSteps(newHook("on-job"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		return &engine.StepResult{Output: "ran"}, nil
	}))
	h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "job.*"}
	other := withSteps(newHook("other"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		return &engine.StepResult{Output: "ran"}, nil
	}))
	other.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "other.*"}
	// e1 waits pending for the scheduler, its row locked.
	if err := db.AppendPendingEvent(ctx, &engine.Event{ID: "e1", Type: "job.done", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	lock, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx) // before the node stops: its release would wait for it
	if _, err := lock.Exec(ctx, `SELECT 1 FROM events WHERE id = 'e1' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	lockNode(ctx, t, url, "node-a")
	cl := &releaseErrs{Member: db.Member("node-a", 4, 2*time.Second), errs: make(chan error, 1)}
	a := startClusterNode(ctx, t, engine.Config{Store: db, Cluster: cl, MaxConcurrent: 8, StoreTimeout: time.Second}, []*engine.Hook{h, other})
	select {
	case err := <-cl.errs:
		t.Logf("the release of e1's run, stalled: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the release of e1's run, stalled on a locked row, did not give up within a minute (store timeout 1s)")
	}
	if runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "on-job", Limit: 10}); err != nil || len(runs) != 0 {
		t.Errorf("runs of on-job recorded while its release stalled: %v %v", runs, err)
	}
	// The scheduler dispatches other events meanwhile (before, the one
	// dispatching e1 waited for its run's start, holding the others).
	ectx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := a.Emit(ectx, &engine.Event{ID: "e2", Type: "other.x"}); err != nil {
		t.Fatalf("emit e2 while e1's release stalls: %v", err)
	}
	poll(t, "a run of other for e2, while e1's release stalls", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "other", Limit: 10})
		return err == nil && len(runs) == 1 && runs[0].Status == engine.StatusCompleted
	})

	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	poll(t, "a run of on-job for e1, once the database answers", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "on-job", Limit: 10})
		return err == nil && len(runs) == 1 && runs[0].Status == engine.StatusCompleted
	})
	if pend, err := pendingOthers(ctx, db); err != nil || len(pend) != 0 {
		t.Errorf("events still pending after the run: %v %v", pend, err)
	}
	if runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "on-job", Limit: 10}); err != nil || len(runs) != 1 {
		t.Errorf("runs of on-job: %v %v, want one", runs, err)
	}
}
