package engine

import (
	"fmt"
	"time"
)

// missedOnce handles a one-shot (at) trigger whose time is not after now
// and whose slot was never recorded (no run, skip or catch-up holds it):
// hookd was down then, or the hook was written or changed with a time
// that had passed. Under on_missed skip it records the slot skipped
// (missed), so it never fires; otherwise it queues the slot as a catch-up
// and reports true: the hook fires once, as agent-queue fired a
// scheduled hook whose fire_at had passed. Either way the slot is
// recorded, so a restart does not fire it again.
func (s *state) missedOnce(ent *entry, now time.Time) bool {
	t := &ent.hook.Trigger
	if t.Kind != TriggerAt || t.At.IsZero() || t.At.After(now) || !ent.lastSlot.Before(t.At) {
		return false
	}
	if t.OnMissed == MissedSkip {
		s.record(ent, &Run{
			ID: NewID(), Hook: ent.hook.Name, Trigger: "catchup", Status: StatusSkipped, Gate: GateMissed, Slot: t.At,
			Reason: fmt.Sprintf("missed: the one-shot time %s passed before it fired; not fired (on_missed: skip)",
				t.At.Format(time.RFC3339)),
		})
		return false
	}
	ent.catchup = []time.Time{t.At}
	return true
}
