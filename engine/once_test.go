package engine_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

// at gives h a one-shot trigger at t.
func at(h *engine.Hook, t time.Time, missed engine.MissedPolicy) *engine.Hook {
	h.Trigger = engine.Trigger{Kind: engine.TriggerAt, At: t, OnMissed: missed}
	return compile(h)
}

// summary lists a hook's records as "trigger status".
func summary(h *harness, hook string) []string {
	var out []string
	for _, r := range h.runs(hook) {
		out = append(out, r.Trigger+" "+string(r.Status))
	}
	return out
}

func eq(a []string, b ...string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOneShotFiresOnce: an at trigger fires at its time, once; a restart
// after it fired does not fire it again, and hookd next (FireTimes) has
// nothing left to show.
func TestOneShotFiresOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		when := time.Now().Add(2 * time.Hour)
		hk := at(newHook("once"), when, engine.MissedLatest)
		if got := engine.FireTimes(hk, time.Now(), 3); len(got) != 1 || !got[0].Equal(when) {
			t.Errorf("FireTimes before = %v, want [%s]", got, when)
		}
		h := newHarness(t, []*engine.Hook{hk})
		h.advance(3 * time.Hour)
		runs := h.runs("once")
		if len(runs) != 1 || runs[0].Trigger != "schedule" || runs[0].Status != engine.StatusCompleted || !runs[0].Slot.Equal(when) {
			t.Fatalf("runs = %v, want one scheduled run for %s", summary(h, "once"), when)
		}
		h.restart(time.Hour)
		h.advance(48 * time.Hour)
		h.restart(24 * time.Hour)
		defer h.stop()
		h.advance(time.Hour)
		if got := summary(h, "once"); !eq(got, "schedule completed") {
			t.Errorf("after restarts: %v, want the one run only", got)
		}
		if got := engine.FireTimes(hk, time.Now(), 3); len(got) != 0 {
			t.Errorf("FireTimes after = %v, want none", got)
		}
	})
}

// TestOneShotMissed: a one-shot whose time passed while hookd was down,
// or that was loaded with a time already past, fires once as a catch-up
// (on_missed latest or all) and never again; under on_missed skip it is
// recorded skipped (missed) once and never fires.
func TestOneShotMissed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		down := at(newHook("down"), now.Add(time.Hour), engine.MissedLatest)
		past := at(newHook("past"), now.Add(-time.Hour), engine.MissedAll)
		skip := at(newHook("skip"), now.Add(-time.Hour), engine.MissedSkip)
		h := newHarness(t, []*engine.Hook{down, past, skip})
		h.advance(time.Minute)
		if got := summary(h, "past"); !eq(got, "catchup completed") {
			t.Errorf("past: %v, want one catch-up run", got)
		}
		if r := h.runs("skip"); len(r) != 1 || r[0].Status != engine.StatusSkipped || r[0].Gate != engine.GateMissed ||
			r[0].Reason != "missed: the one-shot time "+now.Add(-time.Hour).Format(time.RFC3339)+" passed before it fired; not fired (on_missed: skip)" {
			t.Errorf("skip: %v %+v", summary(h, "skip"), r)
		}
		h.restart(2 * time.Hour) // down's time passes while hookd is down
		h.advance(time.Minute)
		if got := summary(h, "down"); !eq(got, "catchup completed") {
			t.Errorf("down: %v, want one catch-up run", got)
		}
		h.restart(time.Hour)
		defer h.stop()
		h.advance(time.Hour)
		for name, want := range map[string]string{"down": "catchup completed", "past": "catchup completed", "skip": "catchup skipped"} {
			if got := summary(h, name); !eq(got, want) {
				t.Errorf("%s after restart: %v, want [%s]", name, got, want)
			}
		}
	})
}

// TestOneShotReload: a one-shot added by a reload with a time already
// past fires once then; reloading it unchanged does not fire it again;
// moving its time later arms it again.
func TestOneShotReload(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		defer h.stop()
		now := time.Now()
		reload := func(hk *engine.Hook) {
			t.Helper()
			hk.Source.Version = hk.Trigger.At.String()
			if _, err := h.eng.Reload(context.Background(), []*engine.Hook{hk}); err != nil {
				t.Fatal(err)
			}
			h.settle()
		}
		reload(at(newHook("r"), now.Add(-time.Minute), engine.MissedLatest))
		h.advance(time.Minute)
		if got := summary(h, "r"); !eq(got, "catchup completed") {
			t.Fatalf("after adding: %v", got)
		}
		reload(at(newHook("r"), now.Add(-time.Minute), engine.MissedLatest))
		h.advance(time.Hour)
		if got := summary(h, "r"); !eq(got, "catchup completed") {
			t.Errorf("after reloading unchanged: %v", got)
		}
		later := time.Now().Add(time.Hour)
		reload(at(newHook("r"), later, engine.MissedLatest))
		h.advance(2 * time.Hour)
		if got := summary(h, "r"); !eq(got, "catchup completed", "schedule completed") {
			t.Errorf("after moving it later: %v", got)
		}
	})
}
