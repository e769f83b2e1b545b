package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/hookd/hookd/engine"
)

// A run's start reaches the loop held with its first step's start, or,
// for a run whose steps all have a false if:, with its end: either way
// it is dispatched while the run is in flight, so a hook reacting to its
// own start is refused as in flight, not run again.
func TestOwnStartIsDispatchedInFlight(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		skipAll := &engine.StepDef{Type: "test", Step: funcStep(func(context.Context, *engine.StepEnv) (*engine.StepResult, error) {
			t.Error("a step with if: false ran")
			return nil, nil
		})}
		var err error
		if skipAll.If, err = engine.CompileCondition("false", nil, 0); err != nil {
			t.Fatal(err)
		}
		one := withSteps(newHook("one"), exitStep(0, 0))
		none := newHook("none")
		none.Steps = []*engine.StepDef{skipAll}
		var hooks []*engine.Hook
		for _, hk := range []*engine.Hook{one, none} {
			hk.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: engine.EventRunStarted, Where: map[string]any{"hook": hk.Name}}
			hooks = append(hooks, hk)
		}
		h := newHarness(t, hooks)
		defer h.stop()
		for _, name := range []string{"one", "none"} {
			r := h.mustFire(name)
			final, err := h.eng.Wait(context.Background(), r.ID)
			if err != nil || final.Status != engine.StatusCompleted {
				t.Fatalf("%s: %v %+v", name, err, final)
			}
			h.logged()
			var got []string
			for _, r := range h.runs(name) {
				got = append(got, fmt.Sprintf("%s/%s", r.Status, r.Gate))
			}
			if fmt.Sprint(got) != "[completed/ skipped/in_flight]" {
				t.Errorf("runs of %s = %v, want the fired run and its own start refused as in flight", name, got)
			}
			var order []string
			h.mu.Lock()
			for _, ev := range h.events {
				if ev.Data["run_id"] == r.ID {
					order = append(order, ev.Type)
				}
			}
			h.mu.Unlock()
			want := "[hook.run.started hook.step.started hook.step.finished hook.run.completed]"
			if name == "none" {
				want = "[hook.run.started hook.run.completed]"
			}
			if fmt.Sprint(order) != want {
				t.Errorf("events of %s's run = %v, want %s", name, order, want)
			}
		}
	})
}

// A hook's runs share its processes' environment (built once per loaded
// hook): a step:before handler that writes into the environment it is
// given changes no run's, its own or a later one's.
func TestSharedEnvironIsNotWritable(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var seen [][]string
		step := funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			seen = append(seen, env.Env) // runs one at a time: each is waited for
			return &engine.StepResult{Output: "ok"}, nil
		})
		h := newHarness(t, []*engine.Hook{withSteps(newHook("h"), step)}, func(c *engine.Config) {
			c.Environ = []string{"PATH=/usr/bin", "HOME=/home/u"}
		})
		defer h.stop()
		h.eng.Lifecycle().On(engine.PointStepBefore, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
			for i := range p.StepEnv {
				p.StepEnv[i] = "HIJACKED=1"
			}
			return engine.Decision{}, nil
		}, engine.HandlerOptions{Label: "scribbler"})
		for range 2 {
			r := h.mustFire("h")
			if _, err := h.eng.Wait(context.Background(), r.ID); err != nil {
				t.Fatal(err)
			}
		}
		// Each run's has its own TRACEPARENT (its span) besides.
		want := "[HOME=/home/u PATH=/usr/bin]"
		for i, env := range seen {
			seen[i] = slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "TRACEPARENT=") })
		}
		if len(seen) != 2 || fmt.Sprint(seen[0]) != want || fmt.Sprint(seen[1]) != want {
			t.Errorf("the steps saw %v, want %s twice", seen, want)
		}
	})
}
