package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
)

// lostRelease is a scheduler whose next release of a schedule slot's run
// (with hook set, of a run of that hook) reports its deadline as if it
// came during the commit: it commits (or, with commit unset, does not),
// and its caller is told it timed out. unread is how many of the next
// read-backs of a release fail; read counts those answered.
type lostRelease struct {
	*postgres.Member
	commit bool
	hook   string
	lose   atomic.Int32
	unread atomic.Int32
	read   atomic.Int32
	lost   chan string // the runs whose release answered a timeout
}

func (m *lostRelease) Release(ctx context.Context, r *engine.Run, markSeq int64) error {
	chosen := !r.Slot.IsZero()
	if m.hook != "" {
		chosen = r.Hook == m.hook
	}
	if !chosen || m.lose.Add(-1) < 0 {
		return m.Member.Release(ctx, r, markSeq)
	}
	if m.commit {
		if err := m.Member.Release(ctx, r, markSeq); err != nil {
			return err
		}
	}
	select {
	case m.lost <- r.ID:
	default:
	}
	return fmt.Errorf("release run %s: timeout: %w", r.ID, context.DeadlineExceeded)
}

func (m *lostRelease) Released(ctx context.Context, id string) (bool, error) {
	if m.unread.Add(-1) >= 0 {
		return false, fmt.Errorf("read whether run %s is released: %w", id, errors.New("connection reset by peer"))
	}
	released, err := m.Member.Released(ctx, id)
	if err == nil {
		m.read.Add(1)
	}
	return released, err
}

// TestClusterReleaseLostAnswer: a release of a schedule slot's run that
// committed while its caller was told it timed out (the deadline came
// during its commit) is read back, and its run is in flight on the
// scheduler as any released run: the next slots of its overlap: skip
// hook are skipped in_flight while it executes, no missed record of its
// slot is written, and once it ends the hook runs again. Read back once
// it can be when the first read fails (the run stays in flight
// meanwhile). A release that did not commit, read back at the next poll,
// is a failed release, as before: the slot is recorded missed. Before,
// each failed release was taken for failed: the slot got a missed record
// beside the run that executed, and the scheduler forgot the run, so a
// second run of the hook started while the first executed.
func TestClusterReleaseLostAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		commit         bool
		unread         int32
		wantMissedSlot bool
	}{
		{name: "committed", commit: true},
		{name: "committed, read back at the next poll", commit: true, unread: 1},
		{name: "not committed, read back at the next poll", unread: 1, wantMissedSlot: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url, db := newClusterDB(ctx, t)
			var entered atomic.Int32
			gate := make(chan struct{})
			h := every(withSteps(newHook("tick"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
				entered.Add(1)
				select {
				case <-gate:
				case <-ctx.Done():
				}
				return &engine.StepResult{Output: "ran"}, nil
			})), time.Second)

			lockNode(ctx, t, url, "node-a")
			cl := &lostRelease{Member: db.Member("node-a", 4, 2*time.Second), commit: tc.commit, lost: make(chan string, 1)}
			cl.lose.Store(1)
			cl.unread.Store(tc.unread)
			startClusterNode(ctx, t, engine.Config{Store: db, Cluster: cl, MaxConcurrent: 8, StoreTimeout: time.Second}, []*engine.Hook{h})
			var id string
			select {
			case id = <-cl.lost:
			case <-time.After(time.Minute):
				t.Fatal("no slot of tick was released within a minute")
			}
			runs := func() []*engine.Run {
				runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "tick", Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				return runs
			}

			if !tc.commit {
				// Not released: the slot is recorded missed once the
				// release is read back, and the next slot runs.
				poll(t, "a missed record and a run of a later slot", func() bool {
					missed := false
					for _, r := range runs() {
						missed = missed || r.Gate == engine.GateMissed
					}
					return missed && entered.Load() > 0
				})
				if r, err := db.GetRun(ctx, id); err == nil {
					t.Errorf("run %s, not released, has a record: %s %s", id, r.Status, r.Reason)
				}
				close(gate)
				return
			}

			poll(t, "the released run executes", func() bool { return entered.Load() > 0 })
			first, err := db.GetRun(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			poll(t, "a later slot skipped in_flight", func() bool {
				if n := entered.Load(); n > 1 {
					t.Errorf("%d runs of tick executed at once: the run whose release answered a timeout was forgotten", n)
					return true
				}
				for _, r := range runs() {
					if r.Gate == engine.GateInFlight {
						return true
					}
				}
				return false
			})
			want := first.Slot.Format(time.RFC3339)
			for _, r := range runs() {
				if r.Gate == engine.GateMissed {
					t.Errorf("slot %s, whose run %s executes, is also recorded missed: %s (run %s)", want, id, r.Reason, r.ID)
				}
			}
			close(gate)
			poll(t, "the run ends and a later slot runs", func() bool {
				done := 0
				for _, r := range runs() {
					if r.Status == engine.StatusCompleted {
						done++
					}
				}
				return done > 1
			})
			if r, err := db.GetRun(ctx, id); err != nil || r.Status != engine.StatusCompleted {
				t.Errorf("run %s: %v %v", id, r, err)
			}
		})
	}
}

// TestClusterDoubtfulReleaseKeepsEvent: an event whose run's release
// failed unanswered, and could not be read back either, is not
// dispatched again to that run's hook while the release is in doubt (the
// run is in flight there), nor marked dispatched; once the release is
// read back as not made, the event is dispatched to the hook again and
// runs there once; once it is known made (read back, or the run's end
// read first), the event is marked dispatched. Before, the sweep
// dispatched it again at once, the hook refused it in_flight behind the
// run in doubt and the event was marked dispatched: a release then read
// back as not made, the event never ran on that hook, and its only record
// there pointed at a run that never existed.
func TestClusterDoubtfulReleaseKeepsEvent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		hooks  []string // the hooks the event reaches; a's release is lost
		commit bool
		unread int32
	}{
		{name: "not made, read back at the next poll", hooks: []string{"a"}, unread: 1},
		// Two hooks: the release of a's run does not mark the event.
		{name: "made, its end read before it is read back", hooks: []string{"a", "b"}, commit: true, unread: 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url, db := newClusterDB(ctx, t)
			ran := map[string]*atomic.Int32{}
			var hooks []*engine.Hook
			for _, name := range tc.hooks {
				ran[name] = new(atomic.Int32)
				h := withSteps(newHook(name), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
					ran[name].Add(1)
					return &engine.StepResult{Output: "ran"}, nil
				}))
				h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "job.*"}
				hooks = append(hooks, h)
			}
			lockNode(ctx, t, url, "node-a")
			cl := &lostRelease{Member: db.Member("node-a", 4, 2*time.Second), commit: tc.commit, hook: "a", lost: make(chan string, 1)}
			cl.lose.Store(1)
			cl.unread.Store(tc.unread)
			eng := startClusterNode(ctx, t, engine.Config{Store: db, Cluster: cl, MaxConcurrent: 8, StoreTimeout: time.Second}, hooks)
			poll(t, "node-a schedules", func() bool { self, _ := eng.Scheduler(); return self })
			if _, err := eng.Emit(ctx, &engine.Event{Type: "job.done"}); err != nil {
				t.Logf("emit: %v", err)
			}
			var id string
			select {
			case id = <-cl.lost:
			case <-time.After(time.Minute):
				t.Fatal("no run of a was released within a minute")
			}
			runs := func() []*engine.Run {
				runs, err := db.ListRuns(ctx, engine.RunFilter{Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				return runs
			}
			var last string // what the wait saw last, told should it time out
			defer func() {
				if t.Failed() {
					t.Log(last)
				}
			}()
			poll(t, "the release decided, the event dispatched and the runs ended", func() bool {
				pending, err := db.PendingEvents(ctx, 10)
				if err != nil {
					t.Fatal(err)
				}
				last = fmt.Sprintf("read back %d times; %d events pending; runs:", cl.read.Load(), len(pending))
				final := true
				for _, r := range runs() {
					last += fmt.Sprintf(" %s %s %s %s;", r.ID, r.Hook, r.Status, r.Gate)
					final = final && r.Status.Final()
				}
				return (tc.commit || cl.read.Load() > 0) && len(pending) == 0 && final
			})
			completed := map[string]int{}
			for _, r := range runs() {
				if r.Status == engine.StatusCompleted {
					completed[r.Hook]++
					continue
				}
				t.Errorf("run %s of %s: %s %s %q (the run whose release was in doubt: %s)", r.ID, r.Hook, r.Status, r.Gate, r.Reason, id)
			}
			for name, n := range ran {
				if completed[name] != 1 || n.Load() != 1 {
					t.Errorf("the event ran %d times on %s (%d completed records), want once", n.Load(), name, completed[name])
				}
			}
		})
	}
}
