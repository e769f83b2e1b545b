package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The step appends its slot to a log outside the state directory, so the
// test can count fires whatever happens to the database.
const slotLogHook = `trigger:
  every: 1s
steps:
  - type: shell
    command: 'echo {{event.slot}} >> fired.log'
skip_llm: true
`

// firedSlots returns the slots fired.log holds, with how often each fired.
func firedSlots(t *testing.T, e *env) map[string]int {
	t.Helper()
	b, err := os.ReadFile(e.path("fired.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		out[l]++
	}
	return out
}

// TestStateDirRemovedStopsDaemon: `rm -rf .hookd` under a running daemon
// used to leave it writing to an unlinked database while a second
// `hookd serve` started on a fresh one, and both fired the same slots.
// The daemon now sees that its lock and database are no longer the files
// at their paths, stops triggering, and exits non-zero with a message
// that says why, within a bound of a few ticks; the slots fired, counted
// from the steps' own log, never repeat, also after a second daemon
// started on the new state directory.
func TestStateDirRemovedStopsDaemon(t *testing.T) {
	e := newEnv(t, "tick: 200ms\n", map[string]string{"tick.yaml": slotLogHook})
	first := e.serve()
	waitFor(t, "two fires", func() bool { return len(firedSlots(t, e)) >= 2 }, func() string { return first.log.String() })

	removed := time.Now()
	if err := os.RemoveAll(e.path(".hookd")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("the first daemon still runs %s after its state directory was removed; its log:\n%s",
			time.Since(removed).Round(time.Millisecond), first.log)
	}
	if first.code != exitError {
		t.Errorf("first daemon: exit %d, want %d; its log:\n%s", first.code, exitError, first.log)
	}
	log := first.log.String()
	for _, want := range []string{"hookd must stop", "was removed while hookd ran (was the state directory deleted?)",
		"another hookd could run the same hooks"} {
		if !strings.Contains(log, want) {
			t.Errorf("first daemon's log lacks %q:\n%s", want, log)
		}
	}
	// No slot after the one the daemon saw its state gone in was fired:
	// a slot fires at or after its time, so a later slot in the steps'
	// log would be a trigger after the stop.
	m := regexp.MustCompile(`time=(\S+) level=ERROR msg="hookd must stop`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no time on the stop line:\n%s", log)
	}
	stopped, err := time.Parse(time.RFC3339Nano, m[1])
	if err != nil {
		t.Fatal(err)
	}
	for slot := range firedSlots(t, e) {
		st, err := time.Parse(time.RFC3339, slot)
		if err != nil {
			t.Fatalf("fired.log: %v", err)
		}
		if st.After(stopped) {
			t.Errorf("slot %s fired after the daemon stopped triggering at %s", slot, m[1])
		}
	}

	// A second daemon on the new state directory fires on, alone.
	second := e.serve()

	// The second daemon fires on; every slot is in the log once.
	before := len(firedSlots(t, e))
	waitFor(t, "the second daemon to fire three more slots", func() bool { return len(firedSlots(t, e)) >= before+3 },
		func() string { return second.log.String() })
	second.signal(15)
	if code := second.wait(); code != 0 {
		t.Errorf("second daemon: exit %d; its log:\n%s", code, second.log)
	}
	for slot, n := range firedSlots(t, e) {
		if n > 1 {
			t.Errorf("slot %s fired %d times", slot, n)
		}
	}
}
