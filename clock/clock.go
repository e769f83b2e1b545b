// Package clock is hookd's one clock: wall-clock readings for timestamps
// and what is due, monotonic readings for durations, timers, tickers and
// wall-clock alarms. Everything that waits or measures takes a Clock; the
// daemon passes one to all, tests a clocktest.Clock.
package clock

import (
	"errors"
	"time"
)

// Clock is hookd's one source of time: the engine, and everything that
// waits or measures (the model client, notifications, MCP servers, the
// stores, steps, the cluster member), read it. The daemon passes the
// engine's clock to each; tests inject a fake one (clock/clocktest).
type Clock interface {
	// Now returns the wall-clock time (without a monotonic reading, so
	// that a suspend or a clock jump is seen): for timestamps and for
	// what is due at a wall time.
	Now() time.Time
	// Mono returns a reading of the monotonic clock, which a step of the
	// wall clock does not move: for durations (Since).
	Mono() Mono
	// NewTimer returns a timer that fires after d, counted on the
	// monotonic clock.
	NewTimer(d time.Duration) Timer
	// NewTicker returns a ticker that ticks every d, counted on the
	// monotonic clock.
	NewTicker(d time.Duration) Ticker
	// NewAlarm returns an alarm on the wall clock, or an error when the
	// clock has none: then the loop wakes every Tick to re-read the
	// clock instead.
	NewAlarm() (Alarm, error)
}

// Mono is a reading of a clock's monotonic clock. Only the difference of
// two readings of one clock means something.
type Mono struct{ t time.Time }

// MonoAt returns the reading t's monotonic clock gives (t as time.Now
// returns it, with its monotonic reading): for a Clock built on time.Now.
func MonoAt(t time.Time) Mono { return Mono{t} }

// Sub returns the duration m-u on the monotonic clock.
func (m Mono) Sub(u Mono) time.Duration { return m.t.Sub(u.t) }

// Add returns the reading d after m (before it, for a negative d).
func (m Mono) Add(d time.Duration) Mono { return Mono{m.t.Add(d)} }

// Since returns the time elapsed on c's monotonic clock since start.
func Since(c Clock, start Mono) time.Duration { return c.Mono().Sub(start) }

// Timer is the part of time.Timer the engine uses.
type Timer interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop() bool
}

// Ticker is the part of time.Ticker hookd uses.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// System is the real clock, without wall-clock alarms.
type System struct{}

// Now returns the wall-clock time without its monotonic reading.
func (System) Now() time.Time { return time.Now().Round(0) }

// Mono returns the system's monotonic reading.
func (System) Mono() Mono { return Mono{time.Now()} }

// NewTimer returns a real timer.
func (System) NewTimer(d time.Duration) Timer { return &sysTimer{time.NewTimer(d)} }

// NewTicker returns a real ticker.
func (System) NewTicker(d time.Duration) Ticker { return &sysTicker{time.NewTicker(d)} }

type sysTicker struct{ t *time.Ticker }

func (s *sysTicker) C() <-chan time.Time { return s.t.C }
func (s *sysTicker) Stop()               { s.t.Stop() }

// errNoAlarm is System's answer to NewAlarm.
var errNoAlarm = errors.New("clock: this clock has no wall-clock alarm; the loop re-reads the clock every tick")

// NewAlarm fails: a System has no wall-clock alarms.
func (System) NewAlarm() (Alarm, error) { return nil, errNoAlarm }

type sysTimer struct{ t *time.Timer }

func (s *sysTimer) C() <-chan time.Time   { return s.t.C }
func (s *sysTimer) Reset(d time.Duration) { s.t.Reset(d) }
func (s *sysTimer) Stop() bool            { return s.t.Stop() }

// Alarm wakes the loop at a wall-clock time. Unlike a Timer, which counts
// a duration on the monotonic clock, it follows the wall clock: after a
// suspend it fires at the wall time it was set for, and when the wall
// clock is stepped it wakes at once, so the loop can sleep until the
// earliest due time without waking every Tick to look at the clock.
// With one, the loop wakes otherwise only every alarmTick (for
// Config.Guard); without (NewAlarm failed), at least every Tick.
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

// Wall is the real clock with wall-clock alarms where the system
// has them (Linux: a timerfd on CLOCK_REALTIME, armed with an absolute
// expiry and TFD_TIMER_CANCEL_ON_SET). It is the engine's default clock.
// Elsewhere NewAlarm fails and the loop keeps its Tick.
type Wall struct{ System }

// NewAlarm returns an alarm on the system's wall clock.
func (Wall) NewAlarm() (Alarm, error) { return newWallAlarm() }
