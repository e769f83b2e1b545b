package main

import (
	"strings"
	"syscall"
	"testing"

	"github.com/hookd/hookd/engine"
)

// crashSleeper is a hook fired by hand whose first run outlives the daemon
// (it writes NAME.pid once asleep); every later run is quick.
func crashSleeper(name, policy string) string {
	return "description: the first run outlives the daemon\n" + policy + `steps:
  - type: shell
    command: '[ -f ` + name + `.done ] || { touch ` + name + `.done; echo $$ > ` + name + `.pid; sleep 30; }; echo ` + name + ` ran'
skip_llm: true
`
}

// TestDaemonlessRecoveryLeavesRerunAndRetry: a daemon is killed while a
// run of a hook with on_interrupted: rerun and one of a hook with retry:
// {on: [interrupted]} are in flight; a daemonless hookd emit recovers the
// crash and marks them interrupted, but runs neither rerun nor retry in
// the user's terminal: it stores them, and the next daemon carries each out
// exactly once (a later one does not repeat them).
func TestDaemonlessRecoveryLeavesRerunAndRetry(t *testing.T) {
	e := newDaemonProcEnv(t, "", map[string]string{
		"again.yaml": crashSleeper("again", "on_interrupted: rerun\n"),
		"later.yaml": crashSleeper("later", "retry: {attempts: 2, backoff: 1s, on: [interrupted]}\n"),
		"ping.yaml":  "trigger: {event: ping}\nsteps:\n  - type: shell\n    command: echo pong\nskip_llm: true\n",
	})
	d := e.serve()
	again := runID(t, e.must(0, "fire", "again"))
	later := runID(t, e.must(0, "fire", "later"))
	waitFor(t, "both runs' steps to be asleep", func() bool {
		return pidIn(e, "again.pid") > 0 && pidIn(e, "later.pid") > 0
	}, func() string { return d.log.String() })
	d.signal(syscall.SIGKILL)
	if code := d.wait(); code != -1 {
		t.Fatalf("hookd serve killed by SIGKILL: exit code %d", code)
	}

	// No daemon: emit opens the engine here, which recovers the crash.
	r := e.must(0, "emit", "ping")
	t.Logf("daemonless emit:\n%s", r)
	for _, id := range []string{again, later} {
		if got := e.getRun(id); got.Status != engine.StatusInterrupted {
			t.Errorf("after the daemonless emit: run %s is %s, want interrupted", id, got.Status)
		}
	}
	if runs := e.listRuns("again"); len(runs) != 1 {
		t.Errorf("the daemonless emit ran the rerun itself: %d runs of again", len(runs))
	}
	if runs := e.listRuns("later"); len(runs) != 1 {
		t.Errorf("the daemonless emit ran the retry itself: %d runs of later", len(runs))
	}
	if got := e.getRun(later); got.Retry == nil {
		t.Errorf("the interrupted run %s of later records no retry planned", later)
	}
	for _, want := range []string{
		`msg="the rerun of an interrupted run is left for hookd serve" hook=again run=` + again,
		`msg="the retry of an interrupted run is left for hookd serve" hook=later run=` + later,
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the daemonless emit does not say %q:\n%s", want, r)
		}
	}

	// The next daemon carries them out, once.
	d2 := e.serve()
	waitFor(t, "the rerun and the retry to complete", func() bool {
		return len(e.listRuns("again", "--status", "completed")) == 1 && len(e.listRuns("later", "--status", "completed")) == 1
	}, func() string { return d2.log.String() })
	d2.signal(syscall.SIGTERM)
	if code := d2.wait(); code != 0 {
		t.Fatalf("hookd serve after SIGTERM: exit %d; log:\n%s", code, d2.log)
	}
	d3 := e.serve()
	d3.signal(syscall.SIGTERM)
	if code := d3.wait(); code != 0 {
		t.Fatalf("hookd serve after SIGTERM: exit %d; log:\n%s", code, d3.log)
	}
	for hook, trigger := range map[string]string{"again": engine.TriggerRerun, "later": engine.TriggerRetry} {
		runs := e.listRuns(hook)
		var desc []string
		n := 0
		for _, r := range runs {
			desc = append(desc, r.ID+" "+r.Trigger+" "+string(r.Status))
			if r.Trigger == trigger {
				n++
			}
		}
		if n != 1 || len(runs) != 2 {
			t.Errorf("hook %s: want the interrupted run and one %s, got:\n  %s", hook, trigger, strings.Join(desc, "\n  "))
		}
	}
}
