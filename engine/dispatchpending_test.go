package engine_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/triggers"
)

// failingHookStart is a real SQLite store whose next starts of a run of
// one hook fail, as a store that does not answer.
type failingHookStart struct {
	*store.DB
	hook string
	fail atomic.Int32
}

func (s *failingHookStart) StartRun(ctx context.Context, r *engine.Run) error {
	if r.Hook == s.hook && s.fail.Add(-1) >= 0 {
		return errors.New("start run " + r.ID + ": database is locked")
	}
	return s.DB.StartRun(ctx, r)
}

func (s *failingHookStart) StartRunDispatched(ctx context.Context, r *engine.Run, seq int64) error {
	if r.Hook == s.hook && s.fail.Add(-1) >= 0 {
		return errors.New("start run " + r.ID + ": database is locked")
	}
	return s.DB.StartRunDispatched(ctx, r, seq)
}

// startEventEngine starts an engine on st with hooks, events on, on the
// system clock, and fails t when it cannot.
func startEventEngine(t *testing.T, st engine.Store, hooks []*engine.Hook) *engine.Engine {
	t.Helper()
	eng, err := engine.New(engine.Config{Store: st, Events: triggers.NewEventIndex(), Clock: clock.System{}, Tick: time.Second,
		Grace: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, hooks)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return eng
}

// TestDispatchPendingLeavesUnstartedEvent: a daemon's start dispatches
// the events left pending; one whose run's start cannot be recorded
// stays pending (it reached no hook) while the events after it are
// dispatched, and the start goes on: the next start runs it. Before, the
// start failed ("its mark was not stored"), and hookd did not start.
func TestDispatchPendingLeavesUnstartedEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, ev := range []*engine.Event{{ID: "e1", Type: "a.done"}, {ID: "e2", Type: "b.done"}} {
		ev.Time = time.Now()
		if err := db.AppendPendingEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	st := &failingHookStart{DB: db, hook: "a"}
	st.fail.Store(1) // e1's run
	hook := func(name, event string) *engine.Hook {
		h := withSteps(newHook(name), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			return &engine.StepResult{Output: "ran"}, nil
		}))
		h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: event}
		return h
	}
	start := func() *engine.Engine {
		return startEventEngine(t, st, []*engine.Hook{hook("a", "a.*"), hook("b", "b.*")})
	}
	completed := func(name string) int {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: name, Status: engine.StatusCompleted, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return len(runs)
	}

	first := start()
	if _, err := first.DispatchPending(ctx); err != nil {
		t.Fatalf("the start's dispatch of the pending events failed: %v", err)
	}
	// e2 is dispatched (b runs, or is refused while the store that
	// failed e1's start counts as stalled): it is not pending any more.
	poll(t, "e2 dispatched, e1 alone pending", func() bool {
		p, err := db.PendingEvents(ctx, 10)
		return err == nil && len(p) == 1 && p[0].ID == "e1"
	})
	first.Stop()
	if n := completed("a"); n != 0 {
		t.Fatalf("a ran %d times for e1, whose start was not recorded", n)
	}

	second := start()
	defer second.Stop()
	if _, err := second.DispatchPending(ctx); err != nil {
		t.Fatal(err)
	}
	poll(t, "a's run for e1 at the next start", func() bool { return completed("a") == 1 })
	if p, err := db.PendingEvents(ctx, 10); err != nil || len(p) != 0 {
		t.Errorf("pending after the second start: %v %v", p, err)
	}
}
