package engine_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
)

// queuedReleaseFails is a scheduler's member whose first release of a
// rerun or retry fails without committing; queued says whether that run
// had waited queued.
type queuedReleaseFails struct {
	*postgres.Member
	done, queued atomic.Bool
}

func (m *queuedReleaseFails) Release(ctx context.Context, r *engine.Run, markSeq int64) error {
	if (r.Trigger == engine.TriggerRerun || r.Trigger == engine.TriggerRetry) && m.done.CompareAndSwap(false, true) {
		m.queued.Store(!r.QueuedAt.IsZero())
		return fmt.Errorf("release run %s: %w", r.ID, context.DeadlineExceeded)
	}
	return m.Member.Release(ctx, r, markSeq)
}

// TestClusterQueuedFollowUpReleaseFails: on a real PostgreSQL, the rerun
// (retry) of a run interrupted on a killed worker waits queued on the
// scheduler (max_concurrent: 1, another hook's run executing), and its
// release then fails. The pending rerun (retry) stays stored, its
// record queued, and the scheduler's next poll puts it back in line: it
// runs, once, with the run id it was given. Before, its queued record
// ended failed under that id and the poll took it for started: it never
// ran.
func TestClusterQueuedFollowUpReleaseFails(t *testing.T) {
	t.Parallel()
	for _, follow := range []string{engine.TriggerRerun, engine.TriggerRetry} {
		t.Run(follow, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url, db := newClusterDB(ctx, t)
			f := newFollowHook(t, follow)
			busyDone := make(chan struct{})
			busy := withSteps(newHook("busy"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
				select {
				case <-busyDone:
				case <-ctx.Done():
				}
				return &engine.StepResult{Output: "ran"}, nil
			}))
			busy.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "busy.*"}
			hooks := append(f.hooks(), busy)

			lockNode(ctx, t, url, "node-a")
			sched := &queuedReleaseFails{Member: db.Member("node-a", 0, 2*time.Second)}
			a := startClusterNode(ctx, t, engine.Config{Store: db, Cluster: sched, MaxConcurrent: 1}, hooks)
			poll(t, "node A leads", func() bool { self, _ := a.Scheduler(); return self })

			interrupted := runOnKilledWorker(ctx, t, url, db, a, f, nil)
			// busy's run waits queued behind the interrupted run (still
			// running in the store), and runs first once it ends.
			if _, err := a.Emit(ctx, &engine.Event{ID: "b1", Type: "busy.go"}); err != nil {
				t.Fatal(err)
			}
			poll(t, "busy's run is queued", func() bool {
				runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "busy", Limit: 10})
				return err == nil && len(runs) == 1 && runs[0].Status == engine.StatusQueued
			})
			// W restarts and marks its run interrupted; A releases busy's
			// run, and h's follow-up waits queued behind it.
			lockNode(ctx, t, url, "node-w")
			startClusterNode(ctx, t, engine.Config{Store: db, Cluster: db.Member("node-w", 4, 2*time.Second), MaxConcurrent: 8}, hooks)
			poll(t, "busy's run executes", func() bool {
				runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "busy", Limit: 10})
				return err == nil && len(runs) == 1 && runs[0].Status == engine.StatusRunning
			})
			close(busyDone)

			poll(t, "the "+follow+"'s release fails", sched.done.Load)
			if !sched.queued.Load() {
				t.Fatalf("the %s whose release failed had not waited queued", follow)
			}
			poll(t, "the interrupted run's "+follow+" executes", func() bool { return f.steps() == 2 })
			poll(t, "no pending rerun or retry is left", func() bool {
				reruns, err := db.PendingReruns(ctx)
				if err != nil || len(reruns) != 0 {
					return false
				}
				retries, err := db.PendingRetries(ctx)
				return err == nil && len(retries) == 0
			})
			followedOnce(ctx, t, db, interrupted, follow)
			if n := f.steps(); n != 2 {
				t.Errorf("h executed %d times; want 2 (the run, its %s)", n, follow)
			}
		})
	}
}
