package main

import (
	"strings"
	"syscall"
	"testing"
)

// TestRateAcrossRestart: rate: counts the starts of the daemon before a
// restart (the window is read back from the run records through the
// daemon's store), and an in-process fire with no daemon counts them too.
func TestRateAcrossRestart(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"capped.yaml": "steps:\n  - type: shell\n    command: \"true\"\nskip_llm: true\nrate: 1/1h\n",
	})
	d := e.serve()
	e.must(0, "fire", "capped", "--wait")
	want := "rate: 1 start in the last 1h (rate: 1/1h); the next is allowed in "
	if r := e.must(exitRefused, "fire", "capped"); !strings.Contains(r.stderr, want) {
		t.Fatalf("second fire:\n%s", r)
	}
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("hookd serve exited %d:\n%s", code, d.log)
	}
	if r := e.must(exitRefused, "fire", "capped"); !strings.Contains(r.stderr, want) {
		t.Errorf("in-process fire:\n%s", r)
	}
	e.serve()
	if r := e.must(exitRefused, "fire", "capped"); !strings.Contains(r.stderr, want) {
		t.Errorf("after a restart:\n%s", r)
	}
}
