package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
)

// faultyFollow is a scheduler's member with one fault, once: the release
// of the first rerun or retry fails without committing (as one the
// database does not answer within StoreTimeout), or the answer of the
// first Follow is lost after its commit (as when the store's deadline
// comes during it).
type faultyFollow struct {
	*postgres.Member
	fault string // "release" or "follow"
	done  atomic.Bool

	mu     sync.Mutex
	failed string // the run whose release failed
}

func (f *faultyFollow) Release(ctx context.Context, r *engine.Run, markSeq int64) error {
	if f.fault == "release" && (r.Trigger == engine.TriggerRerun || r.Trigger == engine.TriggerRetry) && f.done.CompareAndSwap(false, true) {
		f.mu.Lock()
		f.failed = r.ID
		f.mu.Unlock()
		return fmt.Errorf("release run %s: %w", r.ID, context.DeadlineExceeded)
	}
	return f.Member.Release(ctx, r, markSeq)
}

func (f *faultyFollow) Follow(ctx context.Context, id string, retry *engine.PendingRetry, rerun *engine.PendingRerun) error {
	err := f.Member.Follow(ctx, id, retry, rerun)
	if err == nil && f.fault == "follow" && f.done.CompareAndSwap(false, true) {
		return fmt.Errorf("follow interrupted run %s: %w", id, context.DeadlineExceeded)
	}
	return err
}

func (f *faultyFollow) failedRun() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// TestClusterFollowKept interrupts a run of a hook with on_interrupted:
// rerun (or retry.on: [interrupted]) on a real PostgreSQL: its worker is
// killed and restarts, and the scheduler follows the run up. Then one
// thing fails, once:
//
//   - release: the rerun's (retry's) release fails. The pending rerun
//     (retry) stays stored until its run's start is recorded, and the
//     scheduler takes it up at its next poll: it runs, once, with the run
//     id it was given. Before, it was deleted as soon as it was
//     triggered, and never ran.
//   - follow: Follow commits but its answer is lost. The scheduler takes
//     the rerun (retry) it stored up at its next poll. Before, it stayed
//     stored, owed by no run, until another scheduler's takeover.
func TestClusterFollowKept(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"release", "follow"} {
		for _, follow := range []string{engine.TriggerRerun, engine.TriggerRetry} {
			t.Run(fault+"/"+follow, func(t *testing.T) {
				t.Parallel()
				testClusterFollowKept(t, fault, follow)
			})
		}
	}
}

func testClusterFollowKept(t *testing.T, fault, follow string) {
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	f := newFollowHook(t, follow)

	lockNode(ctx, t, url, "node-a")
	sched := &faultyFollow{Member: db.Member("node-a", 0, 2*time.Second), fault: fault}
	a := startClusterNode(ctx, t, engine.Config{Store: db, Cluster: sched, MaxConcurrent: 8}, f.hooks())
	poll(t, "node A leads", func() bool { self, _ := a.Scheduler(); return self })

	interrupted := runOnKilledWorker(ctx, t, url, db, a, f, nil)
	// W restarts and marks its run interrupted; A follows it up.
	lockNode(ctx, t, url, "node-w")
	startClusterNode(ctx, t, engine.Config{Store: db, Cluster: db.Member("node-w", 4, 2*time.Second), MaxConcurrent: 8}, f.hooks())

	poll(t, "the "+fault+" fault happens", sched.done.Load)
	poll(t, "the interrupted run's "+follow+" executes", func() bool { return f.steps() == 2 })
	poll(t, "no pending rerun or retry is left", func() bool {
		reruns, err := db.PendingReruns(ctx)
		if err != nil || len(reruns) != 0 {
			return false
		}
		retries, err := db.PendingRetries(ctx)
		return err == nil && len(retries) == 0
	})
	again := followedOnce(ctx, t, db, interrupted, follow)
	if id := sched.failedRun(); fault == "release" && again.ID != id {
		t.Errorf("the %s ran as run %s; want run %s, the one whose release failed", follow, again.ID, id)
	}
	if n := f.steps(); n != 2 {
		t.Errorf("h executed %d times; want 2 (the run, its %s)", n, follow)
	}
}
