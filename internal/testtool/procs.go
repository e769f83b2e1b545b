package testtool

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// LeakCheckMain runs m and then fails the run when goroutines of the
// packages named by prefixes (e.g. "hookd/hookd/steps.", "os/exec.")
// outlive the tests by more than 5 s: a command's watcher and os/exec's
// output copiers must end with the command. It returns the exit code.
func LeakCheckMain(m *testing.M, prefixes ...string) int {
	code := m.Run()
	if code != 0 {
		return code
	}
	deadline := time.Now().Add(5 * time.Second)
	leaked := leakedGoroutines(prefixes)
	for len(leaked) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		leaked = leakedGoroutines(prefixes)
	}
	if len(leaked) > 0 {
		fmt.Fprintf(os.Stderr, "%d goroutines leaked:\n\n%s\n", len(leaked), strings.Join(leaked, "\n\n"))
		return 1
	}
	return 0
}

// leakedGoroutines returns the stacks of goroutines running code of the
// packages named by prefixes, other than the test runner's own.
func leakedGoroutines(prefixes []string) []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "testtool.LeakCheckMain") || strings.Contains(g, "testtool.leakedGoroutines") {
			continue
		}
		for _, p := range prefixes {
			if strings.Contains(g, p) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// ProcessGone reports whether pid has exited (a zombie counts as gone: it
// runs nothing and only waits to be reaped by whoever inherited it).
func ProcessGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// WaitGone waits until pid has exited or d has passed.
func WaitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !ProcessGone(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// UntilReady runs try with a timeout doubled from first until ready says
// the command got, before its timeout, to the point the test looks at: on
// a loaded machine a shell may take longer than a short timeout to get
// anywhere, and then there is nothing to check. It returns the last
// result and its timeout (at most about 20 s).
func UntilReady[R any](t testing.TB, first time.Duration, try func(timeout time.Duration) R, ready func(R) bool) (R, time.Duration) {
	t.Helper()
	for d := first; ; d *= 2 {
		r := try(d)
		if ready(r) || d >= 10*time.Second {
			return r, d
		}
		t.Logf("the command was not ready within its %s timeout; trying again with %s", d, 2*d)
	}
}

// HangBound is how long a step or command may take after its timeout
// before a test says it waited for what it should have stopped (a 30 s
// sleep, a server that never answers, an endless query). It is that
// loose so that a loaded machine never trips it.
const HangBound = 20 * time.Second

// KillAtEnd kills pid when the test ends, should the code under test
// have left it running.
func KillAtEnd(t *testing.T, pid int) {
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
}

// FirstPID reads the pid a script printed on the first line of stdout.
func FirstPID(t *testing.T, stdout string) int {
	t.Helper()
	line, _, _ := strings.Cut(stdout, "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("stdout %q: no pid on the first line: %v", stdout, err)
	}
	KillAtEnd(t, pid)
	return pid
}
