package engine_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestPeriodicPayload: a periodic hook's payload has agent-queue's fields
// (current_time, current_time_epoch, and last_run_time,
// last_run_time_epoch, seconds_since_last_run after a first run) on
// scheduled, catch-up and manual runs, and hookd's slot on the first two.
func TestPeriodicPayload(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var (
			mu   sync.Mutex
			seen []map[string]string
		)
		hk := every(withSteps(newHook("p"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			got := map[string]string{}
			for k, v := range env.Scope.Event {
				got[k] = engine.Stringify(v)
			}
			mu.Lock()
			seen = append(seen, got)
			mu.Unlock()
			return &engine.StepResult{Output: "ok"}, nil
		})), time.Hour)
		hk.Trigger.OnMissed = engine.MissedLatest
		h := newHarness(t, []*engine.Hook{hk})
		t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
		at := func(d time.Duration) time.Time { return t0.Add(d) }
		rfc := func(d time.Duration) string { return at(d).Format(time.RFC3339) }
		epoch := func(d time.Duration) string { return engine.Stringify(at(d).Unix()) }

		h.advance(2*time.Hour + 30*time.Minute) // scheduled runs at 01:00 and 02:00
		if _, err := h.fire("p", engine.FireOptions{Event: map[string]any{"note": "by hand", "current_time": "given"}}); err != nil {
			t.Fatal(err)
		}
		h.settle()
		h.restart(3 * time.Hour) // 03:00..05:00 missed; 05:00 is caught up at 05:30
		defer h.stop()
		h.settle()

		want := []map[string]string{
			{"trigger": "schedule", "slot": rfc(time.Hour), "current_time": rfc(time.Hour), "current_time_epoch": epoch(time.Hour)},
			{"trigger": "schedule", "slot": rfc(2 * time.Hour), "current_time": rfc(2 * time.Hour), "current_time_epoch": epoch(2 * time.Hour),
				"last_run_time": rfc(time.Hour), "last_run_time_epoch": epoch(time.Hour), "seconds_since_last_run": "3600"},
			// A field given by hand wins over the one hookd fills in.
			{"trigger": "manual", "note": "by hand", "current_time": "given", "current_time_epoch": epoch(150 * time.Minute),
				"last_run_time": rfc(2 * time.Hour), "last_run_time_epoch": epoch(2 * time.Hour), "seconds_since_last_run": "1800"},
			{"trigger": "catchup", "slot": rfc(5 * time.Hour), "current_time": rfc(330 * time.Minute), "current_time_epoch": epoch(330 * time.Minute),
				"last_run_time": rfc(150 * time.Minute), "last_run_time_epoch": epoch(150 * time.Minute), "seconds_since_last_run": "10800"},
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != len(want) {
			t.Fatalf("runs: %d payloads %v, want %d", len(seen), seen, len(want))
		}
		for i := range want {
			for k, v := range want[i] {
				if seen[i][k] != v {
					t.Errorf("run %d: %s = %q, want %q", i, k, seen[i][k], v)
				}
			}
			if len(seen[i]) != len(want[i]) {
				t.Errorf("run %d: payload %v, want exactly %v", i, seen[i], want[i])
			}
		}
	})
}
