package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

func TestConditionEval(t *testing.T) {
	t.Parallel()
	zero, two := 0, 2
	scope := &engine.Scope{Hook: "h", Trigger: "event",
		Event: map[string]any{"env": "prod", "service": "api", "n": float64(3), "tags": []any{"a", "b"}},
		Steps: []*engine.StepResult{
			{Index: 0, Name: "tests", Type: "shell", Output: "ok\n", ExitCode: &zero, Fields: map[string]any{"stdout": "ok\n"}},
			{Index: 1, Name: "disk", Type: "shell", ExitCode: &two, Fields: map[string]any{"used_pct": 91}},
			// Numbers as real steps give them: text a condition converts.
			{Index: 2, Name: "check", Type: "http", Output: `{"used_pct": 42}`, StatusCode: 200, Fields: map[string]any{"body": `{"used_pct": 42}`}},
			{Index: 3, Name: "df", Type: "shell", Output: "87\n", ExitCode: &zero, Fields: map[string]any{"stdout": "87\n"}},
		},
		StepNames: map[string]int{"tests": 0, "disk": 1, "check": 2, "df": 3},
	}
	steps := []*engine.StepDef{{Index: 0, Name: "tests", Type: "shell"}, {Index: 1, Name: "disk", Type: "shell"},
		{Index: 2, Name: "check", Type: "http"}, {Index: 3, Name: "df", Type: "shell"}}
	for _, c := range []struct {
		src  string
		want bool
	}{
		{`steps.tests.exit_code == 0`, true},
		{`step_1.exit_code == 0`, false},
		{`steps.disk.used_pct < 80`, false},
		{`steps.disk.used_pct >= 90 && steps.tests.output == "ok\n"`, true},
		{`event.env == "prod" && event.service in ["api", "web"]`, true},
		{`event.env == "staging" || event.n > 2`, true},
		{`event.missing == "x"`, false},
		{`"b" in event.tags`, true},
		{`hook == "h" && trigger == "event"`, true},
		{`trim(steps.tests.output) == "ok"`, true},
		// docs/hooks.md's forms for a number in a step's output.
		{`fromJSON(steps.check.body).used_pct < 80`, true},
		{`int(trim(steps.df.stdout)) < 80`, false},
		{`float(trim(steps.df.stdout)) >= 86.5`, true},
	} {
		cond, err := engine.CompileCondition(c.src, steps, len(steps))
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		got, err := cond.Eval(scope)
		if err != nil || got != c.want {
			t.Errorf("%s = %v (%v), want %v", c.src, got, err, c.want)
		}
	}
	// A value missing at run time compared with < is an error, not true.
	cond, err := engine.CompileCondition(`event.missing < 5`, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cond.Eval(scope); err == nil || got {
		t.Errorf("nil < 5: %v %v", got, err)
	}
}

// TestConditionCost: a condition's size is bounded at load, and the VM's
// memory budget stops one that would build a huge value at run time.
func TestConditionCost(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("event.a == 1 || ", 300) + "true"
	if _, err := engine.CompileCondition(long, nil, 0); err == nil {
		t.Errorf("a condition of %d nodes compiled", 300*3)
	}
	if _, err := engine.CompileCondition(strings.Repeat("x", engine.MaxCondLen+1), nil, 0); err == nil {
		t.Error("an over-long condition compiled")
	}
	if _, err := engine.CompileCondition(`len(repeat("x", 1000000000)) > 0`, nil, 0); err == nil {
		t.Error("repeat is available")
	}
	cond, err := engine.CompileCondition(`len(map(1..100000000, # * 2)) > 0`, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cond.Eval(&engine.Scope{}); err == nil || !strings.Contains(err.Error(), "memory budget") {
		t.Errorf("a huge range evaluated: %v", err)
	}
}

// TestStepIfAndSkipCondition: a step whose if: is false does not run and
// is recorded skipped; a skip_llm_if condition over an earlier step's
// exit code short-circuits the model; where: as a condition selects the
// events that fire a hook.
func TestStepIfAndSkipCondition(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ran := 0
		count := funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			ran++
			code := 0
			return &engine.StepResult{Output: "x", ExitCode: &code}, nil
		})
		h := withSteps(newHook("cond"), count, count)
		h.Steps[0].Name, h.Steps[1].Name = "first", "second"
		h.SkipLLM, h.Prompt = false, "explain {{steps.first.output}}"
		var err error
		if h.Steps[1].If, err = engine.CompileCondition(`event.deep == true`, h.Steps, 1); err != nil {
			t.Fatal(err)
		}
		if h.Steps[0].Skip.Cond, err = engine.CompileCondition(`steps.first.exit_code == 0`, h.Steps, 1); err != nil {
			t.Fatal(err)
		}
		ev := newHook("ev")
		ev.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*"}
		if ev.Trigger.WhereIf, err = engine.CompileCondition(`event.env == "prod" && event.service in ["api", "web"]`, nil, 0); err != nil {
			t.Fatal(err)
		}
		hs := newHarness(t, []*engine.Hook{h, ev})
		defer hs.stop()

		run := hs.mustFire("cond")
		hs.settle()
		r := hs.run(run.ID)
		if r.Status != engine.StatusCompleted || r.Cause != engine.CauseShortCircuit || ran != 1 ||
			!r.Steps[1].Skipped || r.Steps[0].Skipped || !strings.Contains(r.Reason, "steps.first.exit_code == 0 holds") {
			t.Fatalf("run: %s %s %q, %d step runs, skipped %v/%v", r.Status, r.Cause, r.Reason, ran, r.Steps[0].Skipped, r.Steps[1].Skipped)
		}
		if _, err := hs.fire("cond", engine.FireOptions{Event: map[string]any{"deep": true}, Force: true}); err != nil {
			t.Fatal(err)
		}
		hs.settle()
		if ran != 3 {
			t.Errorf("if: true: %d step runs, want 3", ran)
		}

		for _, data := range []map[string]any{
			{"env": "prod", "service": "api"}, {"env": "prod", "service": "db"}, {"env": "dev", "service": "web"}, {"service": "web"},
		} {
			if _, err := hs.eng.Emit(context.Background(), &engine.Event{Type: "deploy.done", Data: data}); err != nil {
				t.Fatal(err)
			}
		}
		hs.settle()
		if runs := hs.runs("ev"); len(runs) != 1 {
			t.Errorf("where: condition fired %d runs, want 1", len(runs))
		}
	})
}

// TestConditionNestedIteration: a condition that iterates the event
// inside another iteration over it costs N×N steps for N items (one
// where: over a 4 KB event of 1000 items held the engine's loop for 43 s)
// and is refused at load, pipe form and let included; iterating an
// element's own items stays linear in the event and is allowed, and is
// evaluated on a hostile event of many items.
func TestConditionNestedIteration(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		`all(event.a, {all(event.a, {# == 1})})`,
		`all(event.a, {all(event.a, {all(event.a, {# == 1})})})`,
		`event.a | any(event.a | filter(# > 0) | len() > 0)`,
		`any(event.commits, {any(.files, {count(event.commits, true) > 1})})`,
		`all(event.a, {one(event.a, {# == 1})})`,
		`len(map(event.a, filter(1..1000, # > 0))) > 0`,
	} {
		_, err := engine.CompileCondition(src, nil, 0)
		if err == nil || !strings.Contains(err.Error(), "square of the event's size") {
			t.Errorf("%s: %v", src, err)
		}
	}
	cond, err := engine.CompileCondition(`any(event.commits, {any(.files, {hasPrefix(#, "src/")})})`, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	commits := make([]any, 20000)
	for i := range commits {
		commits[i] = map[string]any{"files": []any{"doc/a", "doc/b"}}
	}
	commits[len(commits)-1] = map[string]any{"files": []any{"doc/c", "src/x.go"}}
	ok, err := cond.Eval(&engine.Scope{Event: map[string]any{"commits": commits}})
	if err != nil || !ok {
		t.Errorf("nested over the element's own items: %v %v", ok, err)
	}
}

// TestConditionOutsideWork: inside a predicate, work on a value from
// outside the element runs once per item: `any(event.a, {# in event.a})`
// cost N×N (3.7 s for 20,000 items on the engine's loop), a regular
// expression over a 400 KB event string 30 ms an item. Such a condition is
// refused at load (len() too: a string's counts its runes); comparing an
// outside value, and any work on the element stay allowed, and run on a
// large event.
func TestConditionOutsideWork(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		`any(event.a, {(# + 0.5) in event.a})`,
		`any(event.a, {event.s matches "x[0-9]+y"})`,
		`any(event.a, {# contains event.s})`,
		`all(event.a, {lower(event.s) == #})`,
		`any(event.a, {(event.s + "x") == #})`,
		`any(event.a, {toJSON(event) contains "x"})`,
		`filter(event.a, {indexOf(event.s, #) > 0}) == []`,
		`any(event.a, {# not in event.a})`,
		`count(event.a, {len(1..event.n) > 0}) > 0`,
		`event.a | any(event.s startsWith #)`,
		`all(event.a, {len(.name) < len(event.s)})`,
	} {
		_, err := engine.CompileCondition(src, nil, 0)
		if err == nil || !strings.Contains(err.Error(), "works on a value from outside its element") {
			t.Errorf("%s: %v", src, err)
		}
	}
	// The large event: 5,000 items by default, 50,000 under
	// HOOKD_TEST_LONG=1; the regular expression matches the last ten.
	items := make([]any, testtool.Count(5000, 50000))
	for i := range items {
		items[i] = map[string]any{"name": fmt.Sprintf("n%d", i), "author": "bob"}
	}
	ev := map[string]any{"a": items, "pusher": "bob", "s": strings.Repeat("x1", 200000), "m": map[string]any{"bob": 1}}
	for _, src := range []string{
		`any(event.a, {.author == event.pusher})`,
		`all(event.a, {len(.name) < 10})`,
		fmt.Sprintf(`any(event.a, {.name matches "^n%d[0-9]$"})`, len(items)/10-1),
		`any(event.a, {event.m[.author] == 1})`,
		`event.s matches "x[0-9]+y" || any(event.a, {.name == "n1"})`,
	} {
		c, err := engine.CompileCondition(src, nil, 0)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if ok, err := c.Eval(&engine.Scope{Event: ev}); err != nil || !ok {
			t.Errorf("%s: %v %v", src, ok, err)
		}
	}
}

// TestConditionNoSelfDoubling: let and reduce build a value from itself,
// doubling it at each step past the VM's memory budget (which counts
// elements, not bytes): 16 lets made 64 MB of a 1 KB event in the built
// daemon's where:. Both are load errors.
func TestConditionNoSelfDoubling(t *testing.T) {
	t.Parallel()
	lets := "let a = event.s + event.s;"
	for c := 'b'; c <= 'z'; c++ {
		lets += fmt.Sprintf(" let %c = %c + %c;", c, c-1, c-1)
	}
	for _, src := range []string{
		lets + " len(z) > 0",
		`len(reduce(event.a, #acc + #acc, event.s)) > 0`,
	} {
		_, err := engine.CompileCondition(src, nil, 0)
		if err == nil || !strings.Contains(err.Error(), "is not available in a condition") {
			t.Errorf("%.60s...: %v", src, err)
		}
	}
}

// TestConditionPatternFromData performs a regular-expression attack on a
// condition that matches against a pattern the event gives: RE2 runs in
// the pattern's length times the text's, and 50 KB of each held the
// engine loop 20 s (a where: runs there). The pattern of matches must be
// one quoted string written in the hook: anything else is a load error.
// Against a written pattern, the same event is evaluated at once.
func TestConditionPatternFromData(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		`event.a matches event.b`,
		`event.a matches ("^" + event.b)`,
		`not (event.a matches event.b)`,
		`any(event.list, {.text matches .pattern})`,
		`event.a matches lower(event.b)`,
	} {
		_, err := engine.CompileCondition(src, nil, 0)
		if err == nil || !strings.Contains(err.Error(), "the pattern of matches must be written in the hook") {
			t.Errorf("%s: %v", src, err)
		}
	}
	ev := map[string]any{"a": strings.Repeat("ab", 25000), "b": strings.Repeat("(a|b)?", 8000) + "c"}
	c, err := engine.CompileCondition(`event.a matches "^(ab)+$" && event.b matches "c$"`, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Eval(&engine.Scope{Event: ev}); err != nil || !ok {
		t.Errorf("a written pattern: %v %v", ok, err)
	}
}

// TestConditionErrorHints: the two mistakes people make most with
// conditions are told with the fix: = for ==, and a step's output (text)
// compared with a number.
func TestConditionErrorHints(t *testing.T) {
	t.Parallel()
	zero := 0
	steps := []*engine.StepDef{{Index: 0, Name: "df", Type: "shell"}}
	if _, err := engine.CompileCondition(`steps.df.exit_code = 0`, steps, 1); err == nil || !strings.Contains(err.Error(), "compare with ==") {
		t.Errorf("= for ==: %v", err)
	}
	cond, err := engine.CompileCondition(`steps.df.stdout > 80`, steps, 1)
	if err != nil {
		t.Fatal(err)
	}
	scope := &engine.Scope{Steps: []*engine.StepResult{{Index: 0, Name: "df", Type: "shell", Output: "87\n", ExitCode: &zero,
		Fields: map[string]any{"stdout": "87\n"}}}, StepNames: map[string]int{"df": 0}}
	if _, err := cond.Eval(scope); err == nil || !strings.Contains(err.Error(), "converted with int(trim(steps.NAME.stdout))") {
		t.Errorf("text compared with a number: %v", err)
	}
}
