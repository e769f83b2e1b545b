package steps

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run when goroutines started by the tests outlive
// them: Command starts a watcher and os/exec starts output copiers, and
// both must end with the command.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(5 * time.Second)
		leaked := leakedGoroutines()
		for len(leaked) > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			leaked = leakedGoroutines()
		}
		if len(leaked) > 0 {
			fmt.Fprintf(os.Stderr, "%d goroutines leaked:\n\n%s\n", len(leaked), strings.Join(leaked, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// leakedGoroutines returns the stacks of goroutines running code of this
// package or of os/exec, other than the caller's.
func leakedGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "steps.TestMain") || strings.Contains(g, "steps.leakedGoroutines") {
			continue
		}
		if strings.Contains(g, "hookd/hookd/steps.") || strings.Contains(g, "os/exec.") {
			out = append(out, g)
		}
	}
	return out
}

// processGone reports whether pid has exited (a zombie counts as gone: it
// runs nothing and only waits to be reaped by whoever inherited it).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// waitGone waits until pid has exited or d has passed.
func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}
