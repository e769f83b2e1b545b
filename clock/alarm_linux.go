//go:build linux

package clock

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// timerfdAlarm is an Alarm on a timerfd of CLOCK_REALTIME. Set arms it
// with an absolute expiry (TFD_TIMER_ABSTIME), so that it fires at the
// wall time whatever the wall clock did meanwhile (a suspend included),
// and with TFD_TIMER_CANCEL_ON_SET, so that a step of the wall clock
// (settimeofday, an NTP step) or a resume makes its read fail with
// ECANCELED at once. One goroutine reads it through the runtime's poller
// (no thread blocks) and signals C for both.
type timerfdAlarm struct {
	f    *os.File
	c    chan struct{}
	done chan struct{} // closed when the reading goroutine ends
}

func newWallAlarm() (Alarm, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_REALTIME, unix.TFD_CLOEXEC|unix.TFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("create timerfd: %w", err)
	}
	a := &timerfdAlarm{f: os.NewFile(uintptr(fd), "timerfd"), c: make(chan struct{}, 1), done: make(chan struct{})}
	// Arm it once, far away, so that a kernel without cancel-on-set
	// (before 3.0) is found here rather than in the loop.
	if err := a.Set(time.Now().Add(24 * time.Hour)); err != nil {
		a.f.Close()
		return nil, err
	}
	go a.read()
	return a, nil
}

func (a *timerfdAlarm) C() <-chan struct{} { return a.c }

// Set arms the timerfd for t (absolute, cancel on set), or disarms it.
func (a *timerfdAlarm) Set(t time.Time) error {
	var spec unix.ItimerSpec
	flags := 0
	if !t.IsZero() {
		ns := max(t.UnixNano(), 1) // a zero it_value disarms
		spec.Value = unix.NsecToTimespec(ns)
		flags = unix.TFD_TIMER_ABSTIME | unix.TFD_TIMER_CANCEL_ON_SET
	}
	rc, err := a.f.SyscallConn()
	if err != nil {
		return fmt.Errorf("arm timerfd: %w", err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.TimerfdSettime(int(fd), flags, &spec, nil) }); err != nil {
		return fmt.Errorf("arm timerfd: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("arm timerfd: %w", serr)
	}
	return nil
}

// read signals C each time the timerfd expires or is cancelled by a
// clock step, until the alarm is closed.
func (a *timerfdAlarm) read() {
	defer close(a.done)
	var buf [8]byte // the expiry count
	for {
		_, err := a.f.Read(buf[:])
		if err != nil && !errors.Is(err, syscall.ECANCELED) {
			return // closed
		}
		select {
		case a.c <- struct{}{}:
		default: // one pending signal is enough
		}
	}
}

// Close closes the timerfd and waits for the reading goroutine to end.
func (a *timerfdAlarm) Close() error {
	err := a.f.Close()
	<-a.done
	return err
}
