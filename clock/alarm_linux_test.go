//go:build linux

package clock_test

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/hookd/hookd/clock"
	"golang.org/x/sys/unix"
)

// wallAlarm returns the real wall-clock alarm (a timerfd), or skips.
func wallAlarm(t *testing.T) clock.Alarm {
	t.Helper()
	a, err := clock.Wall{}.NewAlarm()
	if err != nil {
		t.Skipf("no timerfd here (the engine falls back to its tick): %v", err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// waitAlarm waits for the alarm, failing after a generous deadline.
func waitAlarm(t *testing.T, a clock.Alarm, what string) {
	t.Helper()
	select {
	case <-a.C():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: the alarm did not fire within 30s", what)
	}
}

// The timerfd fires at the wall time it is set for, never before it;
// setting it again replaces the earlier time, and a zero time disarms it.
func TestWallAlarmTimerfd(t *testing.T) {
	a := wallAlarm(t)

	at := time.Now().Add(20 * time.Millisecond)
	if err := a.Set(at); err != nil {
		t.Fatal(err)
	}
	waitAlarm(t, a, "armed 20ms ahead")
	if now := time.Now(); now.Before(at) {
		t.Errorf("fired at %v, before the time set %v", now, at)
	}

	// Re-arming replaces: an hour away, then 10ms away.
	if err := a.Set(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := a.Set(time.Now().Add(10 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	waitAlarm(t, a, "re-armed 10ms ahead")

	// A time already past fires at once.
	if err := a.Set(time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	waitAlarm(t, a, "armed in the past")

	// Disarmed, it stays quiet past the time it was set for. On a machine
	// too busy to disarm it before that time, a fresh alarm tries again
	// with twice the lead.
	for lead := 300 * time.Millisecond; ; lead *= 2 {
		d := wallAlarm(t)
		at = time.Now().Add(lead)
		if err := d.Set(at); err != nil {
			t.Fatal(err)
		}
		if err := d.Set(time.Time{}); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(at) {
			if lead > 20*time.Second {
				t.Fatalf("the machine never disarmed an alarm within %v of arming it", lead)
			}
			continue
		}
		select {
		case <-d.C():
			t.Error("a disarmed alarm fired")
		case <-time.After(time.Until(at) + 300*time.Millisecond):
		}
		return
	}
}

// Closing the alarm ends its reading goroutine.
func TestWallAlarmCloseEndsReader(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 50 {
		a, err := clock.Wall{}.NewAlarm()
		if err != nil {
			t.Skipf("no timerfd here: %v", err)
		}
		if err := a.Set(time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		a.Close()
	}
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > before+5 {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after closing 50 alarms, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A step of the wall clock wakes an alarm set an hour away at once
// (TFD_TIMER_CANCEL_ON_SET). The test sets CLOCK_REALTIME to the time it
// reads (a step of microseconds, which still notifies every cancel-on-set
// timer on the machine), so it runs only when HOOKD_TEST_SETTIME=1 and the
// process may set the clock (CAP_SYS_TIME).
func TestWallAlarmClockStep(t *testing.T) {
	if os.Getenv("HOOKD_TEST_SETTIME") != "1" {
		t.Skip("sets the system clock (to its own time); run with HOOKD_TEST_SETTIME=1 where permitted, e.g. as root in a throwaway VM")
	}
	a := wallAlarm(t)
	if err := a.Set(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &ts); err != nil {
		t.Fatal(err)
	}
	if err := unix.ClockSettime(unix.CLOCK_REALTIME, &ts); err != nil {
		t.Skipf("may not set the clock here: %v", err)
	}
	waitAlarm(t, a, "after a clock step, armed an hour ahead")
}
