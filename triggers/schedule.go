package triggers

import (
	"time"

	"github.com/hookd/hookd/engine"
)

func init() {
	engine.RegisterSchedule(engine.TriggerEvery, compileInterval)
	engine.RegisterSchedule(engine.TriggerCron, compileCron)
	engine.RegisterSchedule(engine.TriggerAt, compileAt)
}

// searchLimit bounds how far ahead a schedule looks for its next slot; a
// schedule with no slot within it never fires.
const searchLimit = 5 // years

// wall returns the wall-clock reading of t as a time in UTC: the same
// year, month, day, hour, minute, second and nanosecond, without a zone.
func wall(t time.Time) time.Time {
	_, off := t.Zone()
	return t.UTC().Add(time.Duration(off) * time.Second)
}
