package engine_test

import (
	"testing"

	"github.com/hookd/hookd/engine"
)

func TestGrantsTool(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		entry, name string
		glob, want  bool
	}{
		{"run_command", "run_command", false, true},
		{"run_command", "run_command2", false, false},
		{"run_*", "run_command", true, true},
		{"run_comman?", "run_command", true, true},
		{"run_comman[cd]", "run_command", true, true},
		{`run\_command`, "run_command", true, true},
		{"*", "read_file", true, true},
		{"*", "gh.list", true, false},
		{"gh.*", "gh.list", true, true},
		{"gh.*", "gh.repos.list", true, false},
		{"gh.**", "gh.repos.list", true, true},
		{"gh.list", "gh.list", false, true},
		{"run_comman[", "run_comman[", true, false}, // malformed: grants nothing
	} {
		if got := engine.IsToolGlob(c.entry); got != c.glob {
			t.Errorf("IsToolGlob(%q) = %v", c.entry, got)
		}
		if got := engine.GrantsTool(c.entry, c.name); got != c.want {
			t.Errorf("GrantsTool(%q, %q) = %v, want %v", c.entry, c.name, got, c.want)
		}
	}
}

// TestGlobGrantingRunCommandNeedsContainment: an event hook whose tools:
// grant run_command by any glob starts processes from untrusted input, so
// it runs only where they are contained. Before one test decided what a
// tools: entry grants, a glob without '*' (run_comman?, [r]un_command)
// was taken for a name that starts nothing.
func TestGlobGrantingRunCommandNeedsContainment(t *testing.T) {
	t.Parallel()
	for _, entry := range []string{"run_command", "run_*", "run_comman?", "[r]un_command", `run\_command`, "gh.echo"} {
		h := &engine.Hook{Name: "h", Trigger: engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.failed"}, Tools: []string{entry}}
		if !h.NeedsContainment() {
			t.Errorf("tools: [%s] on an event hook does not need containment", entry)
		}
	}
	h := &engine.Hook{Name: "h", Trigger: engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.failed"}, Tools: []string{"read_file"}}
	if h.NeedsContainment() {
		t.Error("tools: [read_file] needs containment")
	}
}
