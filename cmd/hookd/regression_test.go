package main

// Regression tests of bugs found in the engine through the CLI.

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/hookd/hookd/engine"
)

// TestEventSelfTrigger: a hook that reacts to its own outcome must run
// again, not be refused as in flight (a run's final event was once
// dispatched before the loop heard the run finished). The chain ends at
// the event-depth gate.
func TestEventSelfTrigger(t *testing.T) {
	e := newEnv(t, "", map[string]string{"loop.yaml": `trigger:
  event: hook.run.failed
  where: {hook: loop}
steps:
  - type: shell
    command: sleep 5
    timeout: 10ms
    required: true
skip_llm: true
`})
	d := e.serve()
	for i := 0; i < 5; i++ {
		e.must(1, "fire", "loop", "--wait")
		var last *engine.Run
		waitFor(t, "the loop to end", func() bool {
			for _, r := range e.listRuns("loop", "--status", "skipped") {
				last = r
				return true
			}
			return false
		}, func() string { return d.log.String() })
		if !strings.HasPrefix(last.Reason, "event_depth") {
			t.Fatalf("round %d: the chain ended with %q, want the event_depth gate", i, last.Reason)
		}
		// Start the next round from a clean database.
		d.signal(syscall.SIGTERM)
		d.wait()
		os.RemoveAll(e.path(".hookd"))
		d = e.serve()
	}
}

// TestPauseUnknownHook: `hookd pause typo` fails and stores nothing, so a
// hook of that name added later does not start paused.
func TestPauseUnknownHook(t *testing.T) {
	e := newEnv(t, "", map[string]string{"quick.yaml": quickHook})
	d := e.serve()
	e.must(1, "pause", "later")
	d.signal(syscall.SIGTERM)
	d.wait()

	e.write("hooks.d/later.yaml", quickHook)
	if r := e.must(0, "list"); strings.Contains(listLine(t, r, "later"), "paused") {
		t.Errorf("a hook added after a failed pause of its name starts paused:\n%s", r)
	}
}
