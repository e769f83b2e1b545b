package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	p := engine.RetryPolicy{Attempts: 10, Backoff: 30 * time.Second, MaxBackoff: 10 * time.Minute}
	for _, c := range []struct {
		attempt int
		jitter  float64
		want    time.Duration
	}{
		{2, 0, 30 * time.Second},
		{3, 0, time.Minute},
		{4, 0, 2 * time.Minute},
		{6, 0, 8 * time.Minute},
		{7, 0, 10 * time.Minute}, // 16m, capped
		{50, 0, 10 * time.Minute},
		{2, 0.5, 27 * time.Second}, // a tenth less
		{2, 0.999999, 24*time.Second + 6*time.Microsecond},
		{7, 0.5, 9 * time.Minute},
	} {
		if got := p.Delay(c.attempt, c.jitter); got != c.want {
			t.Errorf("Delay(%d, %v) = %s, want %s", c.attempt, c.jitter, got, c.want)
		}
	}
	if got := (engine.RetryPolicy{Attempts: 2}).Delay(2, 0); got != engine.DefaultRetryBackoff {
		t.Errorf("default backoff: %s", got)
	}
}

// failing returns a step that fails its first n runs and then succeeds,
// and counts its runs.
func failing(n int32, runs *atomic.Int32) engine.Step {
	return funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		if runs.Add(1) <= n {
			return nil, errors.New("flaky")
		}
		return &engine.StepResult{Output: "ok"}, nil
	})
}

func retryHook(name string, attempts int, step engine.Step) *engine.Hook {
	h := withSteps(newHook(name), step)
	h.Retry = engine.RetryPolicy{Attempts: attempts, Backoff: 30 * time.Second, MaxBackoff: 10 * time.Minute,
		On: []engine.Status{engine.StatusFailed, engine.StatusInterrupted}, Notify: engine.RetryNotifyFinal}
	return h
}

// TestRetryFailedRunUntilItPasses: a run that fails is run again after
// the backoff, as a new run linked to the first, until one passes; only
// the last attempt's event is final for notifications.
func TestRetryFailedRunUntilItPasses(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		h := newHarness(t, []*engine.Hook{retryHook("flaky", 3, failing(2, &n))})
		defer h.stop()
		first := h.mustFire("flaky")
		h.settle()
		r1 := h.run(first.ID)
		if r1.Status != engine.StatusFailed || r1.Attempt != 1 || r1.Attempts != 3 || r1.Retry == nil || r1.Retry.Attempt != 2 {
			t.Fatalf("first run: %s attempt %d of %d, retry %+v", r1.Status, r1.Attempt, r1.Attempts, r1.Retry)
		}
		if d := r1.Retry.At.Sub(r1.FinishedAt); d < 24*time.Second || d > 30*time.Second {
			t.Errorf("first retry %s after the failure, want 24s..30s", d)
		}
		if !strings.Contains(r1.Headline(), "attempt 1 of 3") {
			t.Errorf("headline %q", r1.Headline())
		}
		h.advance(23 * time.Second)
		if got := len(h.runs("flaky")); got != 1 {
			t.Fatalf("%d runs before the backoff passed", got)
		}
		h.advance(8 * time.Second)
		runs := h.runs("flaky")
		if len(runs) != 2 {
			t.Fatalf("after the backoff: %d runs", len(runs))
		}
		r2 := runs[1]
		if r2.ID != r1.Retry.RunID || r2.Trigger != engine.TriggerRetry || r2.RetryOf != r1.ID || r2.Attempt != 2 ||
			r2.Status != engine.StatusFailed || r2.Retry == nil || r2.Retry.Attempt != 3 {
			t.Fatalf("second run: %+v", r2)
		}
		if d := r2.Retry.At.Sub(r2.FinishedAt); d < 48*time.Second || d > time.Minute {
			t.Errorf("second retry %s after the failure, want 48s..60s (doubled)", d)
		}
		h.advance(time.Minute)
		runs = h.runs("flaky")
		if len(runs) != 3 {
			t.Fatalf("after the second backoff: %d runs", len(runs))
		}
		r3 := runs[2]
		if r3.Status != engine.StatusCompleted || r3.RetryOf != r1.ID || r3.Attempt != 3 || r3.Retry != nil {
			t.Fatalf("third run: %+v", r3)
		}
		// Notifications report the outcome once: the failed attempts are
		// intermediate, the last is not.
		for _, ev := range h.eventsOf(engine.EventRunFailed) {
			if !ev.Outcome.Intermediate {
				t.Errorf("failed attempt %v is not intermediate", ev.Data["attempt"])
			}
		}
		done := h.eventsOf(engine.EventRunCompleted)
		if len(done) != 1 || done[0].Outcome.Intermediate || done[0].Data["retry_of"] != r1.ID {
			t.Errorf("completed events: %+v", done)
		}
		h.advance(time.Hour)
		if got := len(h.runs("flaky")); got != 3 || n.Load() != 3 {
			t.Errorf("%d runs, %d step runs after the chain ended", got, n.Load())
		}
	})
}

// TestRetryStopsAtAttempts: the last attempt failing schedules nothing,
// and is the one event notifications report.
func TestRetryStopsAtAttempts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		hook := retryHook("broken", 2, failing(100, &n))
		hook.Retry.Notify = engine.RetryNotifyEach
		h := newHarness(t, []*engine.Hook{hook})
		defer h.stop()
		h.mustFire("broken")
		h.advance(time.Hour)
		runs := h.runs("broken")
		if len(runs) != 2 || runs[1].Status != engine.StatusFailed || runs[1].Retry != nil || runs[1].Attempt != 2 {
			t.Fatalf("runs: %v", statuses(runs))
		}
		for _, ev := range h.eventsOf(engine.EventRunFailed) {
			if ev.Outcome.Intermediate {
				t.Errorf("notify: each, yet attempt %v is intermediate", ev.Data["attempt"])
			}
		}
		if ps, err := h.db.PendingRetries(context.Background()); err != nil || len(ps) != 0 {
			t.Errorf("pending retries left: %v %v", ps, err)
		}
	})
}

// TestRetrySurvivesRestart: a pending retry is stored, so a hookd started
// after a stop fires it at its time, once; one that came due while hookd
// was down fires at start.
func TestRetrySurvivesRestart(t *testing.T) {
	t.Parallel()
	for _, downtime := range []time.Duration{5 * time.Second, 2 * time.Minute} {
		t.Run(downtime.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n atomic.Int32
				h := newHarness(t, []*engine.Hook{retryHook("flaky", 3, failing(1, &n))})
				first := h.mustFire("flaky")
				h.settle()
				plan := h.run(first.ID).Retry
				if plan == nil {
					t.Fatal("no retry planned")
				}
				h.restart(downtime)
				defer h.stop()
				h.settle()
				if downtime < time.Minute {
					if got := len(h.runs("flaky")); got != 1 {
						t.Fatalf("%d runs right after the restart, before the retry is due", got)
					}
					if sum, _ := h.eng.Summary(context.Background()); len(sum.Retries) != 1 || sum.Retries[0].RunID != plan.RunID {
						t.Fatalf("pending after restart: %+v", sum.Retries)
					}
					h.advance(time.Minute)
				}
				runs := h.runs("flaky")
				if len(runs) != 2 || runs[1].ID != plan.RunID || runs[1].Status != engine.StatusCompleted || runs[1].RetryOf != first.ID {
					t.Fatalf("runs after restart: %v", statuses(runs))
				}
				// Once fired, it is forgotten: a later restart does not fire it again.
				h.restart(time.Hour)
				h.advance(time.Hour)
				if got := len(h.runs("flaky")); got != 2 || n.Load() != 2 {
					t.Errorf("%d runs, %d step runs after a second restart", got, n.Load())
				}
			})
		})
	}
}

// TestRetryInterruptedByCrash: a run a crash left running is retried at
// the next start when retry.on names interrupted, and left when it does
// not.
func TestRetryInterruptedByCrash(t *testing.T) {
	t.Parallel()
	for _, on := range []engine.Status{engine.StatusInterrupted, engine.StatusFailed} {
		t.Run(string(on), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var n atomic.Int32
				hook := retryHook("x", 3, failing(0, &n))
				hook.Retry.On = []engine.Status{on}
				h := newHarness(t, []*engine.Hook{hook})
				h.stop()
				db := h.dbAt()
				crashed := &engine.Run{ID: engine.NewID(), Hook: "x", Trigger: "manual", Status: engine.StatusRunning, StartedAt: time.Now()}
				if err := db.StartRun(context.Background(), crashed); err != nil {
					t.Fatal(err)
				}
				db.Close()
				h.start()
				defer h.stop()
				h.advance(time.Minute)
				r := h.run(crashed.ID)
				runs := h.runs("x")
				if on == engine.StatusFailed {
					if r.Status != engine.StatusInterrupted || r.Retry != nil || len(runs) != 1 {
						t.Fatalf("retry.on [failed]: %s retry %+v, %d runs", r.Status, r.Retry, len(runs))
					}
					return
				}
				if r.Status != engine.StatusInterrupted || r.Retry == nil {
					t.Fatalf("interrupted run: %s retry %+v", r.Status, r.Retry)
				}
				if len(runs) != 2 || runs[1].Status != engine.StatusCompleted || runs[1].RetryOf != crashed.ID || runs[1].Attempt != 2 {
					t.Fatalf("runs: %v", statuses(runs))
				}
			})
		})
	}
}

// TestRetryKilledAfterPlanning: hookd killed after a failed run stored
// its pending retry but before its final record (the run is left
// running, its retry stored) runs that retry once at the next start — the
// interrupted run does not plan a second one.
func TestRetryKilledAfterPlanning(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		h := newHarness(t, []*engine.Hook{retryHook("x", 3, failing(0, &n))})
		h.stop()
		db := h.dbAt()
		ctx := context.Background()
		crashed := &engine.Run{ID: engine.NewID(), Hook: "x", Trigger: "manual", Status: engine.StatusRunning, StartedAt: time.Now()}
		if err := db.StartRun(ctx, crashed); err != nil {
			t.Fatal(err)
		}
		planned := &engine.PendingRetry{RetryPlan: engine.RetryPlan{RunID: engine.NewID(), Attempt: 2, At: time.Now().Add(30 * time.Second)},
			Hook: "x", RetryOf: crashed.ID, Attempts: 3}
		if err := db.AddRetry(ctx, planned); err != nil {
			t.Fatal(err)
		}
		db.Close()
		h.start()
		defer h.stop()
		h.settle()
		if sum, _ := h.eng.Summary(ctx); len(sum.Retries) != 1 || sum.Retries[0].RunID != planned.RunID {
			t.Fatalf("pending retries after the restart: %+v; want only %s", sum.Retries, planned.RunID)
		}
		if r := h.run(crashed.ID); r.Status != engine.StatusInterrupted || r.Retry == nil || r.Retry.RunID != planned.RunID {
			t.Errorf("interrupted run: %s retry %+v", r.Status, r.Retry)
		}
		h.advance(time.Hour)
		runs := h.runs("x")
		if len(runs) != 2 || runs[1].ID != planned.RunID || n.Load() != 1 {
			t.Fatalf("runs: %v, %d step runs; want the crashed run and its one retry", statuses(runs), n.Load())
		}
	})
}

// TestRetryGates: a retry skips the cooldown (like fire --force) but not
// the in-flight gate, which records it skipped like any trigger.
func TestRetryGates(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		block := newBlock()
		cool := retryHook("cool", 3, failing(1, &n))
		cool.Cooldown = time.Hour
		busy := retryHook("busy", 3, funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			if env.Scope.Trigger == "manual" {
				if v, _ := env.Scope.Event["block"].(bool); v {
					return block.Run(ctx, env)
				}
			}
			return nil, errors.New("fails")
		}))
		h := newHarness(t, []*engine.Hook{cool, busy})
		defer h.stop()

		h.mustFire("cool")
		h.advance(time.Minute)
		runs := h.runs("cool")
		if len(runs) != 2 || runs[1].Status != engine.StatusCompleted || runs[1].Trigger != engine.TriggerRetry {
			t.Fatalf("cool: %v (a retry is not held by the cooldown)", statuses(runs))
		}

		first := h.mustFire("busy")
		h.settle()
		plan := h.run(first.ID).Retry
		if plan == nil {
			t.Fatal("busy: no retry planned")
		}
		if _, err := h.fire("busy", engine.FireOptions{Event: map[string]any{"block": true}}); err != nil {
			t.Fatal(err)
		}
		h.advance(time.Minute)
		r := h.run(plan.RunID)
		if r.Status != engine.StatusSkipped || r.Gate != engine.GateInFlight || r.Attempt != 2 || r.RetryOf != first.ID {
			t.Fatalf("retry while in flight: %s %s attempt %d", r.Status, r.Gate, r.Attempt)
		}
		close(block.release)
		h.settle()
	})
}

// TestRetryKeepsTheEvent: the retry runs with the first run's event.
func TestRetryKeepsTheEvent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var seen []string
		var n atomic.Int32
		hook := retryHook("ev", 2, funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			seen = append(seen, fmt.Sprint(env.Scope.Event["service"]))
			if n.Add(1) == 1 {
				return nil, errors.New("first fails")
			}
			return &engine.StepResult{}, nil
		}))
		h := newHarness(t, []*engine.Hook{hook})
		defer h.stop()
		if _, err := h.fire("ev", engine.FireOptions{Event: map[string]any{"service": "api"}}); err != nil {
			t.Fatal(err)
		}
		h.advance(time.Minute)
		if strings.Join(seen, ",") != "api,api" {
			t.Errorf("events seen: %v", seen)
		}
	})
}
