package testtool

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SelfCPU is the CPU time this process has spent (user and system, all
// threads): on a shared machine a steadier figure than wall time.
func SelfCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ChildrenCPU is the CPU time this process's children that ended and
// were waited for have spent (user and system).
func ChildrenCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ProcCPU is the CPU time process pid has spent (user and system, all
// its threads) and that its children that ended and were waited for
// spent, from /proc/PID/stat, in clock ticks of 10 ms: for figures over
// many operations, such as the CPU a daemon under test spends a run.
func ProcCPU(tb testing.TB, pid int) (self, children time.Duration) {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: the fields
	// counted start after its closing parenthesis, with the state (3).
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 15 {
		tb.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	var ticks [4]int64
	for j, s := range f[11:15] { // utime (14), stime, cutime, cstime (17)
		if ticks[j], err = strconv.ParseInt(s, 10, 64); err != nil {
			tb.Fatalf("/proc/%d/stat: %v", pid, err)
		}
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(ticks[0]+ticks[1]) * tick, time.Duration(ticks[2]+ticks[3]) * tick
}
