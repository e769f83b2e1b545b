package engine

import "testing"

// The gates write a queued run's reason with its own "queued: " or
// "pending: "; the line says the word once (it used to read "queued:
// queued: waits for a concurrency slot").
func TestRunLineSaysQueuedOnce(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ reason, want string }{
		{"queued: waits for a concurrency slot (max_concurrent 2)", "r1 h (queued: waits for a concurrency slot (max_concurrent 2))"},
		{"pending: waits for run r0", "r1 h (pending: waits for run r0)"},
		{"max_concurrent: 4 runs in flight", "r1 h (queued: max_concurrent: 4 runs in flight)"},
	} {
		got := RunLine(&Run{ID: "r1", Hook: "h", Status: StatusQueued, Reason: c.reason})
		if got != c.want {
			t.Errorf("RunLine(reason %q) = %q, want %q", c.reason, got, c.want)
		}
	}
	if got := RunLine(&Run{ID: "r1", Hook: "h", Status: StatusRunning}); got != "r1 h (running)" {
		t.Errorf("RunLine(running) = %q", got)
	}
}
