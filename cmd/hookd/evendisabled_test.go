package main

import (
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// disabledAQHook is an agent-queue hook file, as its spec shows them,
// with enabled: false. agent-queue's fire_hook ran it all the same.
const disabledAQHook = `{
  "id": "nightly-audit",
  "name": "nightly-audit",
  "enabled": false,
  "trigger": {"type": "periodic", "interval_seconds": 86400, "skip_llm": true},
  "context_steps": [{"type": "shell", "command": "echo audit-ran"}],
  "prompt_template": "{{step_0}}"
}`

// TestFireEvenDisabled: hookd fire refuses a disabled hook, with
// --force too (it skips the cooldown and nothing else); --even-disabled
// runs it, through the daemon and without one.
func TestFireEvenDisabled(t *testing.T) {
	for _, daemon := range []bool{false, true} {
		name := "daemonless"
		if daemon {
			name = "daemon"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, "", map[string]string{"nightly-audit.json": disabledAQHook})
			if daemon {
				e.serve()
			}
			for _, args := range [][]string{{"fire", "nightly-audit"}, {"fire", "nightly-audit", "--force"}} {
				r := e.must(exitRefused, args...)
				if !strings.Contains(r.stderr, "disabled") || !strings.Contains(r.stderr, "--even-disabled") {
					t.Errorf("the refusal does not say the hook is disabled and how to run it:\n%s", r)
				}
			}
			r := e.must(0, "fire", "nightly-audit", "--even-disabled", "--wait")
			run := e.getRun(runID(t, r))
			if run.Status != engine.StatusCompleted || !strings.Contains(string(run.Steps[0].Output), "audit-ran") {
				t.Errorf("the disabled hook fired with --even-disabled did not run its step: %s %s\n%s", run.Status, run.Error, r)
			}
			if line := listLine(t, e.must(0, "list"), "nightly-audit"); !strings.Contains(line, "disabled") {
				t.Errorf("the hook is no longer listed disabled: %s", line)
			}
		})
	}
}
