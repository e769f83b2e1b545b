package engine_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
	"github.com/hookd/hookd/store/postgres/postgrestest"
	"github.com/hookd/hookd/triggers"
)

// lockNode holds the node lock of name in the cluster database at url
// until the test ends, as a running hookd does.
func lockNode(ctx context.Context, t *testing.T, url, name string) {
	t.Helper()
	l, err := postgres.LockNode(ctx, url, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Unlock() })
}

// heldHook is a hook of job.* events whose runs execute until the test
// ends.
func heldHook(t *testing.T, name string) *engine.Hook {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	h := withSteps(newHook(name), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &engine.StepResult{Output: "ran"}, nil
	}))
	h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "job.*"}
	return h
}

// leadWithHeldRun starts node-a on cfg (its Store set) and hooks, the
// first of them a heldHook, as the cluster's scheduler, emits job event
// e1 and waits until the held hook's run for it executes.
func leadWithHeldRun(ctx context.Context, t *testing.T, url string, db *postgres.DB, cfg engine.Config, hooks ...*engine.Hook) *engine.Engine {
	t.Helper()
	lockNode(ctx, t, url, "node-a")
	cfg.Cluster, cfg.MaxConcurrent = db.Member("node-a", 4, 2*time.Second), 8
	a := startClusterNode(ctx, t, cfg, hooks)
	poll(t, "node A leads", func() bool { self, _ := a.Scheduler(); return self })
	if _, err := a.Emit(ctx, &engine.Event{ID: "e1", Type: "job.done"}); err != nil {
		t.Fatal(err)
	}
	poll(t, "e1's run executing", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: hooks[0].Name, Limit: 10})
		return err == nil && len(runs) == 1 && runs[0].Status == engine.StatusRunning
	})
	return a
}

// startClusterNode starts an engine on cfg (its Store and Cluster set,
// the node locked) with the cluster tests' defaults: a new event index,
// a grace of 50 ms, a 100 ms tick and no log. It stops when the test ends.
func startClusterNode(ctx context.Context, t *testing.T, cfg engine.Config, hooks []*engine.Hook) *engine.Engine {
	t.Helper()
	cfg.Events = triggers.NewEventIndex()
	cfg.Grace = 50 * time.Millisecond
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Tick = 100 * time.Millisecond
	eng, err := engine.New(cfg, hooks)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Stop)
	return eng
}

// newClusterDB makes a PostgreSQL database for t and opens it; it is
// closed when t ends, after the engines t started stop.
func newClusterDB(ctx context.Context, t *testing.T) (string, *postgres.DB) {
	t.Helper()
	url := postgrestest.NewDatabase(t)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return url, db
}

// pendingOthers is the events pending in db but the outcome events of
// runs (hook.run.*): a cluster's scheduler stores one pending when a
// run ends (Cluster.Tell) and dispatches it a moment later, so a test
// that asks whether the events it emitted are still pending leaves them
// out.
func pendingOthers(ctx context.Context, db *postgres.DB) ([]*engine.Event, error) {
	p, err := db.PendingEvents(ctx, 100)
	return slices.DeleteFunc(p, func(ev *engine.Event) bool { return strings.HasPrefix(ev.Type, "hook.run.") }), err
}
