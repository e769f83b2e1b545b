package process

import "golang.org/x/sys/unix"

// userHZ is the unit of a process's start time in /proc/PID/stat: the
// kernel writes it as start_boottime (CLOCK_BOOTTIME, in ns, taken in
// fork) / (1e9 / USER_HZ), rounded down. USER_HZ is 100 on every
// architecture Go runs on under Linux (only alpha and ia64 differed).
// TestBootTickWindow checks it against /proc on the machine at hand.
const userHZ = 100

// bootTick returns CLOCK_BOOTTIME in those ticks: read before and after a
// fork, it bounds the child's start time as /proc/PID/stat will give it,
// with two clock reads instead of a /proc read (process.ReapGroup).
func bootTick() (uint64, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil || ts.Sec < 0 {
		return 0, false
	}
	return (uint64(ts.Sec)*1e9 + uint64(ts.Nsec)) / (1e9 / userHZ), true
}
