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
