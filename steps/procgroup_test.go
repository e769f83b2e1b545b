package steps

import (
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

// TestShellStepBackground: the shell step reports killed and detached
// processes in its fields.
func TestShellStepBackground(t *testing.T) {
	env := &engine.StepEnv{Workdir: t.TempDir(), Scope: &engine.Scope{}}
	s := mustStep(t, "shell", "command: 'sleep 100 >/dev/null 2>&1 & echo $!'", 0)
	res, err := runStep(t, s, env)
	if err != nil {
		t.Fatal(err)
	}
	pid := testtool.FirstPID(t, res.Output)
	if !testtool.ProcessGone(pid) {
		t.Errorf("background process %d of a shell step still runs", pid)
	}
	if k, _ := res.Fields["killed_pids"].([]int); len(k) != 1 || k[0] != pid {
		t.Errorf("killed_pids = %v, want [%d]", res.Fields["killed_pids"], pid)
	}

	s = mustStep(t, "shell", "command: 'sleep 100 >/dev/null 2>&1 & echo $!'\ndetach: true", 0)
	res, err = runStep(t, s, env)
	if err != nil {
		t.Fatal(err)
	}
	pid = testtool.FirstPID(t, res.Output)
	if testtool.ProcessGone(pid) {
		t.Errorf("the daemon of a detach: true step was killed")
	}
	if d, _ := res.Fields["detached_pids"].([]int); len(d) != 1 || d[0] != pid {
		t.Errorf("detached_pids = %v, want [%d]", res.Fields["detached_pids"], pid)
	}
}
