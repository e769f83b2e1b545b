//go:build !linux

package sandbox

import (
	"os/exec"
	"runtime"
	"syscall"
)

// system has no containment on this platform: Status says so, and New
// returns a Sandbox that starts processes unconfined.
type system struct{}

func newSystem() (*system, Status) {
	why := "unavailable on " + runtime.GOOS + " (hookd's sandbox uses Linux's Landlock, namespaces and cgroups)"
	return nil, Status{
		Files:    why,
		Network:  why,
		Hiding:   why,
		Tree:     "process group only",
		Limits:   "not enforceable on " + runtime.GOOS,
		Problems: []string{"no containment on " + runtime.GOOS + ": hooks that take untrusted input are refused unless hookd.yaml sets sandbox: off"},
	}
}

func (*system) start(cmd *exec.Cmd, p *Policy) (*Process, error) {
	panic("sandbox: no system on " + runtime.GOOS)
}
func (*system) close() error      { return nil }
func (*system) contains(int) bool { return false }

// Process is one process started by a Sandbox.
type Process struct {
	pid int
}

func (p *Process) Pid() int                  { return p.pid }
func (p *Process) Containment() string       { return "" }
func (p *Process) Tracked() bool             { return false }
func (p *Process) Pids() []int               { return nil }
func (p *Process) Kill()                     { _ = syscall.Kill(-p.pid, syscall.SIGKILL) }
func (p *Process) Signal(sig syscall.Signal) { _ = syscall.Kill(-p.pid, sig) }
func (p *Process) Release(leave bool)        {}
