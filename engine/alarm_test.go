package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/clock/clocktest"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

// alarmClock is the harness's clocktest.Clock with wall-clock alarms that
// behave as the Linux timerfd does: an alarm fires when the (jumped)
// wall clock reaches the time it was set for, and at once when the wall
// clock jumps. It counts the Resets of its timers: the loop resets its
// one timer each time it wakes.
type alarmClock struct {
	*clocktest.Clock
	mu     sync.Mutex
	alarms []*fakeAlarm
	resets atomic.Int64
}

func (c *alarmClock) NewTimer(d time.Duration) clock.Timer {
	return &countingTimer{Timer: c.Clock.NewTimer(d), n: &c.resets}
}

// withAlarms gives the harness's engine an alarmClock on its clock.
func withAlarms(ac **alarmClock) func(*engine.Config) {
	return func(c *engine.Config) {
		*ac = &alarmClock{Clock: c.Clock.(*clocktest.Clock)}
		c.Clock = *ac
	}
}

func (c *alarmClock) NewAlarm() (clock.Alarm, error) {
	a := &fakeAlarm{clock: c, c: make(chan struct{}, 1)}
	c.mu.Lock()
	c.alarms = append(c.alarms, a)
	c.mu.Unlock()
	return a, nil
}

// Jump moves the wall clock and wakes every alarm, as a clock step or a
// resume cancels a timerfd armed with TFD_TIMER_CANCEL_ON_SET.
func (c *alarmClock) Jump(d time.Duration) {
	c.Clock.Jump(d)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.alarms {
		a.signal()
	}
}

type fakeAlarm struct {
	clock *alarmClock
	mu    sync.Mutex
	t     *time.Timer
	c     chan struct{}
}

func (a *fakeAlarm) Set(at time.Time) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.t != nil {
		a.t.Stop()
		a.t = nil
	}
	if !at.IsZero() {
		a.t = time.AfterFunc(max(at.Sub(a.clock.Now()), 0), a.signal)
	}
	return nil
}

func (a *fakeAlarm) signal() {
	select {
	case a.c <- struct{}{}:
	default:
	}
}

func (a *fakeAlarm) C() <-chan struct{} { return a.c }

func (a *fakeAlarm) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.t != nil {
		a.t.Stop()
	}
	return nil
}

// With a wall-clock alarm, an engine whose 10,000 cron hooks are 5 to 7 hours away
// sleeps until the guard's alarmTick instead of waking every tick: at
// most one wakeup in 30 s (0.033/s; the target is 0.1/s), against one a
// second on the tick. The default run loads 1,000 such hooks (every
// minute of the hour still has hooks due at it), HOOKD_TEST_LONG=1 the
// 10,000.
func TestAlarmIdleEngineSleeps(t *testing.T) {
	t.Parallel()
	hooks := testtool.Count(1_000, 10_000)
	synctest.Test(t, func(t *testing.T) {
		var ac *alarmClock
		var hs []*engine.Hook
		now := time.Now().UTC()
		hour := now.Add(6 * time.Hour).Hour()
		for i := range hooks {
			h := newHook(fmt.Sprintf("far-%05d", i))
			h.Trigger = engine.Trigger{Kind: engine.TriggerCron, Cron: fmt.Sprintf("%d %d * * *", i%60, hour), Timezone: "UTC"}
			hs = append(hs, compile(h))
			if next := engine.FireTimes(h, now, 1)[0]; next.Sub(now) < 2*time.Hour {
				t.Fatalf("hook %s is due at %s, within 2 hours", h.Name, next)
			}
		}
		h := newHarness(t, hs, withAlarms(&ac))
		defer h.stop()
		h.settle()
		const window = time.Hour
		before := ac.resets.Load()
		h.advance(window)
		wakeups := ac.resets.Load() - before
		rate := float64(wakeups) / window.Seconds()
		t.Logf("idle engine with %d hooks hours away: %d wakeups in %v of virtual time, %.3f/s", hooks, wakeups, window, rate)
		if max := int64(window/(30*time.Second)) + 2; wakeups > max {
			t.Errorf("%d wakeups in %v, want at most %d (one each 30s)", wakeups, window, max)
		}
		if runs, err := h.db.ListRuns(t.Context(), engine.RunFilter{Limit: 1}); err != nil || len(runs) != 0 {
			t.Errorf("a hook hours away ran within the hour: %d runs, %v", len(runs), err)
		}
	})
}

// A due hook still fires at its time with only the alarm to wake the
// loop (the tick is an hour).
func TestAlarmFiresOnTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var ac *alarmClock
		h := newHarness(t, []*engine.Hook{every(newHook("m"), 10*time.Minute)},
			withAlarms(&ac), func(c *engine.Config) { c.Tick = time.Hour })
		defer h.stop()
		h.advance(10*time.Minute + time.Millisecond)
		runs := h.runs("m")
		if len(runs) != 1 || runs[0].Status != engine.StatusCompleted {
			t.Fatalf("after 10 minutes: %d runs, want 1 completed: %+v", len(runs), runs)
		}
		if late := runs[0].StartedAt.Sub(runs[0].Slot); late < 0 || late > time.Millisecond {
			t.Errorf("run started %v after its slot, want at it", late)
		}
	})
}

// A forward jump of the wall clock (a resume, an NTP step) is noticed at
// once, not at the next tick: the missed slots are recorded and the
// latest fires within a millisecond of the jump. A backward jump fires
// no slot twice.
func TestAlarmNoticesClockJumpAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var ac *alarmClock
		h := newHarness(t, []*engine.Hook{every(newHook("m"), time.Minute)}, withAlarms(&ac))
		defer h.stop()
		h.advance(90 * time.Second) // 00:01 fires
		ac.Jump(time.Hour)
		h.advance(time.Millisecond)
		runs := h.runs("m")
		var ran, missed int
		for _, r := range runs {
			switch {
			case r.Status == engine.StatusCompleted:
				ran++
			case strings.HasPrefix(r.Reason, "missed: 59 slot(s)"):
				missed++
			}
		}
		if ran != 2 || missed != 1 || len(runs) != 3 {
			t.Errorf("1ms after the jump: %d runs, %d completed, %d missed records; want 3, 2, 1", len(runs), ran, missed)
		}
		ac.Jump(-30 * time.Minute)
		h.advance(2 * time.Minute)
		slots := map[time.Time]int{}
		for _, r := range h.runs("m") {
			if !r.Slot.IsZero() {
				slots[r.Slot]++
			}
		}
		for s, n := range slots {
			if n > 1 {
				t.Errorf("slot %v fired %d times", s, n)
			}
		}
	})
}

// Sleeping on the alarm, the loop does not wake every tick to run the
// guard; a message that would trigger something after a long sleep finds
// the guard run first, so a failed guard lets nothing through.
func TestAlarmGuardRunsBeforeAMessage(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var ac *alarmClock
		var gone atomic.Bool
		hk := newHook("deploy")
		hk.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*"}
		h := newHarness(t, []*engine.Hook{hk}, withAlarms(&ac), func(c *engine.Config) {
			c.Guard = func() error {
				if gone.Load() {
					return errors.New("the database was removed")
				}
				return nil
			}
		})
		defer h.stop()
		h.advance(10 * time.Second) // asleep: no wakeup, no guard
		gone.Store(true)
		runs, err := h.eng.Emit(context.Background(), &engine.Event{Type: "deploy.finished"})
		if len(runs) != 0 || !errors.Is(err, engine.ErrStopped) {
			t.Errorf("emit after the guard failed: %d runs, %v; want none, ErrStopped", len(runs), err)
		}
		select {
		case err := <-h.eng.Failed():
			if err == nil {
				t.Error("Failed: nil error")
			}
		default:
			t.Error("the guard's failure is not reported on Failed")
		}
		h.settle()
		if n := len(h.runs("deploy")); n != 0 {
			t.Errorf("%d runs of deploy after the guard failed, want 0", n)
		}
	})
}
