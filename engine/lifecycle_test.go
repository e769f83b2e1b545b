package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

// record returns a handler that appends name to *got and decides d.
func record(mu *sync.Mutex, got *[]string, name string, d engine.Decision) engine.Handler {
	return func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
		mu.Lock()
		*got = append(*got, name)
		mu.Unlock()
		return d, nil
	}
}

func TestLifecyclePriorityOrderAndCancel(t *testing.T) {
	t.Parallel()
	r := engine.NewRegistry()
	var mu sync.Mutex
	var got []string
	r.On(engine.PointToolCallBefore, record(&mu, &got, "c", engine.Decision{}), engine.HandlerOptions{Priority: 300, Label: "c"})
	r.On(engine.PointToolCallBefore, record(&mu, &got, "a", engine.Decision{}), engine.HandlerOptions{Priority: 10, Label: "a"})
	// 0 given is a priority (first), not the default.
	r.On(engine.PointToolCallBefore, record(&mu, &got, "zero", engine.Decision{}), engine.HandlerOptions{Priority: 0, PrioritySet: true, Label: "zero"})
	r.On(engine.PointToolCallBefore, record(&mu, &got, "b", engine.Decision{Cancel: true, Reason: "no"}), engine.HandlerOptions{Label: "b"})
	r.On(engine.PointToolCallBefore, record(&mu, &got, "b2", engine.Decision{}), engine.HandlerOptions{Label: "b2"}) // same priority, later

	o := r.Call(context.Background(), engine.PointToolCallBefore, &engine.Payload{ToolName: "x"})
	if !slices.Equal(got, []string{"zero", "a", "b"}) {
		t.Errorf("called %v, want [zero a b]: the cancel stops the chain", got)
	}
	if !o.Cancelled || o.By != "b" || o.Reason != "no" || o.String() != "b: no" {
		t.Errorf("outcome %+v", o)
	}
	var labels []string
	for _, reg := range r.List() {
		labels = append(labels, reg.Label)
	}
	if !slices.Equal(labels, []string{"zero", "a", "b", "b2", "c"}) {
		t.Errorf("List order %v", labels)
	}
}

func TestLifecycleFirstNonNilWins(t *testing.T) {
	t.Parallel()
	r := engine.NewRegistry()
	r.On(engine.PointToolCallBefore, func(context.Context, *engine.Payload) (engine.Decision, error) {
		return engine.Decision{Changes: map[string]any{"tool_input": nil, "x": 1}}, nil
	}, engine.HandlerOptions{Priority: 1, Label: "first"})
	r.On(engine.PointToolCallBefore, func(context.Context, *engine.Payload) (engine.Decision, error) {
		return engine.Decision{Changes: map[string]any{"tool_input": `{"a":2}`, "x": 2}}, nil
	}, engine.HandlerOptions{Priority: 2, Label: "second"})
	r.On(engine.PointToolCallBefore, func(context.Context, *engine.Payload) (engine.Decision, error) {
		return engine.Decision{Changes: map[string]any{"tool_input": `{"a":3}`}}, nil
	}, engine.HandlerOptions{Priority: 3, Label: "third"})
	o := r.Call(context.Background(), engine.PointToolCallBefore, &engine.Payload{})
	if o.Cancelled || fmt.Sprintf("%s", o.Changes["tool_input"]) != `{"a":2}` || o.Changes["x"] != 1 {
		t.Errorf("changes %v", o.Changes)
	}
	if o.ChangedBy["tool_input"] != "second" || o.ChangedBy["x"] != "first" {
		t.Errorf("changed by %v", o.ChangedBy)
	}
}

// TestLifecycleToolInputRejudged: when the merged tool:call:before
// arguments differ from what the handlers saw, every fail_closed handler
// judges them once more (a fail_open one does not), and the call is
// cancelled when one denies them, fails on them, or amends them again.
func TestLifecycleToolInputRejudged(t *testing.T) {
	t.Parallel()
	const orig, split = `{"argv":["git","log","HEAD --output=x"]}`, `{"argv":["git","log","HEAD","--output=x"]}`
	// guard denies any argument that begins with "-", as `hookd guard`'s * does.
	guard := func(seen *[]string) engine.Handler {
		return func(_ context.Context, p *engine.Payload) (engine.Decision, error) {
			*seen = append(*seen, string(p.ToolInput))
			if strings.Contains(string(p.ToolInput), `"-`) {
				return engine.Decision{Cancel: true, Reason: "option not allowed"}, nil
			}
			return engine.Decision{}, nil
		}
	}
	amend := func(to any) engine.Handler {
		return func(context.Context, *engine.Payload) (engine.Decision, error) {
			return engine.Decision{Changes: map[string]any{engine.ChangeToolInput: to}}, nil
		}
	}
	for _, c := range []struct {
		name          string
		second        engine.Handler // the guard's second judgement, when not the guard itself
		amendment     any
		cancelled     bool
		reason        string
		guardCalls    int
		observerCalls int // a fail_open handler judges once
	}{
		{"split is denied", nil, split, true, "option not allowed (the arguments as amended by splitter)", 2, 1},
		{"same arguments are not judged again", nil, `{ "argv" : ["git","log","HEAD --output=x"] }`, false, "", 1, 1},
		{"harmless amendment passes", nil, `{"argv":["git","log","HEAD~1"]}`, false, "", 2, 1},
		{"failing on the amendment cancels", func(context.Context, *engine.Payload) (engine.Decision, error) {
			return engine.Decision{}, errors.New("boom")
		}, `{"argv":["git","log","HEAD~1"]}`, true, "handler failed (fail_closed) on the arguments as amended by splitter: boom", 2, 1},
		{"amending the amendment cancels", amend(`{"argv":["git","log"]}`), `{"argv":["git","log","HEAD~1"]}`, true,
			"amended the arguments as amended by splitter once more; arguments no fail_closed handler judged do not run", 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := engine.NewRegistry()
			r.SetLogger(discard())
			var seen []string
			first := guard(&seen)
			h := first
			if c.second != nil {
				h = func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
					if len(seen) == 0 {
						return first(ctx, p)
					}
					seen = append(seen, string(p.ToolInput))
					return c.second(ctx, p)
				}
			}
			r.On(engine.PointToolCallBefore, h, engine.HandlerOptions{Priority: 10, Label: "guard", FailClosed: true})
			var observed atomic.Int32
			r.On(engine.PointToolCallBefore, func(context.Context, *engine.Payload) (engine.Decision, error) {
				observed.Add(1)
				return engine.Decision{}, nil
			}, engine.HandlerOptions{Priority: 15, Label: "observer"})
			r.On(engine.PointToolCallBefore, amend(c.amendment), engine.HandlerOptions{Priority: 20, Label: "splitter"})
			o := r.Call(context.Background(), engine.PointToolCallBefore, &engine.Payload{ToolName: "run_command", ToolInput: []byte(orig)})
			if o.Cancelled != c.cancelled || o.Reason != c.reason || (c.cancelled && o.By != "guard") {
				t.Errorf("outcome %+v", o)
			}
			if len(seen) != c.guardCalls || seen[0] != orig {
				t.Fatalf("the guard judged %q", seen)
			}
			if len(seen) == 2 {
				canon, _ := engine.ToolInputJSON(c.amendment)
				if seen[1] != string(canon) {
					t.Errorf("the guard judged %s the second time, want the merged %s", seen[1], canon)
				}
				if !c.cancelled && fmt.Sprintf("%s", o.Changes[engine.ChangeToolInput]) != string(canon) {
					t.Errorf("the tool would run %s, not the judged %s", o.Changes[engine.ChangeToolInput], canon)
				}
			}
			if n := int(observed.Load()); n != c.observerCalls {
				t.Errorf("the fail_open observer ran %d times", n)
			}
		})
	}
}

func TestLifecycleFailurePolicy(t *testing.T) {
	t.Parallel()
	boom := func(context.Context, *engine.Payload) (engine.Decision, error) {
		return engine.Decision{}, errors.New("boom")
	}
	panics := func(context.Context, *engine.Payload) (engine.Decision, error) { panic("oops") }
	amend := func(context.Context, *engine.Payload) (engine.Decision, error) {
		return engine.Decision{Changes: map[string]any{"prompt": "amended"}}, nil
	}
	for _, c := range []struct {
		name       string
		h          engine.Handler
		failClosed bool
		cancelled  bool
		reason     string
	}{
		{"error fail_open", boom, false, false, ""},
		{"panic fail_open", panics, false, false, ""},
		{"error fail_closed", boom, true, true, "handler failed (fail_closed): boom"},
		{"panic fail_closed", panics, true, true, "handler failed (fail_closed): handler panicked: oops"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := engine.NewRegistry()
			r.SetLogger(discard())
			r.On(engine.PointPromptRenderAfter, c.h, engine.HandlerOptions{Priority: 1, Label: "bad", FailClosed: c.failClosed})
			r.On(engine.PointPromptRenderAfter, amend, engine.HandlerOptions{Priority: 2, Label: "good"})
			o := r.Call(context.Background(), engine.PointPromptRenderAfter, &engine.Payload{})
			if o.Cancelled != c.cancelled || (c.cancelled && (o.By != "bad" || o.Reason != c.reason)) {
				t.Fatalf("outcome %+v", o)
			}
			if !c.cancelled && o.Changes["prompt"] != "amended" {
				t.Errorf("fail_open must skip the failing handler and go on: %+v", o)
			}
		})
	}
}

func TestLifecycleTimeoutIsAnError(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := engine.NewRegistry()
		r.SetLogger(discard())
		r.On(engine.PointRunBefore, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
			time.Sleep(time.Hour) // ignores its context
			return engine.Decision{}, nil
		}, engine.HandlerOptions{Label: "slow", Timeout: time.Second, FailClosed: true})
		start := time.Now()
		o := r.Call(context.Background(), engine.PointRunBefore, &engine.Payload{})
		if !o.Cancelled || o.By != "slow" || !strings.Contains(o.Reason, "timed out after 1s") {
			t.Errorf("outcome %+v", o)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("the call took %s, want the 1s timeout", d)
		}
		time.Sleep(time.Hour) // let the abandoned handler finish inside the bubble
	})
}

func TestLifecycleVoidConcurrentAndIsolated(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := engine.NewRegistry()
		r.SetLogger(discard())
		var ok atomic.Int32
		started := make(chan string, 3)
		r.On(engine.PointStepAfter, func(context.Context, *engine.Payload) (engine.Decision, error) {
			started <- "panics"
			panic("observer bug")
		}, engine.HandlerOptions{Label: "panics", Priority: 1})
		r.On(engine.PointStepAfter, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
			started <- "sleeps"
			time.Sleep(time.Hour)
			return engine.Decision{}, nil
		}, engine.HandlerOptions{Label: "sleeps", Priority: 2, Timeout: 2 * time.Second})
		r.On(engine.PointStepAfter, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
			started <- "works"
			ok.Add(1)
			return engine.Decision{Cancel: true}, nil // ignored at a void point
		}, engine.HandlerOptions{Label: "works", Priority: 3})
		start := time.Now()
		o := r.Call(context.Background(), engine.PointStepAfter, &engine.Payload{})
		if o.Cancelled || ok.Load() != 1 || len(started) != 3 {
			t.Errorf("outcome %+v, works ran %d times, %d started", o, ok.Load(), len(started))
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("the call took %s: void handlers run concurrently, bounded by the 2s timeout", d)
		}
		time.Sleep(time.Hour)
	})
}

func TestLifecycleUnsubscribeAndUnregisterPlugin(t *testing.T) {
	t.Parallel()
	r := engine.NewRegistry()
	var mu sync.Mutex
	var got []string
	unsub := r.On(engine.PointRunBefore, record(&mu, &got, "builtin", engine.Decision{}), engine.HandlerOptions{Label: "builtin"})
	r.On(engine.PointRunBefore, record(&mu, &got, "p1", engine.Decision{}), engine.HandlerOptions{Label: "p1", Plugin: "audit"})
	r.On(engine.PointRunAfter, record(&mu, &got, "p2", engine.Decision{}), engine.HandlerOptions{Label: "p2", Plugin: "audit"})
	r.On(engine.PointRunBefore, record(&mu, &got, "other", engine.Decision{}), engine.HandlerOptions{Label: "other", Plugin: "other"})
	unsub()
	unsub() // safe twice
	r.UnregisterPlugin("audit")
	if n := len(r.List()); n != 1 {
		t.Fatalf("%d registrations left, want 1: %+v", n, r.List())
	}
	r.Call(context.Background(), engine.PointRunBefore, &engine.Payload{})
	r.Call(context.Background(), engine.PointRunAfter, &engine.Payload{})
	if !slices.Equal(got, []string{"other"}) {
		t.Errorf("called %v", got)
	}
	if r.Active(engine.PointRunAfter) {
		t.Error("run:after still active")
	}
}

func TestLifecyclePluginScoping(t *testing.T) {
	t.Parallel()
	r := engine.NewRegistry()
	var mu sync.Mutex
	var got []string
	r.On(engine.PointRunBefore, record(&mu, &got, "builtin", engine.Decision{}), engine.HandlerOptions{Label: "builtin"})
	r.On(engine.PointRunBefore, record(&mu, &got, "audit", engine.Decision{}), engine.HandlerOptions{Label: "audit", Plugin: "audit"})
	r.On(engine.PointRunBefore, record(&mu, &got, "guard", engine.Decision{}), engine.HandlerOptions{Label: "guard", Plugin: "guard"})
	for _, c := range []struct {
		name string
		hook *engine.Hook
		want []string
	}{
		{"absent: all", &engine.Hook{}, []string{"builtin", "audit", "guard"}},
		{"empty: built-ins only", &engine.Hook{PluginsSet: true, Plugins: []string{}}, []string{"builtin"}},
		{"a list", &engine.Hook{PluginsSet: true, Plugins: []string{"guard"}}, []string{"builtin", "guard"}},
	} {
		got = nil
		r.Call(context.Background(), engine.PointRunBefore, &engine.Payload{Hook: c.hook})
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: called %v, want %v", c.name, got, c.want)
		}
	}
}

func TestLifecycleRegistrationPanics(t *testing.T) {
	t.Parallel()
	r := engine.NewRegistry()
	nop := func(context.Context, *engine.Payload) (engine.Decision, error) { return engine.Decision{}, nil }
	for name, f := range map[string]func(){
		"empty point":   func() { r.On("", nop, engine.HandlerOptions{}) },
		"unknown point": func() { r.On("run:during", nop, engine.HandlerOptions{}) },
		"nil handler":   func() { r.On(engine.PointRunBefore, nil, engine.HandlerOptions{}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
	for _, p := range engine.Points() {
		if p.Model() == "" {
			t.Errorf("point %s has no model", p)
		}
	}
}

func TestLifecycleClaiming(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		h := newHook("deploys")
		h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*"}
		hs := newHarness(t, []*engine.Hook{h})
		defer hs.stop()
		lc := hs.eng.Lifecycle()
		lc.On(engine.PointEventClaim, record(&mu, &got, "pass", engine.Decision{}), engine.HandlerOptions{Label: "pass", Priority: 1})
		lc.On(engine.PointEventClaim, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
			mu.Lock()
			got = append(got, "dedupe")
			mu.Unlock()
			return engine.Decision{Claimed: p.Event.Data["dup"] == true, Reason: "seen before"}, nil
		}, engine.HandlerOptions{Label: "dedupe", Priority: 2})
		lc.On(engine.PointEventClaim, record(&mu, &got, "late", engine.Decision{Claimed: true}), engine.HandlerOptions{Label: "late", Priority: 3, Plugin: "x"})

		runs, err := hs.eng.Emit(context.Background(), &engine.Event{Type: "deploy.done", Data: map[string]any{"dup": true}})
		if err != nil || len(runs) != 0 {
			t.Fatalf("claimed event fired %d runs (err %v)", len(runs), err)
		}
		if !slices.Equal(got, []string{"pass", "dedupe"}) {
			t.Errorf("called %v: the claim stops the chain", got)
		}
		hs.settle()
		if n := len(hs.runs("deploys")); n != 0 {
			t.Errorf("%d runs of a claimed event", n)
		}
		got = nil
		lc.UnregisterPlugin("x")
		runs, err = hs.eng.Emit(context.Background(), &engine.Event{Type: "deploy.done", Data: map[string]any{}})
		if err != nil || len(runs) != 1 {
			t.Fatalf("unclaimed event fired %d runs (err %v)", len(runs), err)
		}
		hs.settle()
	})
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// promptLLM answers with the prompt it was sent.
type promptLLM struct{}

func (promptLLM) Complete(ctx context.Context, req *engine.LLMRequest) error {
	req.Run.Response = "got: " + req.Run.Prompt
	return nil
}

func TestLifecycleRunPoints(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var envSeen []string
		step := funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			envSeen = env.Env
			return &engine.StepResult{Output: "ok"}, nil
		})
		h := withSteps(newHook("guarded"), step, step)
		h.SkipLLM, h.Prompt = false, "hello"
		blocked := newHook("blocked")
		hs := newHarness(t, []*engine.Hook{h, blocked}, func(c *engine.Config) { c.LLM = promptLLM{} })
		defer hs.stop()
		lc := hs.eng.Lifecycle()
		var (
			mu    sync.Mutex
			calls []string
			after *engine.Run
		)
		note := func(s string) {
			mu.Lock()
			calls = append(calls, s)
			mu.Unlock()
		}
		lc.On(engine.PointRunBefore, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
			note("run:before " + p.Hook.Name)
			return engine.Decision{Cancel: p.Hook.Name == "blocked", Reason: "maintenance window"}, nil
		}, engine.HandlerOptions{Label: "window"})
		lc.On(engine.PointStepBefore, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
			note("step:before " + p.Step.Label())
			if p.Step.Index == 1 {
				return engine.Decision{Cancel: true, Reason: "not today"}, nil
			}
			return engine.Decision{Changes: map[string]any{"env": map[string]any{"EXTRA": "1"}}}, nil
		}, engine.HandlerOptions{Label: "steps"})
		lc.On(engine.PointStepAfter, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
			note("step:after " + p.Step.Label() + " " + p.StepResult.Error)
			return engine.Decision{}, nil
		}, engine.HandlerOptions{Label: "observer"})
		lc.On(engine.PointPromptRenderAfter, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
			return engine.Decision{Changes: map[string]any{"prompt": p.Prompt + " (amended)"}}, nil
		}, engine.HandlerOptions{Label: "amender"})
		lc.On(engine.PointRunAfter, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
			mu.Lock()
			after = p.Run
			mu.Unlock()
			return engine.Decision{}, nil
		}, engine.HandlerOptions{Label: "after"})

		r := hs.mustFire("guarded")
		hs.settle()
		run := hs.run(r.ID)
		if run.Status != engine.StatusCompleted || run.Prompt != "hello (amended)" || run.Response != "got: hello (amended)" {
			t.Fatalf("run %s %q %q %q", run.Status, run.Error, run.Prompt, run.Response)
		}
		if !slices.Contains(envSeen, "EXTRA=1") {
			t.Errorf("step env lacks the amendment")
		}
		if run.Steps[1].Error != "step:before: steps: not today" {
			t.Errorf("step 2 error %q", run.Steps[1].Error)
		}
		want := []string{"run:before guarded", "step:before step_0", "step:after step_0 ",
			"step:before step_1", "step:after step_1 step:before: steps: not today"}
		if !slices.Equal(calls, want) {
			t.Errorf("calls %q\nwant %q", calls, want)
		}
		if after == nil || after.ID != r.ID || after.Status != engine.StatusCompleted {
			t.Errorf("run:after saw %+v", after)
		}

		r = hs.mustFire("blocked")
		hs.settle()
		run = hs.run(r.ID)
		if run.Status != engine.StatusCancelled || run.Reason != "run:before: window: maintenance window" {
			t.Errorf("blocked run %s %q", run.Status, run.Reason)
		}
		evs := hs.eventsOf(engine.EventRunCancelled)
		if len(evs) != 1 || evs[0].Data["reason"] != "run:before: window: maintenance window" {
			t.Errorf("cancelled events %+v", evs)
		}
	})
}
