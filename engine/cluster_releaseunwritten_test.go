package engine_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
	"github.com/hookd/hookd/triggers"
)

// slowQueued is a database that stores a hook's queued records late:
// such a write returns only once unheld is closed, and is then made.
type slowQueued struct {
	*postgres.DB
	hook   string
	unheld chan struct{}
	held   chan struct{} // told when a held write begins
}

func (d *slowQueued) InsertRun(ctx context.Context, r *engine.Run) error {
	if r.Hook == d.hook && r.Status == engine.StatusQueued {
		select {
		case d.held <- struct{}{}:
		default:
		}
		<-d.unheld
		return d.DB.InsertRun(context.WithoutCancel(ctx), r)
	}
	return d.DB.InsertRun(ctx, r)
}

// releasesOf is a scheduler that tells when a run of hook is released.
type releasesOf struct {
	*postgres.Member
	hook    string
	decided chan struct{}
}

func (m *releasesOf) Release(ctx context.Context, r *engine.Run, markSeq int64) error {
	if r.Hook == m.hook {
		select {
		case m.decided <- struct{}{}:
		default:
		}
	}
	return m.Member.Release(ctx, r, markSeq)
}

// notRunning tells when the engine logs that a run's start could not be
// recorded (the release of a run failed).
type notRunning struct {
	slog.Handler
	decided chan struct{}
}

func (h notRunning) Enabled(context.Context, slog.Level) bool { return true }
func (h notRunning) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "cannot record the run's start; not running it" {
		select {
		case h.decided <- struct{}{}:
		default:
		}
	}
	return nil
}
func (h notRunning) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h notRunning) WithGroup(string) slog.Handler      { return h }

// TestClusterReleaseAfterUnwrittenRecord: a queued run whose queued
// record the database has not stored within StoreTimeout when its turn
// comes (it stores it late) is not released, as the single daemon does not start a run whose
// earlier records are not stored: it does not execute, and its record,
// once the database takes it, ends failed; the store is then no longer
// stalled and the hook runs for the next trigger. Before, it was released
// without its record: the queued record, written later, was refused as a
// duplicate of the released run, which the writer took for a stall and
// tried again, refusing every trigger store_stalled, for as long as no
// other write succeeded.
func TestClusterReleaseAfterUnwrittenRecord(t *testing.T) {
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
	var ran atomic.Int32
	slowHook := withSteps(newHook("slow"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		ran.Add(1)
		<-ctx.Done() // runs until the test ends
		return &engine.StepResult{Output: "ran"}, nil
	}))
	slowHook.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "job.*"}

	decided := make(chan struct{}, 1)
	store := &slowQueued{DB: db, hook: "slow", unheld: make(chan struct{}), held: make(chan struct{}, 1)}
	unhold := sync.OnceFunc(func() { close(store.unheld) })
	t.Cleanup(unhold)
	lockNode(ctx, t, url, "node-a")
	cl := &releasesOf{Member: db.Member("node-a", 4, 2*time.Second), hook: "slow", decided: decided}
	a, err := engine.New(engine.Config{
		Store: store, Cluster: cl, MaxConcurrent: 1, StoreTimeout: time.Second,
		Events: triggers.NewEventIndex(), Grace: 50 * time.Millisecond, Tick: 100 * time.Millisecond,
		Logger: slog.New(notRunning{decided: decided}),
	}, []*engine.Hook{block, slowHook})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	poll(t, "node A leads", func() bool { self, _ := a.Scheduler(); return self })

	// block takes the one place; e1's run of slow waits queued, its
	// queued record held.
	if _, err := a.Emit(ctx, &engine.Event{ID: "b1", Type: "block.x"}); err != nil {
		t.Fatal(err)
	}
	poll(t, "block's run executing", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "block", Limit: 10})
		return err == nil && len(runs) == 1 && runs[0].Status == engine.StatusRunning
	})
	if _, err := a.Emit(ctx, &engine.Event{ID: "e1", Type: "job.x"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-store.held:
	case <-time.After(time.Minute):
		t.Fatal("slow's queued record was not written within a minute")
	}
	// Its turn comes while its record is held: the scheduler releases it
	// or gives up; then the database takes the record.
	close(unblock)
	select {
	case <-decided:
	case <-time.After(time.Minute):
		t.Fatal("slow's queued run was neither released nor given up within a minute")
	}
	unhold()

	poll(t, "slow's run for e1 ends failed, not executed", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "slow", Limit: 10})
		return err == nil && len(runs) == 1 && runs[0].Status == engine.StatusFailed
	})
	if n := ran.Load(); n != 0 {
		t.Errorf("slow's run executed %d times, its queued record not stored", n)
	}
	poll(t, "the store no longer stalled", func() bool { _, stalled := a.StoreStalled(); return !stalled })
	if _, err := a.Emit(ctx, &engine.Event{ID: "e2", Type: "job.y"}); err != nil {
		t.Fatal(err)
	}
	poll(t, "slow's run for e2 executing", func() bool { return ran.Load() == 1 })
	runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "slow", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		t.Logf("%s %s %s %s", r.ID, r.Status, r.Gate, r.Error)
	}
}
