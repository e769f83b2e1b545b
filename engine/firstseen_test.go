package engine_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/engine"
)

// firedSlots lists the runs' trigger, status and slot time.
func firedSlots(runs []*engine.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = strings.Join(strings.Fields(r.Trigger+" "+string(r.Status)+" "+r.Gate+" "+r.Slot.Format("15:04")), " ")
	}
	return out
}

// The slots of a hook that never fired, missed while hookd was down,
// follow on_missed as a fired hook's do: a missed record and the latest
// caught up (latest), or each caught up (all).
func TestNeverFiredHookMissedWhileDown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		latest := every(newHook("latest"), time.Hour)
		all := every(newHook("all"), time.Hour)
		all.Trigger.OnMissed = engine.MissedAll
		h := newHarness(t, []*engine.Hook{latest, all})
		defer func() { h.stop() }()
		h.advance(30 * time.Minute) // loaded at 00:00; no slot yet
		h.restart(3 * time.Hour)    // down over 01:00, 02:00, 03:00
		h.advance(time.Minute)

		if got, want := firedSlots(h.runs("latest")), []string{"catchup skipped missed 02:00", "catchup completed 03:00"}; !slices.Equal(got, want) {
			t.Errorf("latest: %q, want %q", got, want)
		}
		if runs := h.runs("latest"); len(runs) == 0 || !strings.Contains(runs[0].Reason, "missed: 2 slot(s) passed while hookd was down") {
			t.Errorf("no record saying the slots were missed: %q", firedSlots(runs))
		}
		if got, want := firedSlots(h.runs("all")), []string{"catchup completed 01:00", "catchup completed 02:00", "catchup completed 03:00"}; !slices.Equal(got, want) {
			t.Errorf("all: %q, want %q", got, want)
		}
	})
}

// A hook's slots before hookd first loaded it are none of its business:
// only those from then on are missed.
func TestNeverFiredHookNothingBeforeFirstLoad(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		old := every(newHook("old"), time.Hour)
		h := newHarness(t, []*engine.Hook{old})
		defer func() { h.stop() }()
		h.advance(2*time.Hour + 30*time.Minute)

		// Added at 02:30 (by a restart and by a reload), down from 02:40 to 05:40.
		added := every(newHook("added"), time.Hour)
		added.Trigger.OnMissed = engine.MissedAll
		reloaded := every(newHook("reloaded"), time.Hour)
		reloaded.Trigger.OnMissed = engine.MissedAll
		h.hooks = []*engine.Hook{old, added}
		h.restart(0)
		if _, err := h.eng.Reload(context.Background(), []*engine.Hook{old, added, reloaded}); err != nil {
			t.Fatal(err)
		}
		h.hooks = []*engine.Hook{old, added, reloaded}
		h.advance(10 * time.Minute)
		h.restart(3 * time.Hour)
		h.advance(time.Minute)

		want := []string{"catchup completed 03:00", "catchup completed 04:00", "catchup completed 05:00"}
		for _, name := range []string{"added", "reloaded"} {
			if got := firedSlots(h.runs(name)); !slices.Equal(got, want) {
				t.Errorf("%s: %q, want %q", name, got, want)
			}
		}
	})
}

// A daemonless command (a Manual engine) schedules nothing, so loading a
// hook there is no first load: the daemon's first start is.
func TestNeverFiredHookManualEngineIsNoFirstLoad(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hk := every(newHook("h"), time.Hour)
		hk.Trigger.OnMissed = engine.MissedAll
		h := newHarness(t, []*engine.Hook{hk}, func(c *engine.Config) { c.Manual = true })
		defer func() { h.stop() }()
		h.cfg.Manual = false
		h.restart(3*time.Hour + 30*time.Minute)
		h.advance(time.Minute)
		if got := firedSlots(h.runs("h")); len(got) != 0 {
			t.Errorf("runs %q, want none: no daemon had loaded the hook before 03:30", got)
		}
		h.advance(time.Hour)
		if got, want := firedSlots(h.runs("h")), []string{"schedule completed 04:00"}; !slices.Equal(got, want) {
			t.Errorf("runs %q, want %q", got, want)
		}
	})
}
