// Package clocktest is the fake clock.Clock of hookd's tests: the real
// clock (virtual inside a testing/synctest bubble) whose wall clock can be
// jumped, as a suspend or an NTP step moves it, while its monotonic
// reading and its timers keep running. One fake serves every package
// that takes the engine's clock.
package clocktest

import (
	"sync/atomic"
	"time"

	"github.com/hookd/hookd/clock"
)

// Clock is the real (or bubbled) clock plus an offset of its wall clock.
// It has no wall-clock alarms (clock.System's NewAlarm). The zero
// Clock is ready to use.
type Clock struct {
	clock.System
	offset atomic.Int64
}

// Now returns the wall-clock time, moved by the jumps so far.
func (c *Clock) Now() time.Time { return time.Now().Round(0).Add(time.Duration(c.offset.Load())) }

// Jump moves the wall clock by d (back when d < 0). The monotonic
// reading (Mono) and the timers do not move.
func (c *Clock) Jump(d time.Duration) { c.offset.Add(int64(d)) }
