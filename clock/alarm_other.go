//go:build !linux

package clock

import "errors"

// newWallAlarm has no wall-clock timer to offer here: the loop keeps its
// Tick.
func newWallAlarm() (Alarm, error) {
	return nil, errors.New("no wall-clock alarm on this system; the loop re-reads the clock every tick")
}
