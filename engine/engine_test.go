package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

func TestPeriodicFiresOnEpochAnchoredSlots(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, []*engine.Hook{every(newHook("tick"), time.Minute)})
		defer h.stop()
		// The bubble starts at midnight; move off the slot grid first so
		// the first slot is not "now".
		h.advance(30 * time.Second)
		if n := len(h.runs("tick")); n != 0 {
			t.Fatalf("runs before the first slot: %d", n)
		}
		h.advance(30 * time.Second)
		h.advance(2 * time.Minute)
		runs := h.runs("tick")
		if len(runs) != 3 {
			t.Fatalf("runs = %d, want 3", len(runs))
		}
		for i, r := range runs {
			want := time.Date(2000, 1, 1, 0, i+1, 0, 0, time.UTC)
			if !r.Slot.Equal(want) || r.Status != engine.StatusCompleted || r.Trigger != "schedule" {
				t.Errorf("run %d: slot %v status %s trigger %s; want slot %v completed schedule", i, r.Slot, r.Status, r.Trigger, want)
			}
			if late := r.StartedAt.Sub(r.Slot); late != 0 {
				t.Errorf("run %d started %v after its slot", i, late)
			}
		}
	})
}

func TestJitterIsDeterministicAndBeforeNextSlot(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hk := every(newHook("jittery"), time.Minute)
		hk.Trigger.Jitter = 10 * time.Minute // larger than the interval: bounded by it
		h := newHarness(t, []*engine.Hook{hk})
		defer h.stop()
		h.advance(10*time.Minute + 30*time.Second)
		runs := h.runs("jittery")
		if len(runs) < 9 {
			t.Fatalf("runs = %d, want about 10", len(runs))
		}
		fires := engine.FireTimes(hk, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), len(runs))
		for i, r := range runs {
			off := r.StartedAt.Sub(r.Slot)
			if off < 0 || off >= time.Minute {
				t.Errorf("run %d: jitter %v outside [0, 1m)", i, off)
			}
			if !r.StartedAt.Equal(fires[i]) {
				t.Errorf("run %d started %v; FireTimes says %v", i, r.StartedAt, fires[i])
			}
		}
	})
}

func TestGates(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		off := newHook("off")
		off.Enabled = false
		paused := newHook("paused")
		cool := newHook("cool")
		cool.Cooldown = 10 * time.Minute
		h := newHarness(t, []*engine.Hook{off, paused, cool})
		defer h.stop()

		_, err := h.fire("off", engine.FireOptions{})
		if gateOf(err) != engine.GateDisabled || !strings.Contains(err.Error(), "enabled: true") {
			t.Errorf("disabled hook: %v", err)
		}
		if err := h.eng.SetPaused(context.Background(), "paused", true); err != nil {
			t.Fatal(err)
		}
		_, err = h.fire("paused", engine.FireOptions{})
		if gateOf(err) != engine.GatePaused || !strings.Contains(err.Error(), "hookd resume paused") {
			t.Errorf("paused hook: %v", err)
		}
		h.eng.SetPaused(context.Background(), "paused", false)
		h.mustFire("paused")

		h.mustFire("cool")
		h.advance(time.Minute)
		_, err = h.fire("cool", engine.FireOptions{})
		var g *engine.GateError
		if gateOf(err) != engine.GateCooldown || !strings.Contains(err.Error(), "--force") {
			t.Fatalf("cooldown: %v", err)
		}
		if errors.As(err, &g); g.Remaining != 9*time.Minute {
			t.Errorf("cooldown remaining %v, want 9m", g.Remaining)
		}
		if _, err := h.fire("cool", engine.FireOptions{Force: true}); err != nil {
			t.Errorf("--force past the cooldown: %v", err)
		}
		h.advance(10 * time.Minute)
		if _, err := h.fire("cool", engine.FireOptions{}); err != nil {
			t.Errorf("after the cooldown: %v", err)
		}
		h.settle()

		// Every refusal left a record saying why.
		want := map[string][]string{
			"off":    {"skipped disabled"},
			"paused": {"skipped paused", "completed "},
			"cool":   {"completed ", "skipped cooldown", "completed ", "completed "},
		}
		for hook, w := range want {
			var got []string
			for _, r := range h.runs(hook) {
				code, _, _ := strings.Cut(r.Reason, ":")
				got = append(got, string(r.Status)+" "+code)
			}
			if !slices.Equal(got, w) {
				t.Errorf("%s records = %q, want %q", hook, got, w)
			}
		}
	})
}

func TestOverlapSkip(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		block := newBlock()
		h := newHarness(t, []*engine.Hook{withSteps(newHook("slow"), block)})
		defer h.stop()
		first := h.mustFire("slow")
		_, err := h.fire("slow", engine.FireOptions{})
		if gateOf(err) != engine.GateInFlight || !strings.Contains(err.Error(), first.ID) {
			t.Fatalf("second fire: %v", err)
		}
		close(block.release)
		h.settle()
		got := statuses(h.runs("slow"))
		if !slices.Equal(got, []engine.Status{engine.StatusCompleted, engine.StatusSkipped}) {
			t.Errorf("statuses = %v", got)
		}
		if r := h.runs("slow")[1]; !strings.HasPrefix(r.Reason, "in_flight: run "+first.ID) {
			t.Errorf("skip reason = %q", r.Reason)
		}
	})
}

func TestOverlapQueueCoalesces(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		block := newBlock()
		var seen []map[string]any
		hk := withSteps(newHook("q"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			seen = append(seen, env.Scope.Event)
			return block.Run(ctx, env)
		}))
		hk.Overlap = engine.OverlapQueue
		h := newHarness(t, []*engine.Hook{hk})
		defer h.stop()

		first, _ := h.fire("q", engine.FireOptions{Event: map[string]any{"n": 1.0}})
		h.settle()
		p1, err := h.fire("q", engine.FireOptions{Event: map[string]any{"n": 2.0, "a": "x"}})
		if err != nil || p1.Status != engine.StatusQueued {
			t.Fatalf("second fire: %v %v", p1, err)
		}
		p2, err := h.fire("q", engine.FireOptions{Event: map[string]any{"n": 3.0}})
		if err != nil || p2.ID != p1.ID {
			t.Fatalf("third fire should coalesce into %s: got %v %v", p1.ID, p2, err)
		}
		if !strings.Contains(h.run(p1.ID).Reason, "1 later trigger(s) coalesced") {
			t.Errorf("pending reason = %q", h.run(p1.ID).Reason)
		}
		block.release <- struct{}{}
		h.settle()
		if r := h.run(first.ID); r.Status != engine.StatusCompleted {
			t.Fatalf("first run: %s", r.Status)
		}
		if r := h.run(p1.ID); r.Status != engine.StatusRunning {
			t.Fatalf("pending run after the first ended: %s", r.Status)
		}
		close(block.release)
		h.settle()
		if r := h.run(p1.ID); r.Status != engine.StatusCompleted {
			t.Fatalf("pending run: %s", r.Status)
		}
		if len(seen) != 2 || seen[1]["n"] != 3.0 || seen[1]["a"] != "x" {
			t.Errorf("merged payload = %v", seen)
		}
		if n := len(h.runs("q")); n != 2 {
			t.Errorf("records = %d, want 2 (three triggers, one coalesced)", n)
		}
	})
}

func TestOverlapCancelPrevious(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		block := newBlock()
		hk := withSteps(newHook("cp"), block)
		hk.Overlap = engine.OverlapCancelPrevious
		h := newHarness(t, []*engine.Hook{hk})
		defer h.stop()
		first := h.mustFire("cp")
		h.settle()
		second := h.mustFire("cp")
		h.settle()
		r1 := h.run(first.ID)
		if r1.Status != engine.StatusCancelled || !strings.Contains(r1.Reason, "superseded by run "+second.ID) {
			t.Errorf("first run: %s %q", r1.Status, r1.Reason)
		}
		if r2 := h.run(second.ID); r2.Status != engine.StatusRunning {
			t.Errorf("second run: %s", r2.Status)
		}
		close(block.release)
		h.settle()
		if r2 := h.run(second.ID); r2.Status != engine.StatusCompleted {
			t.Errorf("second run: %s", r2.Status)
		}
	})
}

func TestMaxConcurrentQueueAndOverflow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		block := newBlock()
		h := newHarness(t, []*engine.Hook{
			withSteps(newHook("a"), block), newHook("b"), newHook("c"),
		}, func(c *engine.Config) { c.MaxConcurrent = 1; c.QueueSize = 1 })
		defer h.stop()
		h.mustFire("a")
		h.settle()
		b := h.mustFire("b")
		if b.Status != engine.StatusQueued {
			t.Fatalf("b: %s", b.Status)
		}
		_, err := h.fire("c", engine.FireOptions{})
		if gateOf(err) != engine.GateQueueFull {
			t.Fatalf("c: %v", err)
		}
		if r := h.runs("c"); len(r) != 1 || r[0].Status != engine.StatusDropped {
			t.Fatalf("c records: %v", statuses(r))
		}
		close(block.release)
		h.settle()
		if r := h.run(b.ID); r.Status != engine.StatusCompleted {
			t.Errorf("b after a finished: %s", r.Status)
		}
	})
}

// TestPendingRerunTakesItsSlot: on one node, a pending rerun (overlap:
// queue) is admitted when the run before it ends, whose slot it takes
// when no run queued before it was made (b was queued after; see
// TestPendingRerunWaitsItsTurn for the other case): with max_concurrent
// and the queue full it starts, never refused for
// queue_full (that needs more runs in flight than max_concurrent, which
// only a cluster's failover to a node with a lower max_concurrent gives:
// TestClusterPendingRefusedQueueFull).
func TestPendingRerunTakesItsSlot(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		block := newBlock()
		a := withSteps(newHook("a"), block)
		a.Overlap = engine.OverlapQueue
		h := newHarness(t, []*engine.Hook{a, newHook("b")},
			func(c *engine.Config) { c.MaxConcurrent = 1; c.QueueSize = 1 })
		defer h.stop()
		h.mustFire("a")
		h.settle()
		pending := h.mustFire("a")
		b := h.mustFire("b")
		if pending.Status != engine.StatusQueued || b.Status != engine.StatusQueued {
			t.Fatalf("a again: %s, b: %s; want a pending rerun and b queued (the queue full)", pending.Status, b.Status)
		}
		close(block.release)
		h.settle()
		if r := h.run(pending.ID); r.Status != engine.StatusCompleted {
			t.Errorf("pending rerun: %s %q; want completed", r.Status, r.Reason)
		}
		if r := h.run(b.ID); r.Status != engine.StatusCompleted {
			t.Errorf("b: %s %q; want completed", r.Status, r.Reason)
		}
	})
}

// TestPendingRerunWaitsItsTurn: on one node, a pending rerun (overlap:
// queue) admitted when its hook's run ends takes its place in the global
// queue by when it began waiting: a run queued before the rerun began
// waiting gets the freed slot, and the rerun starts after it, without
// being refused by the full queue it joins.
func TestPendingRerunWaitsItsTurn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		aBlock, bBlock := newBlock(), newBlock()
		a := withSteps(newHook("a"), aBlock)
		a.Overlap = engine.OverlapQueue
		h := newHarness(t, []*engine.Hook{a, withSteps(newHook("b"), bBlock)},
			func(c *engine.Config) { c.MaxConcurrent = 1; c.QueueSize = 1 })
		defer h.stop()
		first := h.mustFire("a")
		h.settle()
		b := h.mustFire("b")       // waits for the slot a's run holds
		pending := h.mustFire("a") // waits for a's run, from after b
		if b.Status != engine.StatusQueued || pending.Status != engine.StatusQueued {
			t.Fatalf("b: %s, a again: %s; want b queued and a pending rerun", b.Status, pending.Status)
		}
		aBlock.release <- struct{}{} // a's first run ends
		h.settle()
		if r := h.run(first.ID); r.Status != engine.StatusCompleted {
			t.Fatalf("a's first run: %s %q; want completed", r.Status, r.Reason)
		}
		if r := h.run(b.ID); r.Status != engine.StatusRunning {
			t.Errorf("b, queued first: %s %q; want running in the freed slot", r.Status, r.Reason)
		}
		if r := h.run(pending.ID); r.Status != engine.StatusQueued {
			t.Errorf("a's pending rerun: %s %q; want queued behind b", r.Status, r.Reason)
		}
		close(bBlock.release)
		h.settle()
		if r := h.run(pending.ID); r.Status != engine.StatusRunning {
			t.Errorf("a's pending rerun after b: %s %q; want running", r.Status, r.Reason)
		}
		close(aBlock.release)
		h.settle()
		for _, id := range []string{b.ID, pending.ID} {
			if r := h.run(id); r.Status != engine.StatusCompleted {
				t.Errorf("run %s of %s: %s %q; want completed", id, r.Hook, r.Status, r.Reason)
			}
		}
	})
}

func TestQueuedRunsSurviveRestart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		block := newBlock()
		h := newHarness(t, []*engine.Hook{withSteps(newHook("a"), block), newHook("b")},
			func(c *engine.Config) { c.MaxConcurrent = 1; c.Grace = time.Second })
		a := h.mustFire("a")
		h.settle()
		b := h.mustFire("b")
		h.eng.Stop() // a is cancelled after the grace period; b stays queued
		if r := h.run(a.ID); r.Status != engine.StatusCancelled || !strings.HasPrefix(r.Reason, "shutdown") {
			t.Errorf("a after stop: %s %q", r.Status, r.Reason)
		}
		if r := h.run(b.ID); r.Status != engine.StatusQueued {
			t.Errorf("b after stop: %s", r.Status)
		}
		h.db.Close()
		h.clock.Jump(time.Hour)
		h.start()
		defer h.stop()
		h.settle()
		if r := h.run(b.ID); r.Status != engine.StatusCompleted {
			t.Errorf("b after restart: %s", r.Status)
		}
	})
}

func TestInterruptedRunsRecovered(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, []*engine.Hook{newHook("x")})
		h.stop()
		// What a crash leaves: a run still marked running.
		db := h.dbAt()
		run := &engine.Run{ID: engine.NewID(), Hook: "x", Trigger: "manual", Status: engine.StatusRunning, StartedAt: time.Now()}
		if err := db.StartRun(context.Background(), run); err != nil {
			t.Fatal(err)
		}
		db.Close()
		h.start()
		defer h.stop()
		if r := h.run(run.ID); r.Status != engine.StatusInterrupted {
			t.Errorf("status after restart: %s", r.Status)
		}
	})
}

func TestCatchupPolicies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy engine.MissedPolicy
		max    int
		fired  []time.Duration // slots fired on restart, as offsets from midnight
		missed string          // reason of the record for slots not fired
	}{
		{engine.MissedLatest, 0, []time.Duration{5 * time.Hour}, "missed: 3 slot(s)"},
		{engine.MissedSkip, 0, nil, "missed: 4 slot(s)"},
		{engine.MissedAll, 2, []time.Duration{4 * time.Hour, 5 * time.Hour}, "missed: 2 slot(s)"},
		{engine.MissedAll, 10, []time.Duration{2 * time.Hour, 3 * time.Hour, 4 * time.Hour, 5 * time.Hour}, ""},
	} {
		t.Run(fmt.Sprintf("%s-%d", tc.policy, tc.max), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hk := every(newHook("hourly"), time.Hour)
				hk.Trigger.OnMissed, hk.Trigger.MaxCatchup = tc.policy, tc.max
				h := newHarness(t, []*engine.Hook{hk})
				h.advance(time.Hour + time.Minute) // the 01:00 slot fires
				if n := len(h.runs("hourly")); n != 1 {
					t.Fatalf("runs before the downtime: %d", n)
				}
				// Down from 01:01 to 05:30: slots 02:00..05:00 are missed.
				h.restart(4*time.Hour + 29*time.Minute)
				defer h.stop()
				h.settle()
				var fired []time.Duration
				missed := ""
				midnight := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
				for _, r := range h.runs("hourly")[1:] {
					switch {
					case r.Trigger == "catchup" && r.Status == engine.StatusCompleted:
						fired = append(fired, r.Slot.Sub(midnight))
					case strings.HasPrefix(r.Reason, "missed"):
						missed = r.Reason
					default:
						t.Errorf("unexpected record: %s %s %q", r.Trigger, r.Status, r.Reason)
					}
				}
				if !slices.Equal(fired, tc.fired) {
					t.Errorf("catch-up slots = %v, want %v", fired, tc.fired)
				}
				if !strings.HasPrefix(missed, tc.missed) || (tc.missed == "") != (missed == "") {
					t.Errorf("missed record = %q, want prefix %q", missed, tc.missed)
				}
				// The schedule goes on from now: 06:00 fires once.
				before := len(h.runs("hourly"))
				h.advance(31 * time.Minute)
				if n := len(h.runs("hourly")) - before; n != 1 {
					t.Errorf("runs at 06:00: %d", n)
				}
			})
		})
	}
}

func TestRestartDoesNotRefireOrFireEverything(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var hooks []*engine.Hook
		for i := range 20 {
			hooks = append(hooks, every(newHook(fmt.Sprintf("h%02d", i)), time.Hour))
		}
		h := newHarness(t, hooks)
		h.advance(time.Hour + time.Minute)
		total := func() int {
			n := 0
			for _, hk := range hooks {
				n += len(h.runs(hk.Name))
			}
			return n
		}
		if n := total(); n != 20 {
			t.Fatalf("runs at 01:00 = %d", n)
		}
		// Restart within the same hour: nothing was missed, nothing fires.
		h.restart(10 * time.Minute)
		defer h.stop()
		h.settle()
		if n := total(); n != 20 {
			t.Errorf("runs after a restart with no missed slot = %d, want 20", n)
		}
	})
}

func TestClockJumpFiresOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, []*engine.Hook{every(newHook("m"), time.Minute)})
		defer h.stop()
		h.advance(90 * time.Second) // 00:01 fires
		h.clock.Jump(time.Hour)     // suspend for an hour
		h.advance(time.Second)      // the next tick notices
		runs := h.runs("m")
		var ran, missed int
		for _, r := range runs {
			switch {
			case r.Status == engine.StatusCompleted:
				ran++
			case strings.HasPrefix(r.Reason, "missed: 59 slot(s)"):
				missed++
			}
		}
		if ran != 2 || missed != 1 || len(runs) != 3 {
			t.Errorf("after the jump: %d runs, %d completed, %d missed records; want 3, 2, 1", len(runs), ran, missed)
		}
		// A backward jump never fires a slot twice.
		h.clock.Jump(-30 * time.Minute)
		h.advance(2 * time.Minute)
		slots := map[time.Time]int{}
		for _, r := range h.runs("m") {
			if !r.Slot.IsZero() {
				slots[r.Slot]++
			}
		}
		for s, n := range slots {
			if n > 1 {
				t.Errorf("slot %v fired %d times", s, n)
			}
		}
	})
}

func TestEventTriggerWhereAndLoopCut(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		deploy := newHook("deploy")
		deploy.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*", Where: map[string]any{"env": "prod"}}
		loop := newHook("loop") // triggered by its own completion
		loop.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "hook.run.completed", Where: map[string]any{"hook": "loop"}}
		h := newHarness(t, []*engine.Hook{deploy, loop}, func(c *engine.Config) { c.MaxEventDepth = 3 })
		defer h.stop()
		ctx := context.Background()

		runs, err := h.eng.Emit(ctx, &engine.Event{Type: "deploy.finished", Data: map[string]any{"env": "dev"}})
		if err != nil || len(runs) != 0 {
			t.Fatalf("dev deploy: %v %v", runs, err)
		}
		runs, err = h.eng.Emit(ctx, &engine.Event{Type: "deploy.finished", Data: map[string]any{"env": "prod", "svc": "api"}})
		if err != nil || len(runs) != 1 || runs[0].Hook != "deploy" {
			t.Fatalf("prod deploy: %v %v", runs, err)
		}
		h.settle()
		if r := h.run(runs[0].ID); r.Status != engine.StatusCompleted || r.EventType != "deploy.finished" {
			t.Errorf("deploy run: %s %s", r.Status, r.EventType)
		}
		var ev map[string]any
		json.Unmarshal(h.run(runs[0].ID).Event, &ev)
		if ev["svc"] != "api" {
			t.Errorf("run payload = %v", ev)
		}

		// All of hook.* is hookd's, two-segment types too, and so are the watches' events.
		for _, typ := range []string{"hook.run.completed", "hook.run", "hook.tool", "hook.step.finished", "hook", "file.changed", "folder.changed"} {
			if _, err := h.eng.Emit(ctx, &engine.Event{Type: typ, Data: map[string]any{"hook": "loop"}}); !errors.Is(err, engine.ErrReservedEvent) {
				t.Errorf("publishing %s, of hookd's own event types: %v", typ, err)
			}
		}
		if _, err := h.eng.Emit(ctx, &engine.Event{Type: "hooks.run"}); err != nil {
			t.Errorf("hooks.run is not hookd's: %v", err)
		}
		// hookd's own events are dispatched without being published.
		if _, err := h.eng.Dispatch(ctx, &engine.Event{Type: "hook.run.completed", Data: map[string]any{"hook": "loop"}, Source: "engine"}); err != nil {
			t.Fatal(err)
		}
		h.settle()
		var completed, cut int
		for _, r := range h.runs("loop") {
			if r.Status == engine.StatusCompleted {
				completed++
			}
			if strings.HasPrefix(r.Reason, engine.GateEventDepth) {
				cut++
			}
		}
		if completed != 3 || cut != 1 {
			t.Errorf("loop: %d completed, %d cut; want 3 and 1", completed, cut)
		}
		if _, err := h.eng.Emit(ctx, &engine.Event{ID: "same", Type: "x"}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.eng.Emit(ctx, &engine.Event{ID: "same", Type: "x"}); err == nil {
			t.Error("an event id seen before was accepted again")
		}
	})
}

func TestRunOutcomes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ok := func(out string, fields map[string]any) engine.Step {
			return funcStep(func(context.Context, *engine.StepEnv) (*engine.StepResult, error) {
				return &engine.StepResult{Output: out, Fields: fields}, nil
			})
		}
		fail := funcStep(func(context.Context, *engine.StepEnv) (*engine.StepResult, error) {
			return nil, fmt.Errorf("boom")
		})
		panicky := funcStep(func(context.Context, *engine.StepEnv) (*engine.StepResult, error) { panic("oops") })

		timeout := withSteps(newHook("timeout"), newBlock())
		timeout.Timeout = time.Minute
		required := withSteps(newHook("required"), fail, ok("never", nil))
		required.Steps[0].Required = true
		optional := withSteps(newHook("optional"), fail, panicky, ok("after", nil))
		optional.Steps[0].AllowFailure, optional.Steps[1].AllowFailure = true, true
		exitZero := withSteps(newHook("exitzero"), funcStep(func(context.Context, *engine.StepEnv) (*engine.StepResult, error) {
			return &engine.StepResult{Output: "fine", ExitCode: new(0)}, nil
		}))
		exitZero.Steps[0].Skip.IfExitZero = true
		exitZero.SkipLLM = false
		exitZero.Prompt = "never rendered"
		needsModel := withSteps(newHook("model"), ok("data", nil))
		needsModel.SkipLLM = false
		needsModel.Prompt = "Look at {{step_0}} for {{hook}}"
		secret := withSteps(newHook("secret"), ok("token=hunter2hunter2", nil))
		secret.Secrets = []string{"MY_TOKEN"}
		empty := withSteps(newHook("empty"), ok("  \n", nil))
		empty.Steps[0].Skip.IfEmpty = true
		empty.SkipLLM = false
		empty.Prompt = "x"
		unchanged := withSteps(newHook("unchanged"), ok("same", nil))
		unchanged.Steps[0].Skip.IfUnchanged = true
		unchanged.SkipLLM = false
		unchanged.Prompt = "x"

		h := newHarness(t, []*engine.Hook{timeout, required, optional, exitZero, needsModel, secret, empty, unchanged},
			func(c *engine.Config) { c.Environ = []string{"MY_TOKEN=hunter2hunter2"} })
		defer h.stop()
		fire := func(name string) *engine.Run {
			r := h.mustFire(name)
			final, err := h.eng.Wait(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if stored := h.run(r.ID); stored.Status != final.Status {
				t.Fatalf("%s: Wait says %s, store says %s", name, final.Status, stored.Status)
			}
			return h.run(r.ID)
		}

		if r := fire("timeout"); r.Status != engine.StatusFailed || r.Cause != engine.CauseTimeout ||
			r.Reason != "timeout" || !strings.Contains(r.Error, "exceeded its 1m0s timeout") {
			t.Errorf("timeout: %s %s %q %q", r.Status, r.Cause, r.Reason, r.Error)
		}
		if r := fire("required"); r.Status != engine.StatusFailed || r.Cause != engine.CauseStepFailed ||
			r.Reason != "step_0: boom" || r.Error != "step_0: boom" || len(r.Steps) != 1 {
			t.Errorf("required: %s %s %q %q steps=%d", r.Status, r.Cause, r.Reason, r.Error, len(r.Steps))
		}
		r := fire("optional")
		if r.Status != engine.StatusCompleted || len(r.Steps) != 3 || r.Steps[0].Error != "boom" ||
			!strings.Contains(r.Steps[1].Error, "panicked") || r.Steps[2].Output != "after" ||
			r.Headline() != "completed, 2 step errors" {
			t.Errorf("optional: %s %q %+v", r.Status, r.Headline(), r.Steps)
		}
		if r := fire("exitzero"); r.Status != engine.StatusCompleted || r.Cause != engine.CauseShortCircuit ||
			r.Reason != "short-circuit: step_0: exit code 0" || r.Prompt != "" || r.Headline() != "completed, model not needed" {
			t.Errorf("exitzero: %s %s %q", r.Status, r.Cause, r.Reason)
		}
		if r := fire("model"); r.Status != engine.StatusFailed || !strings.Contains(r.Error, "no model client") ||
			r.Prompt != "Look at data for model" {
			t.Errorf("model: %s %q %q", r.Status, r.Error, r.Prompt)
		}
		if r := fire("secret"); r.Steps[0].Output != "token=[REDACTED:MY_TOKEN]" {
			t.Errorf("secret: output %q", r.Steps[0].Output)
		}
		if r := fire("empty"); r.Status != engine.StatusCompleted || r.Reason != "short-circuit: step_0: output is empty" {
			t.Errorf("empty: %s %q", r.Status, r.Reason)
		}
		first, second := fire("unchanged"), fire("unchanged")
		if first.Status != engine.StatusFailed || second.Status != engine.StatusCompleted ||
			second.Reason != "short-circuit: step_0: context unchanged since the last run" {
			t.Errorf("unchanged: %s then %s %q", first.Status, second.Status, second.Reason)
		}
		if n := len(h.eventsOf(engine.EventRunFailed)); n != 4 {
			t.Errorf("hook.run.failed events = %d, want 4", n)
		}
	})
}

func TestShutdownLetsRunsFinishWithinGrace(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		slow := withSteps(newHook("slow"), funcStep(func(ctx context.Context, _ *engine.StepEnv) (*engine.StepResult, error) {
			select {
			case <-time.After(5 * time.Second):
				return &engine.StepResult{Output: "done"}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}))
		h := newHarness(t, []*engine.Hook{slow}, func(c *engine.Config) { c.Grace = 10 * time.Second })
		r := h.mustFire("slow")
		h.eng.Stop()
		defer h.db.Close()
		if got := h.run(r.ID); got.Status != engine.StatusCompleted {
			t.Errorf("run within grace: %s %q", got.Status, got.Reason)
		}
		if _, err := h.fire("slow", engine.FireOptions{}); err != engine.ErrStopped {
			t.Errorf("fire after stop: %v", err)
		}
	})
}
