package engine_test

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/engine"
)

// lateClock is a clock whose timers fire a few milliseconds late, by a
// different amount each time, as a loaded machine's do: the loop wakes
// after a slot's due time, never exactly on it.
type lateClock struct {
	clock.Clock
	n atomic.Int64
}

func (c *lateClock) lag() time.Duration { return time.Duration(1+c.n.Add(1)%7) * time.Millisecond }

func (c *lateClock) NewTimer(d time.Duration) clock.Timer {
	return &lateTimer{Timer: c.Clock.NewTimer(d + c.lag()), c: c}
}

type lateTimer struct {
	clock.Timer
	c *lateClock
}

func (t *lateTimer) Reset(d time.Duration) { t.Timer.Reset(d + t.c.lag()) }

// records lists hook's runs as "status gate" (the gate empty for a run).
func records(runs []*engine.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = strings.TrimSpace(string(r.Status) + " " + r.Gate)
	}
	return out
}

// allCompleted fails t unless every run of hook completed, naming the
// refused ones.
func allCompleted(t *testing.T, h *harness, hook string, want int) {
	t.Helper()
	runs := h.runs(hook)
	for _, r := range runs {
		if r.Status != engine.StatusCompleted {
			t.Errorf("slot %s: %s %s (%s)", r.Slot.Format(time.TimeOnly), r.Status, r.Gate, r.Reason)
		}
	}
	if len(runs) != want {
		t.Errorf("%d records, want %d: %q", len(runs), want, records(runs))
	}
}

// A cooldown equal to the interval (agent-queue's defaults) refuses no
// slot: the gate compares slots, not the starts, which the loop makes a
// few milliseconds after each slot by a different amount each time.
func TestCooldownEqualToIntervalRefusesNoSlot(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hk := every(newHook("tick"), 2*time.Second)
		hk.Cooldown = 2 * time.Second
		h := newHarness(t, []*engine.Hook{hk}, func(c *engine.Config) { c.Clock = &lateClock{Clock: c.Clock} })
		defer h.stop()
		h.advance(30*time.Second + time.Second/2)
		allCompleted(t, h, "tick", 15)
	})
}

// Jitter cannot shorten the gap the cooldown judges: a slot that fires
// early in its jitter window after one that fired late still runs.
func TestCooldownIgnoresJitter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hk := every(newHook("jittery"), time.Hour)
		hk.Trigger.Jitter = 50 * time.Minute
		hk.Cooldown = time.Hour
		h := newHarness(t, []*engine.Hook{hk})
		defer h.stop()
		h.advance(12*time.Hour + 55*time.Minute)
		allCompleted(t, h, "jittery", 12)
	})
}

// The slot of the latest run is kept across a restart: the first slot
// after one is judged on slots too.
func TestCooldownSlotSurvivesRestart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hk := every(newHook("jittery"), time.Hour)
		hk.Trigger.Jitter = 50 * time.Minute
		hk.Cooldown = time.Hour
		h := newHarness(t, []*engine.Hook{hk})
		defer func() { h.stop() }()
		// Restart at hh:55 each hour, after the slot's jittered fire.
		h.advance(55 * time.Minute)
		for range 12 {
			h.advance(time.Hour)
			h.restart(0)
		}
		allCompleted(t, h, "jittery", 12)
	})
}

// A slot after a manual fire is judged from the fire's time; a manual
// fire after a slot's run, from that run's start.
func TestCooldownAfterManualFire(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hk := every(newHook("hourly"), time.Hour)
		hk.Cooldown = 90 * time.Minute
		h := newHarness(t, []*engine.Hook{hk}, func(c *engine.Config) { c.Clock = &lateClock{Clock: c.Clock} })
		defer h.stop()
		h.advance(30 * time.Minute)
		h.mustFire("hourly")                            // 00:30
		h.advance(90*time.Minute + 10*time.Millisecond) // 01:00 refused (1h left); 02:00 is 90m after the fire: runs
		h.advance(50 * time.Minute)                     // 02:50: 50m after the 02:00 run started
		_, err := h.fire("hourly", engine.FireOptions{})
		if gateOf(err) != engine.GateCooldown {
			t.Errorf("manual fire 50m after a start, cooldown 90m: %v", err)
		}
		h.settle()
		got := records(h.runs("hourly"))
		want := []string{"completed", "skipped cooldown", "completed", "skipped cooldown"}
		if !slices.Equal(got, want) {
			t.Errorf("records %q, want %q", got, want)
		}
		if r := h.runs("hourly")[1]; !strings.Contains(r.Reason, "cooldown: 1h0m0s left") {
			t.Errorf("01:00 refused with %q, want 1h left (from the fire at 00:30)", r.Reason)
		}
	})
}

// on_missed: all catches up every missed slot, however long the
// cooldown: the catch-ups pass it.
func TestCatchupAllPassesCooldown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hk := every(newHook("all"), time.Hour)
		hk.Trigger.OnMissed = engine.MissedAll
		hk.Cooldown = 3 * time.Hour
		h := newHarness(t, []*engine.Hook{hk})
		defer func() { h.stop() }()
		h.advance(time.Hour + time.Minute) // the 01:00 slot runs
		h.restart(4 * time.Hour)           // down over 02:00 .. 05:00
		h.advance(time.Minute)
		got := records(h.runs("all"))
		want := slices.Repeat([]string{"completed"}, 5)
		if !slices.Equal(got, want) {
			t.Errorf("records %q, want %q", got, want)
		}
		for i, r := range h.runs("all")[1:] {
			if want := time.Date(2000, 1, 1, 2+i, 0, 0, 0, time.UTC); r.Trigger != "catchup" || !r.Slot.Equal(want) {
				t.Errorf("run %d: %s slot %s, want catchup of %s", i+1, r.Trigger, r.Slot, want)
			}
		}
		// The cooldown holds again for the next slot, judged from the
		// latest slot caught up: 06:00 is 1h after 05:00.
		h.advance(time.Hour)
		if r := h.runs("all")[5]; r.Gate != engine.GateCooldown || !r.Slot.Equal(time.Date(2000, 1, 1, 6, 0, 0, 0, time.UTC)) {
			t.Errorf("06:00: %s %s slot %s, want skipped by the cooldown", r.Status, r.Gate, r.Slot)
		}
	})
}
