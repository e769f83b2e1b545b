package engine_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/clock/clocktest"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/triggers"
)

// cancelledEvent returns the hook.run.cancelled event of run id, failing
// the test when there is not exactly one.
func (h *harness) cancelledEvent(id string) *engine.Event {
	h.t.Helper()
	var found []*engine.Event
	for _, ev := range h.eventsOf(engine.EventRunCancelled) {
		if ev.Data["run_id"] == id {
			found = append(found, ev)
		}
	}
	if len(found) != 1 {
		h.t.Fatalf("run %s: %d hook.run.cancelled events, want 1 (its record: %s %q)", id, len(found), h.run(id).Status, h.run(id).Reason)
	}
	return found[0]
}

// checkCancelled checks that run id ended cancelled for reason, in its
// record and in its one hook.run.cancelled event.
func (h *harness) checkCancelled(id, reason string) {
	h.t.Helper()
	if r := h.run(id); r.Status != engine.StatusCancelled || !strings.Contains(r.Reason, reason) {
		h.t.Errorf("run %s: %s %q, want cancelled %q", id, r.Status, r.Reason, reason)
	}
	ev := h.cancelledEvent(id)
	if got, _ := ev.Data["reason"].(string); !strings.Contains(got, reason) || ev.Data["status"] != string(engine.StatusCancelled) {
		h.t.Errorf("run %s: event %+v, want status cancelled and reason %q", id, ev.Data, reason)
	}
	if ev.Outcome == nil || ev.Outcome.Run.ID != id || ev.Outcome.Intermediate {
		h.t.Errorf("run %s: event outcome %+v", id, ev.Outcome)
	}
}

// stubbornStep ignores its context: a run cancelled by cancel_previous
// stays in flight until the step is released.
type stubbornStep struct{ release chan struct{} }

func (s stubbornStep) Run(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
	<-s.release
	return &engine.StepResult{Output: "done"}, nil
}

// TestWaitingRunEndsArePublished: a queued or pending run that ends
// without starting (superseded by cancel_previous, its hook removed by a
// reload or gone at a restart) publishes hook.run.cancelled like every
// other end, so notifications, metrics and hooks on it hear of it.
func TestWaitingRunEndsArePublished(t *testing.T) {
	t.Parallel()
	t.Run("cancel_previous supersedes a queued run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			block := newBlock()
			cp := withSteps(newHook("cp"), newBlock())
			cp.Overlap = engine.OverlapCancelPrevious
			h := newHarness(t, []*engine.Hook{withSteps(newHook("a"), block), cp},
				func(c *engine.Config) { c.MaxConcurrent = 1 })
			defer h.stop()
			h.mustFire("a")
			h.settle()
			q1 := h.mustFire("cp")
			if q1.Status != engine.StatusQueued {
				t.Fatalf("first cp run: %s, want queued behind a", q1.Status)
			}
			q2 := h.mustFire("cp")
			h.settle()
			h.checkCancelled(q1.ID, "cancel_previous: superseded by run "+q2.ID)
			close(block.release)
			h.settle()
		})
	})
	t.Run("cancel_previous supersedes a pending run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			step := stubbornStep{make(chan struct{})}
			cp := withSteps(newHook("cp"), step)
			cp.Overlap = engine.OverlapCancelPrevious
			h := newHarness(t, []*engine.Hook{cp})
			defer h.stop()
			defer close(step.release) // before the stop, which waits for the step
			h.mustFire("cp")
			h.settle()
			p1 := h.mustFire("cp") // the first is told to stop, and does not yet
			h.settle()
			if r := h.run(p1.ID); r.Status != engine.StatusQueued {
				t.Fatalf("second run: %s, want pending", r.Status)
			}
			p2 := h.mustFire("cp")
			h.settle()
			h.checkCancelled(p1.ID, "cancel_previous: superseded by run "+p2.ID)
		})
	})
	t.Run("a reload removes the hook", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			block := newBlock()
			a := withSteps(newHook("a"), block)
			q := newHook("q")
			q.Overlap = engine.OverlapQueue
			h := newHarness(t, []*engine.Hook{a, q}, func(c *engine.Config) { c.MaxConcurrent = 1 })
			defer h.stop()
			h.mustFire("a")
			h.settle()
			queued := h.mustFire("q")
			pending := h.mustFire("q")
			if queued.Status != engine.StatusQueued || pending.Status != engine.StatusQueued || pending.ID == queued.ID {
				t.Fatalf("q runs: %s %s %s %s, want one queued and one pending", queued.ID, queued.Status, pending.ID, pending.Status)
			}
			h.reload(a)
			h.settle()
			h.checkCancelled(queued.ID, "removed: hook q is no longer in the hooks directory")
			h.checkCancelled(pending.ID, "removed: hook q is no longer in the hooks directory")
			close(block.release)
			h.settle()
		})
	})
	t.Run("the hook is gone at a restart", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			block := newBlock()
			a := withSteps(newHook("a"), block)
			h := newHarness(t, []*engine.Hook{a, newHook("gone")},
				func(c *engine.Config) { c.MaxConcurrent = 1; c.Grace = time.Second })
			h.mustFire("a")
			h.settle()
			queued := h.mustFire("gone")
			h.eng.Stop() // a is cancelled after the grace period; the gone run stays queued
			h.db.Close()
			h.hooks = []*engine.Hook{a}
			h.start()
			defer h.stop()
			h.settle()
			h.checkCancelled(queued.ID, "removed: the hook no longer exists")
		})
	})
}

// refusingStore fails every run start with err.
type refusingStore struct {
	*store.DB
	err error
}

func (s refusingStore) StartRun(ctx context.Context, r *engine.Run) error { return s.err }

// TestUnstartedRunEndsArePublished: a run whose start cannot be recorded
// (its slot already fired, or the store fails) ends skipped or failed,
// and that end is published like any other.
func TestUnstartedRunEndsArePublished(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		typ    string
		status engine.Status
	}{
		{engine.ErrSlotTaken, engine.EventRunSkipped, engine.StatusSkipped},
		{errors.New("disk I/O error"), engine.EventRunFailed, engine.StatusFailed},
	} {
		t.Run(string(tc.status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				eng, err := engine.New(engine.Config{Store: refusingStore{db, tc.err}, Events: triggers.NewEventIndex(), Clock: &clocktest.Clock{}, Tick: time.Second,
					Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, []*engine.Hook{newHook("h")})
				if err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				var got []*engine.Event
				eng.Subscribe(func(ev *engine.Event) {
					mu.Lock()
					got = append(got, ev)
					mu.Unlock()
				})
				if err := eng.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				defer eng.Stop()
				r, err := eng.Fire(context.Background(), "h", engine.FireOptions{})
				if err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				var ends []string
				for _, ev := range got {
					if ev.Data["run_id"] == r.ID && ev.Type != engine.EventRunStarted {
						ends = append(ends, ev.Type+" "+ev.Data["status"].(string))
					}
				}
				if want := tc.typ + " " + string(tc.status); len(ends) != 1 || ends[0] != want {
					t.Errorf("run %s: ends published %q, want [%s]", r.ID, ends, want)
				}
			})
		})
	}
}
