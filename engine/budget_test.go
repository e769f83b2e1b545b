package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/engine"
)

// spendLLM answers each model stage as a server that reported Prompt and
// Completion tokens would; with hold set, it waits for hold to close.
type spendLLM struct {
	prompt, completion int64
	calls              atomic.Int32
	hold               chan struct{}
}

func (l *spendLLM) Complete(ctx context.Context, req *engine.LLMRequest) error {
	l.calls.Add(1)
	if l.hold != nil {
		select {
		case <-l.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	req.Model = "test-model"
	req.Run.Tokens = engine.Tokens{Prompt: l.prompt, Completion: l.completion, Known: true}
	req.Run.Response = "done"
	return nil
}

// spender is a hook with a model stage after one step, which counts its
// runs in steps.
func spender(name string, steps *atomic.Int32) *engine.Hook {
	h := newHook(name)
	h.SkipLLM, h.Prompt = false, "what now?"
	return withSteps(h, funcStep(func(context.Context, *engine.StepEnv) (*engine.StepResult, error) {
		steps.Add(1)
		return &engine.StepResult{Output: "ok"}, nil
	}))
}

// lastRun is the newest record of hook.
func (h *harness) lastRun(hook string) *engine.Run {
	h.t.Helper()
	runs := h.runs(hook)
	if len(runs) == 0 {
		h.t.Fatalf("no runs of %s", hook)
	}
	return runs[len(runs)-1]
}

// TestBudgetGate: a hook with budget.per_hour: 500 whose runs use 300
// tokens runs twice in an hour; the third trigger is refused before its
// steps run and recorded skipped (budget), also after a restart (the
// ledger is read back from the SQLite file), until the window slides.
// --force does not get past it.
func TestBudgetGate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var steps atomic.Int32
		hk := spender("ask", &steps)
		hk.Budget = budget.Hook{PerHour: 500}
		model := &spendLLM{prompt: 200, completion: 100}
		hs := newHarness(t, []*engine.Hook{hk}, func(c *engine.Config) { c.LLM = model })
		hs.mustFire("ask")
		hs.advance(10 * time.Minute)
		hs.mustFire("ask")
		hs.advance(time.Minute)
		if n := steps.Load(); n != 2 {
			t.Fatalf("%d runs before the budget was spent, want 2", n)
		}
		_, err := hs.fire("ask", engine.FireOptions{Force: true})
		if gateOf(err) != engine.GateBudget {
			t.Fatalf("third fire: %v, want the budget gate", err)
		}
		want := "hook ask's runs used 600 tokens in the last 1h (budget.per_hour: 500 in ask.yaml); the next run is allowed in 49m"
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal:\n%v\nwant it to say\n%s", err, want)
		}
		last := hs.lastRun("ask")
		if last.Status != engine.StatusSkipped || last.Gate != engine.GateBudget || last.Reason != "budget: "+want {
			t.Errorf("refused record: %s %s %q", last.Status, last.Gate, last.Reason)
		}
		if steps.Load() != 2 || model.calls.Load() != 2 {
			t.Errorf("a refused trigger ran something: %d step runs, %d model stages", steps.Load(), model.calls.Load())
		}

		hs.restart(5 * time.Minute)
		defer hs.stop()
		if _, err := hs.fire("ask", engine.FireOptions{}); gateOf(err) != engine.GateBudget {
			t.Fatalf("after a restart: %v, want the budget gate", err)
		}
		sum, err := hs.eng.Summary(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := sum.Spend.Hooks["ask"].Hour
		if got.Tokens != 600 || got.Prompt != 400 || got.Completion != 200 || got.Limit != 500 || got.Runs != 2 {
			t.Errorf("spend after a restart: %+v", got)
		}
		if d := sum.Spend.Daemon.Day; d.Tokens != 600 || d.Limit != 0 {
			t.Errorf("daemon's spend: %+v", d)
		}
		hs.advance(45 * time.Minute) // the first run leaves the hour
		if _, err := hs.fire("ask", engine.FireOptions{}); err != nil {
			t.Errorf("after the window slid: %v", err)
		}
		hs.settle()
		if steps.Load() != 3 {
			t.Errorf("%d step runs, want 3", steps.Load())
		}
	})
}

// TestDaemonBudgetGate: the daemon's budget counts every hook's runs: a
// hook that never ran is refused once others spent the day's tokens.
func TestDaemonBudgetGate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var steps atomic.Int32
		model := &spendLLM{prompt: 250, completion: 50}
		hs := newHarness(t, []*engine.Hook{spender("a", &steps), spender("b", &steps), spender("c", &steps)},
			func(c *engine.Config) {
				c.LLM = model
				c.Budget = budget.Daemon{PerDay: 600, Prices: map[string]budget.Price{"test-model": {Input: 2, Output: 8}}}
			})
		defer hs.stop()
		hs.mustFire("a")
		hs.advance(time.Hour)
		hs.mustFire("b")
		hs.advance(time.Hour)
		_, err := hs.fire("c", engine.FireOptions{})
		want := "budget: the runs of all hooks used 600 tokens in the last 24h (budget.per_day: 600 in hookd.yaml); the next run is allowed in 22h"
		if gateOf(err) != engine.GateBudget || err.Error() != want {
			t.Fatalf("fire c: %v\nwant %s", err, want)
		}
		if steps.Load() != 2 {
			t.Errorf("%d step runs, want 2", steps.Load())
		}
		sum, err := hs.eng.Summary(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		d := sum.Spend.Daemon.Day
		// 500 prompt tokens at 2 per 1M, 100 completion tokens at 8.
		if d.Tokens != 600 || d.Limit != 600 || d.Runs != 2 || d.Cost != (500*2+100*8)/1e6 || !sum.Spend.Priced {
			t.Errorf("daemon's day: %+v", d)
		}
		if _, ok := sum.Spend.Hooks["c"]; ok {
			t.Errorf("hook c, with no budget and no usage, is in the report: %+v", sum.Spend.Hooks)
		}
	})
}

// TestBudgetPendingRun: a run waiting for the hook's run in flight
// (overlap: queue) is refused when that run spends the budget, before its
// steps run.
func TestBudgetPendingRun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var steps atomic.Int32
		hk := spender("ask", &steps)
		hk.Overlap = engine.OverlapQueue
		hk.Budget = budget.Hook{PerDay: 1000}
		model := &spendLLM{prompt: 900, completion: 200, hold: make(chan struct{})}
		hs := newHarness(t, []*engine.Hook{hk}, func(c *engine.Config) { c.LLM = model })
		defer hs.stop()
		first := hs.mustFire("ask")
		hs.settle()
		pending := hs.mustFire("ask")
		if pending.Status != engine.StatusQueued {
			t.Fatalf("second fire: %s, want queued behind the first", pending.Status)
		}
		close(model.hold)
		done, err := hs.eng.Wait(context.Background(), pending.ID)
		if err != nil {
			t.Fatal(err)
		}
		if done.Status != engine.StatusSkipped || done.Gate != engine.GateBudget {
			t.Errorf("pending run: %s %s %q", done.Status, done.Gate, done.Reason)
		}
		if r := hs.run(pending.ID); r.Status != engine.StatusSkipped || !strings.HasPrefix(r.Reason, "budget: hook ask's runs used 1100 tokens") {
			t.Errorf("stored pending run: %s %q", r.Status, r.Reason)
		}
		if r := hs.run(first.ID); r.Status != engine.StatusCompleted || r.Tokens.Prompt != 900 {
			t.Errorf("first run: %s %+v", r.Status, r.Tokens)
		}
		if steps.Load() != 1 || model.calls.Load() != 1 {
			t.Errorf("%d step runs, %d model stages; want 1 each", steps.Load(), model.calls.Load())
		}
	})
}

// TestBudgetCatchup: catch-up runs after an outage spend and are held to
// the budget like any trigger: with 300 of 700 tokens spent before the
// outage, two of four missed slots run and the other two are recorded
// skipped (budget), each at once.
func TestBudgetCatchup(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var steps atomic.Int32
		hk := every(spender("hourly", &steps), time.Hour)
		hk.Trigger.OnMissed, hk.Trigger.MaxCatchup = engine.MissedAll, 10
		hk.Budget = budget.Hook{PerDay: 700}
		hs := newHarness(t, []*engine.Hook{hk}, func(c *engine.Config) { c.LLM = &spendLLM{prompt: 300, completion: 0} })
		hs.advance(time.Hour + time.Minute) // 01:00 fires: 300 tokens
		hs.restart(4*time.Hour + 29*time.Minute)
		defer hs.stop()
		hs.settle()
		var got []string
		for _, r := range hs.runs("hourly")[1:] {
			got = append(got, r.Trigger+" "+string(r.Status)+" "+r.Gate)
		}
		want := []string{"catchup completed ", "catchup completed ", "catchup skipped budget", "catchup skipped budget"}
		if strings.Join(got, ", ") != strings.Join(want, ", ") {
			t.Errorf("after the outage:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if steps.Load() != 3 {
			t.Errorf("%d step runs, want 3", steps.Load())
		}
	})
}
