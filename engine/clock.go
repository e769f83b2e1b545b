package engine

import "time"

// Clock is the engine's source of time. Tests inject a fake one.
type Clock interface {
	// Now returns the wall-clock time (without a monotonic reading, so
	// that a suspend or a clock jump is seen).
	Now() time.Time
	// NewTimer returns a timer that fires after d.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of time.Timer the engine uses.
type Timer interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop() bool
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns the wall-clock time without its monotonic reading.
func (SystemClock) Now() time.Time { return time.Now().Round(0) }

// NewTimer returns a real timer.
func (SystemClock) NewTimer(d time.Duration) Timer { return &sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (s *sysTimer) C() <-chan time.Time   { return s.t.C }
func (s *sysTimer) Reset(d time.Duration) { s.t.Reset(d) }
func (s *sysTimer) Stop() bool            { return s.t.Stop() }

// Alarm wakes the loop at a wall-clock time. Unlike a Timer, which counts
// a duration on the monotonic clock, it follows the wall clock: after a
// suspend it fires at the wall time it was set for, and when the wall
// clock is stepped it wakes at once, so the loop can sleep until the
// earliest due time without waking every Tick to look at the clock.
type Alarm interface {
	// Set arms the alarm for wall time t, replacing the time set before;
	// a zero t disarms it.
	Set(t time.Time) error
	// C receives when the wall clock reaches the time set, or as soon as
	// the wall clock is stepped (either way) or the machine resumes.
	// Receives may be spurious; the receiver looks at the clock.
	C() <-chan struct{}
	// Close releases the alarm.
	Close() error
}

// AlarmClock is a Clock that has wall-clock alarms. With one, the loop
// sleeps until the earliest due time on an Alarm and otherwise wakes
// only every alarmTick (for Config.Guard); with a plain Clock, or when
// NewAlarm fails, it wakes at least every Tick to re-read the clock.
type AlarmClock interface {
	Clock
	NewAlarm() (Alarm, error)
}

// WallClock is the real clock with wall-clock alarms where the system
// has them (Linux: a timerfd on CLOCK_REALTIME, armed with an absolute
// expiry and TFD_TIMER_CANCEL_ON_SET). It is the engine's default clock.
// Elsewhere NewAlarm fails and the loop keeps its Tick.
type WallClock struct{ SystemClock }

// NewAlarm returns an alarm on the system's wall clock.
func (WallClock) NewAlarm() (Alarm, error) { return newWallAlarm() }
