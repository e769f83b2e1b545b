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

// queuedStartStore is a single daemon's SQLite store that cannot record
// the start of hook's rerun or retry.
type queuedStartStore struct {
	*store.DB
	hook   string
	failed atomic.Int32
}

func (s *queuedStartStore) StartRun(ctx context.Context, r *engine.Run) error {
	if r.Hook == s.hook && (r.Trigger == engine.TriggerRerun || r.Trigger == engine.TriggerRetry) {
		s.failed.Add(1)
		return fmt.Errorf("start run %s: %w", r.ID, errors.New("database is locked"))
	}
	return s.DB.StartRun(ctx, r)
}

// TestQueuedFollowUpWhoseStartFailsIsKept: on a single daemon, the rerun
// (on_interrupted: rerun) or retry (retry.on: [interrupted]) of a run a
// crash interrupted that waits queued (max_concurrent: 1, another hook's
// follow-up running) and whose start then cannot be recorded stays
// stored, and the next daemon runs it, once (one more daemon, started
// after one killed before it forgot it, does not run it again). Before,
// its queued record ended failed ("record run start: ...") under the run
// id the stored follow-up keeps, and the next daemon took that record
// for its start and forgot it: it never ran.
func TestQueuedFollowUpWhoseStartFailsIsKept(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{engine.TriggerRerun, engine.TriggerRetry} {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				path := filepath.Join(t.TempDir(), "hookd.db")
				var nBusy, nQueued atomic.Int32
				// busy's follow-up runs first, for ten minutes; queued's
				// waits behind it.
				slow := funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
					nBusy.Add(1)
					time.Sleep(10 * time.Minute)
					return &engine.StepResult{Output: "ok"}, nil
				})
				busy := withSteps(newHook("busy"), slow)
				queued := withSteps(newHook("queued"), failing(0, &nQueued))
				if kind == engine.TriggerRerun {
					busy.OnInterrupted = engine.InterruptedRerun
					queued.OnInterrupted = engine.InterruptedRerun
				} else {
					busy = retryHook("busy", 2, slow)
					busy.Retry.Backoff = time.Second
					queued = retryHook("queued", 2, failing(0, &nQueued))
					queued.Retry.Backoff = 5 * time.Minute
				}
				hooks := []*engine.Hook{busy, queued}
				daemon := func(st engine.Store) {
					eng, err := engine.New(engine.Config{Store: st, Events: triggers.NewEventIndex(), Clock: &clocktest.Clock{}, Tick: time.Second,
						MaxConcurrent: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, hooks)
					if err != nil {
						t.Fatal(err)
					}
					if err := eng.Start(ctx); err != nil {
						t.Fatal(err)
					}
					defer eng.Stop()
					time.Sleep(time.Hour)
					synctest.Wait()
				}
				open := func() *store.DB {
					db, err := store.Open(path)
					if err != nil {
						t.Fatal(err)
					}
					return db
				}

				// What a crash leaves: a run of each hook, still marked running.
				db := open()
				for _, h := range hooks {
					if err := db.StartRun(ctx, &engine.Run{ID: engine.NewID(), Hook: h.Name, Trigger: "manual",
						Status: engine.StatusRunning, StartedAt: time.Now()}); err != nil {
						t.Fatal(err)
					}
				}
				first := &queuedStartStore{DB: db, hook: "queued"}
				daemon(first)
				db.Close()
				if n := first.failed.Load(); n != 1 {
					t.Fatalf("starts of queued's %s tried and failed: %d, want 1", kind, n)
				}
				if n, m := nBusy.Load(), nQueued.Load(); n != 1 || m != 0 {
					t.Fatalf("executed by the first hookd: busy %d, queued %d; want 1 and 0", n, m)
				}

				// Runs it, killed before it forgets it; then one more.
				for _, keep := range []bool{true, false} {
					db := open()
					daemon(&followUpStore{DB: db, keepFollowUps: keep})
					db.Close()
				}
				if n, m := nBusy.Load(), nQueued.Load(); n != 1 || m != 1 {
					t.Errorf("executed: busy %d, queued %d; want each follow-up once", n, m)
				}

				db = open()
				defer db.Close()
				for _, h := range hooks {
					runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: h.Name, Limit: 10})
					if err != nil {
						t.Fatal(err)
					}
					if len(runs) != 2 || runs[1].Status != engine.StatusInterrupted ||
						runs[0].Trigger != kind || runs[0].Status != engine.StatusCompleted {
						for _, r := range runs {
							t.Logf("%s: %s %s %s %q %q", h.Name, r.ID, r.Trigger, r.Status, r.Reason, r.Error)
						}
						t.Errorf("runs of %s: %v; want the interrupted run and its %s completed", h.Name, statuses(runs), kind)
					}
				}
				if ps, err := db.PendingReruns(ctx); err != nil || len(ps) != 0 {
					t.Errorf("pending reruns at the end: %+v %v", ps, err)
				}
				if ps, err := db.PendingRetries(ctx); err != nil || len(ps) != 0 {
					t.Errorf("pending retries at the end: %+v %v", ps, err)
				}
			})
		})
	}
}
