package engine

import (
	"slices"
	"testing"

	"github.com/hookd/hookd/sandbox"
)

// TestSandboxPolicy checks what a hook's declarations and its trigger
// make of its processes' policy, and what a step adds.
func TestSandboxPolicy(t *testing.T) {
	t.Parallel()
	e := &Engine{cfg: Config{HooksDir: "/p/hooks.d", Protected: []string{"/p/hookd.yaml", ""}, CacheDir: "/c"}}
	ports := &sandbox.Network{Ports: []uint16{443}}
	for _, c := range []struct {
		name string
		hook Hook
		want sandbox.Network
	}{
		{"manual", Hook{}, sandbox.Network{All: true}},
		{"timer", Hook{Trigger: Trigger{Kind: TriggerEvery}}, sandbox.Network{All: true}},
		{"timer closed", Hook{Trigger: Trigger{Kind: TriggerEvery}, Network: &sandbox.Network{}}, sandbox.Network{}},
		{"event", Hook{Trigger: Trigger{Kind: TriggerEvent}}, sandbox.Network{}},
		{"watch", Hook{Trigger: Trigger{Kind: TriggerWatch}}, sandbox.Network{}},
		{"run_command", Hook{Tools: []string{"read_file", "run_command"}}, sandbox.Network{}},
		{"mcp", Hook{Tools: []string{"github.search"}}, sandbox.Network{}},
		{"event with ports", Hook{Trigger: Trigger{Kind: TriggerEvent}, Network: ports}, *ports},
		{"event open", Hook{Trigger: Trigger{Kind: TriggerEvent}, Network: &sandbox.Network{All: true}}, sandbox.Network{All: true}},
	} {
		h := c.hook
		h.Name, h.Workdir = "h", "/p"
		h.Writes, h.Reads, h.Limits = []string{"/p/../out"}, []string{"/src"}, sandbox.Limits{Pids: 9}
		p := e.SandboxPolicy(&h)
		if !slices.Equal(p.Network.Ports, c.want.Ports) || p.Network.All != c.want.All {
			t.Errorf("%s: network %s, want %s", c.name, p.Network, c.want)
		}
		if p.Workdir != "/p" || p.Key != "h" || p.Cache != "/c/h" || p.Limits.Pids != 9 ||
			!slices.Equal(p.Writes, h.Writes) || !slices.Equal(p.Reads, h.Reads) ||
			!slices.Equal(p.Hidden, []string{"/p/hooks.d", "/p/hookd.yaml"}) {
			t.Errorf("%s: policy %+v", c.name, p)
		}
	}

	h := &Hook{Name: "h", Workdir: "/p", Trigger: Trigger{Kind: TriggerEvent}, Writes: []string{"/out"}}
	hp := e.SandboxPolicy(h)
	if got := StepPolicy(hp, &StepDef{}); got != hp {
		t.Errorf("a step that declares nothing gets another policy: %+v", got)
	}
	sp := StepPolicy(hp, &StepDef{Writes: []string{"/dist"}, Network: &sandbox.Network{All: true}})
	if !sp.Network.All || !slices.Equal(sp.Writes, []string{"/out", "/dist"}) {
		t.Errorf("step policy %+v", sp)
	}
	if hp.Network.All || !slices.Equal(hp.Writes, []string{"/out"}) {
		t.Errorf("the step's declarations changed the hook's policy: %+v", hp)
	}
}

func init() {
	// Two kinds for TestNeedsContainment, registered once per test binary
	// (the registry panics on a second registration, so not in the test,
	// which -count=N runs N times).
	RegisterStep("test_sandbox_proc", DeclaredKind{Starts: ProcessesDeclared, Build: func(*StepDef, Decoder) (Step, error) { return nil, nil }})
	RegisterStep("test_sandbox_none", DeclaredKind{Build: func(*StepDef, Decoder) (Step, error) { return nil, nil }})
}

// TestNeedsContainment: a hook needs containment when it takes untrusted
// input and starts processes (a step that does, or a model's tools).
func TestNeedsContainment(t *testing.T) {
	t.Parallel()
	proc := []*StepDef{{Type: "test_sandbox_none"}, {Type: "test_sandbox_proc"}}
	none := []*StepDef{{Type: "test_sandbox_none"}}
	for _, c := range []struct {
		name string
		hook Hook
		want bool
	}{
		{"event, process step", Hook{Trigger: Trigger{Kind: TriggerEvent}, Steps: proc}, true},
		{"watch, process step", Hook{Trigger: Trigger{Kind: TriggerWatch}, Steps: proc}, true},
		{"event, no process", Hook{Trigger: Trigger{Kind: TriggerEvent}, Steps: none, Tools: []string{"read_file"}}, false},
		{"event, run_command", Hook{Trigger: Trigger{Kind: TriggerEvent}, Steps: none, Tools: []string{"run_command"}}, true},
		{"timer, process step", Hook{Trigger: Trigger{Kind: TriggerCron}, Steps: proc}, false},
		{"manual, process step", Hook{Steps: proc}, false},
		{"timer, run_command", Hook{Trigger: Trigger{Kind: TriggerCron}, Tools: []string{"run_command"}}, true},
		{"manual, mcp tools", Hook{Tools: []string{"mcp.fs.*"}}, true},
	} {
		if got := c.hook.NeedsContainment(); got != c.want {
			t.Errorf("%s: NeedsContainment %v, want %v", c.name, got, c.want)
		}
	}
}
