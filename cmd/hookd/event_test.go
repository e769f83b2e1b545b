package main

import (
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// TestEventChain: the daemon publishes a run's outcome on its event bus,
// so a hook reacts to another hook's failure; a hook that reacts to its
// own failure is cut off at the event depth limit instead of looping.
func TestEventChain(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"nomodel.yaml": fireHooks["nomodel.yaml"],
		"reporter.yaml": `trigger:
  event: hook.run.failed
  where: {hook: nomodel}
steps:
  - type: shell
    command: |
      printf '%s: %s\n' {{event.hook}} {{event.error}}
skip_llm: true
`,
		// overlap: queue, because the failure event may be dispatched
		// while the run is still in flight (see TestEventSelfTrigger).
		"loop.yaml": `trigger:
  event: hook.run.failed
  where: {hook: loop}
overlap: queue
steps:
  - type: shell
    command: sleep 5
    timeout: 10ms
    required: true
skip_llm: true
`,
	})
	d := e.serve()

	failed := runID(t, e.must(1, "fire", "nomodel", "--wait"))
	var report *engine.Run
	waitFor(t, "the reporter to run", func() bool {
		runs := e.listRuns("reporter")
		if len(runs) == 1 && runs[0].Status.Final() {
			report = runs[0]
		}
		return report != nil
	}, func() string { return d.log.String() })
	if report.Status != engine.StatusCompleted || report.Trigger != "event" || report.EventType != "hook.run.failed" {
		t.Errorf("reporter run: status %s trigger %s event %s", report.Status, report.Trigger, report.EventType)
	}
	if len(report.Steps) != 1 || !strings.HasPrefix(report.Steps[0].Output, "nomodel: no model") {
		t.Errorf("reporter output: %+v", report.Steps)
	}
	if !strings.Contains(string(report.Event), failed) {
		t.Errorf("reporter payload %s does not name the failed run %s", report.Event, failed)
	}

	e.must(1, "fire", "loop", "--wait")
	var last *engine.Run
	waitFor(t, "the loop to be cut", func() bool {
		for _, r := range e.listRuns("loop", "--status", "skipped") {
			last = r
			return true
		}
		return false
	}, func() string { return d.log.String() })
	if !strings.HasPrefix(last.Reason, "event_depth") {
		t.Errorf("the loop ended with %q, want the event_depth gate", last.Reason)
	}
	runs := e.listRuns("loop", "--limit", "1000")
	if len(runs) > 10 {
		t.Errorf("the loop ran %d times", len(runs))
	}
	for _, r := range runs {
		if r.Status != engine.StatusFailed && r.Status != engine.StatusSkipped {
			t.Errorf("loop run %s is %s", r.ID, r.Status)
		}
	}
	if n := len(e.listRuns("reporter")); n != 1 {
		t.Errorf("reporter ran %d times; its where filter should keep loop's failures out", n)
	}
}
