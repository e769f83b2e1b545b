package testtool

import (
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
