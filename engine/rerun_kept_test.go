package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/clock/clocktest"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/triggers"
)

// followUpStore is a single daemon's SQLite store that fails where a
// hookd recovering a crash could fail, or be killed, before what follows
// an interrupted run (its rerun, its retry) has run once.
type followUpStore struct {
	*store.DB
	// killedAfterRecovery: RecoverInterrupted commits, then fails, as a
	// hookd killed right after recovering the crash.
	killedAfterRecovery bool
	// failStarts: the record of a rerun's start fails (the run is not
	// executed).
	failStarts bool
	// keepFollowUps: forgetting a started rerun or retry fails, as a
	// hookd killed after their start was recorded.
	keepFollowUps bool
	startsFailed  atomic.Int32
}

func (s *followUpStore) RecoverInterrupted(ctx context.Context, now time.Time) ([]*engine.Run, error) {
	runs, err := s.DB.RecoverInterrupted(ctx, now)
	if err == nil && s.killedAfterRecovery {
		return nil, errors.New("killed after recovering the crash")
	}
	return runs, err
}

func (s *followUpStore) StartRun(ctx context.Context, r *engine.Run) error {
	if s.failStarts && r.Trigger == engine.TriggerRerun {
		s.startsFailed.Add(1)
		return fmt.Errorf("start run %s: %w", r.ID, errors.New("database is locked"))
	}
	return s.DB.StartRun(ctx, r)
}

func (s *followUpStore) DeleteRerun(ctx context.Context, runID string) error {
	if s.keepFollowUps {
		return fmt.Errorf("delete rerun %s: %w", runID, errKilled)
	}
	return s.DB.DeleteRerun(ctx, runID)
}

func (s *followUpStore) DeleteRetry(ctx context.Context, runID string) error {
	if s.keepFollowUps {
		return fmt.Errorf("delete retry %s: %w", runID, errKilled)
	}
	return s.DB.DeleteRetry(ctx, runID)
}

// errKilled stands for a hookd killed before a write.
var errKilled = errors.New("killed")

// TestInterruptedFollowUpKept: on a single daemon, the rerun
// (on_interrupted: rerun) and the retry (retry.on: [interrupted]) of a
// run a crash interrupted survive what can go wrong between the recovery
// and their start, and each runs exactly once:
//
//   - start fails: the daemon that recovers the crash cannot record the
//     rerun's start; the next daemon runs it. (A retry whose start fails
//     is TestRetryKeptWhenItsStartFails; here a retry due while the store
//     is stalled would be held by the store_stalled gate and fired by
//     this daemon once the store answers:
//     TestStoredFollowUpKeptWhileStoreStalled.)
//   - killed after recovery: the daemon is killed right after it marked
//     the runs interrupted, before it decided what follows them; the
//     next daemon decides it and runs them.
//
// Each case then starts a daemon that runs them but is killed before it
// forgets them (their pending records stay), and one more: neither runs
// again. Before, the rerun lived in the recovering daemon's memory only
// and the retry was stored after the recovery's commit: both were lost.
func TestInterruptedFollowUpKept(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name               string
		failStarts, killed bool // the first hookd's store (followUpStore)
		retry              bool // a hook whose retry.on names interrupted as well
	}{
		{name: "start fails", failStarts: true},
		{name: "killed after recovery", killed: true, retry: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				path := filepath.Join(t.TempDir(), "hookd.db")
				var reruns, retries atomic.Int32
				again := withSteps(newHook("again"), failing(0, &reruns))
				again.OnInterrupted = engine.InterruptedRerun
				hooks := []*engine.Hook{again}
				want := []struct{ hook, trigger string }{{"again", engine.TriggerRerun}}
				if tc.retry {
					hooks = append(hooks, retryHook("retried", 2, failing(0, &retries)))
					want = append(want, struct{ hook, trigger string }{"retried", engine.TriggerRetry})
				}
				// daemon runs one hookd on st until what follows the crash
				// is due and tried; it reports Start's error.
				daemon := func(st *followUpStore) error {
					db, err := store.Open(path)
					if err != nil {
						t.Fatal(err)
					}
					defer db.Close()
					st.DB = db
					eng, err := engine.New(engine.Config{Store: st, Events: triggers.NewEventIndex(), Clock: &clocktest.Clock{}, Tick: time.Second,
						Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, hooks)
					if err != nil {
						t.Fatal(err)
					}
					if err := eng.Start(ctx); err != nil {
						return err
					}
					defer eng.Stop()
					time.Sleep(time.Hour) // the retry's backoff passes
					synctest.Wait()
					return nil
				}

				// What a crash leaves: a run of each hook, still marked running.
				db, err := store.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range hooks {
					if err := db.StartRun(ctx, &engine.Run{ID: engine.NewID(), Hook: h.Name, Trigger: "manual",
						Status: engine.StatusRunning, StartedAt: time.Now()}); err != nil {
						t.Fatal(err)
					}
				}
				db.Close()

				first := &followUpStore{failStarts: tc.failStarts, killedAfterRecovery: tc.killed}
				err = daemon(first)
				switch {
				case first.killedAfterRecovery && err == nil:
					t.Fatal("the first hookd started although its recovery failed")
				case !first.killedAfterRecovery && err != nil:
					t.Fatal(err)
				case first.failStarts && first.startsFailed.Load() != 1:
					t.Fatalf("starts tried and failed: %d, want the rerun's", first.startsFailed.Load())
				}
				if n, m := reruns.Load(), retries.Load(); n != 0 || m != 0 {
					t.Fatalf("executed by the first hookd: %d reruns, %d retries; want none", n, m)
				}

				// Runs them, killed before it forgets them; then one more.
				if err := daemon(&followUpStore{keepFollowUps: true}); err != nil {
					t.Fatal(err)
				}
				if err := daemon(&followUpStore{}); err != nil {
					t.Fatal(err)
				}

				wantRetries := int32(0)
				if tc.retry {
					wantRetries = 1
				}
				if n, m := reruns.Load(), retries.Load(); n != 1 || m != wantRetries {
					t.Errorf("executed: %d reruns, %d retries; want 1 and %d", n, m, wantRetries)
				}
				db, err = store.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				for _, tr := range want {
					runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: tr.hook, Limit: 10})
					if err != nil {
						t.Fatal(err)
					}
					if len(runs) != 2 || runs[1].Status != engine.StatusInterrupted ||
						runs[0].Trigger != tr.trigger || runs[0].Status != engine.StatusCompleted {
						t.Errorf("runs of %s: %v; want the interrupted run and its %s completed", tr.hook, statuses(runs), tr.trigger)
					}
				}
				if ps, err := db.PendingReruns(ctx); err != nil || len(ps) != 0 {
					t.Errorf("pending reruns at the end: %+v %v", ps, err)
				}
				if ps, err := db.PendingRetries(ctx); err != nil || len(ps) != 0 {
					t.Errorf("pending retries at the end: %+v %v", ps, err)
				}
				if owed, err := db.Owed(ctx); err != nil || len(owed) != 0 {
					t.Errorf("runs owed a follow-up at the end: %d %v", len(owed), err)
				}
			})
		})
	}
}
