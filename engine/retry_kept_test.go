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

// retryStartFails is a store whose first record of a retry's start fails.
type retryStartFails struct {
	*store.DB
	failed atomic.Bool
}

func (s *retryStartFails) StartRun(ctx context.Context, r *engine.Run) error {
	if r.Trigger == engine.TriggerRetry && s.failed.CompareAndSwap(false, true) {
		return fmt.Errorf("start run %s: %w", r.ID, errors.New("database is locked"))
	}
	return s.DB.StartRun(ctx, r)
}

// TestRetryKeptWhenItsStartFails: on a single daemon, a retry whose
// run's start the store does not record (the run is not executed) stays
// stored, and the next hookd fires it, with the run id it was given.
// Before, it was forgotten as soon as it was triggered, and never ran.
func TestRetryKeptWhenItsStartFails(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "hookd.db")
		var n atomic.Int32
		start := func(st engine.Store) *engine.Engine {
			eng, err := engine.New(engine.Config{Store: st, Events: triggers.NewEventIndex(), Clock: &clocktest.Clock{}, Tick: time.Second,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, []*engine.Hook{retryHook("flaky", 3, failing(1, &n))})
			if err != nil {
				t.Fatal(err)
			}
			if err := eng.Start(ctx); err != nil {
				t.Fatal(err)
			}
			return eng
		}
		var plan *engine.RetryPlan
		func() { // the first hookd
			db, err := store.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			st := &retryStartFails{DB: db}
			eng := start(st)
			defer eng.Stop()
			first, err := eng.Fire(ctx, "flaky", engine.FireOptions{})
			if err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			r1, err := db.GetRun(ctx, first.ID)
			if err != nil || r1.Retry == nil {
				t.Fatalf("first run: %+v %v; want its retry planned", r1, err)
			}
			plan = r1.Retry
			time.Sleep(time.Hour) // the retry is due; its start is not recorded
			synctest.Wait()
			if !st.failed.Load() {
				t.Fatal("the retry's start was not tried")
			}
			if ps, err := db.PendingRetries(ctx); err != nil || len(ps) != 1 || ps[0].RunID != plan.RunID {
				t.Fatalf("pending retries after its start failed: %+v %v; want retry %s kept", ps, err, plan.RunID)
			}
		}()

		db, err := store.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		eng := start(db)
		defer eng.Stop()
		time.Sleep(time.Hour)
		synctest.Wait()
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "flaky", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2 || runs[0].ID != plan.RunID || runs[0].Status != engine.StatusCompleted {
			t.Fatalf("runs after the restart: %v; want the retry %s completed", statuses(runs), plan.RunID)
		}
		if ps, err := db.PendingRetries(ctx); err != nil || len(ps) != 0 {
			t.Errorf("pending retries after the retry ran: %+v %v", ps, err)
		}
	})
}
