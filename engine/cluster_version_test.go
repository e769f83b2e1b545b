package engine_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
	"github.com/hookd/hookd/triggers"
)

// refusedReport is a node whose report of the hooks it loaded the
// database refuses (from the second report on, when fail is set): the
// node then holds the new files while its claims still name the old
// versions, as it does for a moment in every reload.
type refusedReport struct {
	*postgres.Member
	fail atomic.Bool
}

func (r *refusedReport) Loaded(ctx context.Context, hooks []*engine.Hook) error {
	if r.fail.Load() {
		return errors.New("the database refused the report")
	}
	return r.Member.Loaded(ctx, hooks)
}

// TestClusterRunsOnlyItsVersion performs a version swap on a cluster
// node (a real PostgreSQL): a run of hook h is released at version 1
// while the node is busy; the node then loads version 2 of h's file, and
// its report of the new version does not reach the database, so its
// claims still name version 1. When the node frees up it claims the run;
// it must not execute it with version 2's steps (which the event that
// queued the run never saw): the run fails, saying why, and version 2's
// step never runs.
func TestClusterRunsOnlyItsVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	lock, err := postgres.LockNode(ctx, url, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	member := &refusedReport{Member: db.Member("node-a", 1, 2*time.Second)}

	var (
		mu  sync.Mutex
		ran []string
	)
	step := func(version string) engine.Step {
		return funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			mu.Lock()
			ran = append(ran, version)
			mu.Unlock()
			return &engine.StepResult{Output: version}, nil
		})
	}
	block := newBlock()
	blocker := withSteps(newHook("blocker"), block)
	v1 := withSteps(newHook("h"), step("v1"))
	v1.Source.Version = "111111111111"
	v2 := withSteps(newHook("h"), step("v2"))
	v2.Source.Version = "222222222222"

	eng, err := engine.New(engine.Config{
		Store: db, Cluster: member, Events: triggers.NewEventIndex(), MaxConcurrent: 2,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Tick: 100 * time.Millisecond,
	}, []*engine.Hook{blocker, v1})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer eng.Stop()
	poll(t, "the node leads", func() bool {
		_, err := eng.Fire(ctx, "blocker", engine.FireOptions{})
		return err == nil
	})
	poll(t, "the blocker runs on the node", func() bool { return block.started.Load() == 1 })
	r, err := eng.Fire(ctx, "h", engine.FireOptions{})
	if err != nil {
		t.Fatalf("fire h: %v", err)
	}
	member.fail.Store(true)
	if _, err := eng.Reload(ctx, []*engine.Hook{blocker, v2}); err != nil {
		t.Fatal(err)
	}
	close(block.release)
	var got *engine.Run
	poll(t, "h's run is final", func() bool {
		got, err = db.GetRun(ctx, r.ID)
		return err == nil && got.Status.Final()
	})
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 0 {
		t.Errorf("steps ran: %v; version 2's step ran a run released at version 1", ran)
	}
	if got.Status != engine.StatusFailed || !strings.Contains(got.Error, "222222222222") || !strings.Contains(got.Error, "111111111111") {
		t.Errorf("run %s %s: %q; want it failed naming both versions", got.ID, got.Status, got.Error)
	}
}

// poll waits for cond, up to a minute (a loaded machine).
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
