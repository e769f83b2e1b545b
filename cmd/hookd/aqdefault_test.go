package main

import (
	"strings"
	"testing"
)

// TestAgentQueuePeriodicDefaultInterval: an agent-queue periodic trigger
// without interval_seconds fires every 3600 s, as agent-queue's
// HookEngine did (trigger.get("interval_seconds", 3600)), with
// agent-queue's default cooldown of 3600 s.
func TestAgentQueuePeriodicDefaultInterval(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"hourly.json": `{
  "id": "hourly-digest",
  "project_id": "site",
  "trigger": {"type": "periodic", "skip_llm": true},
  "context_steps": [{"type": "shell", "command": "echo digest"}],
  "prompt_template": "{{step_0}}"
}`,
	})
	e.must(0, "validate")
	if line := listLine(t, e.must(0, "list"), "hourly-digest"); !strings.Contains(line, "every 1h") {
		t.Errorf("list: %q: want every 1h", line)
	}
	r := e.must(0, "next", "hourly-digest", "-n", "2")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 ||
		!strings.Contains(lines[0], ":00:00") || !strings.Contains(lines[1], ":00:00") {
		t.Errorf("next: want two slots on the hour:\n%s", r)
	}
	e.must(0, "fire", "hourly-digest", "--wait")
	if r := e.must(exitRefused, "fire", "hourly-digest"); !strings.Contains(r.stderr, "cooldown is 1h") {
		t.Errorf("a second fire within the hour: want agent-queue's cooldown of 3600 s:\n%s", r)
	}
}
