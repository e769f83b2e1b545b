// Package enginetest has helpers for testing code built on the engine: a
// fake clock whose time moves only when the test says so.
package enginetest

import (
	"sort"
	"sync"
	"time"

	"github.com/hookd/hookd/engine"
)

// Clock is a fake engine.Clock. Advance moves time and fires the timers
// that come due; Jump moves the wall clock without firing timers, the way
// a suspend or an NTP step looks to a real process.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*timer]struct{}
	cond   *sync.Cond
}

// NewClock returns a fake clock set to t.
func NewClock(t time.Time) *Clock {
	c := &Clock{now: t, timers: map[*timer]struct{}{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// Now returns the fake time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a fake timer that fires when the clock is advanced past
// its deadline.
func (c *Clock) NewTimer(d time.Duration) engine.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, ch: make(chan time.Time, 1)}
	t.arm(d)
	return t
}

// Advance moves the clock forward by d, firing due timers in deadline
// order, each at its own deadline.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	for {
		var due []*timer
		for t := range c.timers {
			if !t.when.After(end) {
				due = append(due, t)
			}
		}
		if len(due) == 0 {
			break
		}
		sort.Slice(due, func(i, j int) bool { return due[i].when.Before(due[j].when) })
		t := due[0]
		if t.when.After(c.now) {
			c.now = t.when
		}
		delete(c.timers, t)
		select {
		case t.ch <- c.now:
		default:
		}
	}
	c.now = end
	c.mu.Unlock()
}

// Jump sets the wall clock to t without firing any timer.
func (c *Clock) Jump(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	shift := t.Sub(c.now)
	c.now = t
	// Timers run on the monotonic clock: their remaining time is unchanged.
	for tm := range c.timers {
		tm.when = tm.when.Add(shift)
	}
}

// WaitTimers blocks until at least n timers are armed (a goroutine is
// sleeping on the clock).
func (c *Clock) WaitTimers(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.timers) < n {
		c.cond.Wait()
	}
}

// NextDeadline returns the earliest armed timer's deadline, or false.
func (c *Clock) NextDeadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var best time.Time
	for t := range c.timers {
		if best.IsZero() || t.when.Before(best) {
			best = t.when
		}
	}
	return best, !best.IsZero()
}

type timer struct {
	c    *Clock
	ch   chan time.Time
	when time.Time
}

// arm must be called with c.mu held.
func (t *timer) arm(d time.Duration) {
	t.when = t.c.now.Add(d)
	t.c.timers[t] = struct{}{}
	t.c.cond.Broadcast()
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Reset(d time.Duration) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	select { // Go 1.23 semantics: no stale value after Reset
	case <-t.ch:
	default:
	}
	t.arm(d)
}

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, armed := t.c.timers[t]
	delete(t.c.timers, t)
	select {
	case <-t.ch:
	default:
	}
	return armed
}
