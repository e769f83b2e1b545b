package engine_test

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/hookd/hookd/engine"
)

// goroutineID is the id of the calling goroutine, from its stack header
// ("goroutine 42 [running]:").
func goroutineID(t *testing.T) int {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, err := strconv.Atoi(string(b[:bytes.IndexByte(b, ' ')]))
	if err != nil {
		t.Errorf("goroutine id in %q: %v", buf[:], err)
	}
	return id
}

// TestRunGoroutineIsReused: a run is executed by the goroutine that
// executed the one before when it waits for work (its stack is grown
// already), and that goroutine ends with the engine (the bubble would
// report it blocked otherwise).
func TestRunGoroutineIsReused(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		seen := map[int]int{}
		step := funcStep(func(context.Context, *engine.StepEnv) (*engine.StepResult, error) {
			seen[goroutineID(t)]++ // runs one at a time: each is waited for
			return &engine.StepResult{Output: "ok"}, nil
		})
		h := newHarness(t, []*engine.Hook{withSteps(newHook("h"), step)})
		defer h.stop()
		const runs = 12
		for range runs {
			r := h.mustFire("h")
			final, err := h.eng.Wait(context.Background(), r.ID)
			if err != nil || final.Status != engine.StatusCompleted {
				t.Fatalf("run %s: %v %+v", r.ID, err, final)
			}
			h.settle() // its goroutine waits for work again
		}
		if len(seen) != 1 {
			t.Errorf("%d runs ran on %d goroutines (%v), want one reused", runs, len(seen), seen)
		}
	})
}

// TestRunGoroutineSurvivesPanics: a step that panics on the run goroutine
// kept for the next run fails its own run and nothing else: every run
// ends, on the same goroutine, and one that follows a panic sees its own
// run id and a context of its own, not the last run's.
func TestRunGoroutineSurvivesPanics(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		seen := map[int]int{}
		var i int
		var ids []string
		step := funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			seen[goroutineID(t)]++
			ids = append(ids, env.RunID)
			if ctx.Err() != nil {
				t.Errorf("run %s starts with its context done: %v", env.RunID, ctx.Err())
			}
			i++
			if i%2 == 1 {
				panic("step boom")
			}
			return &engine.StepResult{Output: "ok"}, nil
		})
		hk := withSteps(newHook("h"), step)
		hk.Steps[0].Required = true
		h := newHarness(t, []*engine.Hook{hk})
		defer h.stop()
		const runs = 8
		for n := range runs {
			r := h.mustFire("h")
			final, err := h.eng.Wait(context.Background(), r.ID)
			want := engine.StatusCompleted
			if n%2 == 0 {
				want = engine.StatusFailed
			}
			if err != nil || final.Status != want {
				t.Fatalf("run %d (%s): %v %s %q; want %s", n, r.ID, err, final.Status, final.Error, want)
			}
			if got := ids[len(ids)-1]; got != r.ID {
				t.Errorf("run %s's step saw run id %s", r.ID, got)
			}
			h.settle()
		}
		if len(seen) != 1 {
			t.Errorf("%d runs, half of them panicking, ran on %d goroutines (%v), want one reused", runs, len(seen), seen)
		}
	})
}
