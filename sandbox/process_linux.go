package sandbox

import (
	"os"
	"sync"
	"syscall"
	"time"
)

// Process is one process tree started by a Sandbox.
type Process struct {
	pid  int
	sys  *system // nil: started unconfined
	cg   *cgroup
	tmp  string
	view *mountView
	note string
	once sync.Once
	// reaper: the leader is the tree's reaper (no cgroup), which ends
	// the tree on SIGUSR1.
	reaper bool
	os     *os.Process // the leader, signalled safely once reaped
}

// Pid is the process's id (the tree's leader).
func (p *Process) Pid() int { return p.pid }

// Containment says what confined the process ("landlock ABI 7, mount
// namespace, network: none (namespace), cgroup"); "" when nothing did.
func (p *Process) Containment() string { return p.note }

// Tracked reports whether the process tree is bounded by a cgroup: every
// process it starts, setsid'd or double-forked ones too, is found by Pids
// and ended by Kill.
func (p *Process) Tracked() bool { return p.cg != nil }

// Pids lists the processes of the tree still running (nil when the tree
// is not Tracked).
func (p *Process) Pids() []int {
	if p.cg == nil {
		return nil
	}
	return p.cg.pids()
}

// Kill ends the whole tree at once (SIGKILL to every process of its
// cgroup); without a cgroup only the leader's process group is killed.
func (p *Process) Kill() {
	switch {
	case p.cg != nil:
		p.cg.kill()
	case p.reaper:
		// The reaper kills and reaps every descendant, setsid'd ones too,
		// then exits; a SIGKILL to the group would end it first. Should
		// it not, the group goes after a while.
		if p.os.Signal(syscall.SIGUSR1) == nil {
			pgid := p.pid
			time.AfterFunc(2*time.Second, func() {
				if p.os.Signal(syscall.Signal(0)) == nil {
					_ = syscall.Kill(-pgid, syscall.SIGKILL)
				}
			})
		}
	default:
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
}

// Signal sends sig to every process of the tree (its cgroup), or to the
// leader's process group without one.
func (p *Process) Signal(sig syscall.Signal) {
	if p.cg != nil {
		for _, pid := range p.cg.pids() {
			_ = syscall.Kill(pid, sig)
		}
	}
	_ = syscall.Kill(-p.pid, sig)
}

// Release ends what is left of the tree once its leader has exited:
// unless leave, every process still in it is killed, and its cgroup and
// private temporary directory are removed. With leave (a step's detach:
// true), what runs is left running and cleaned up once it has ended (or
// when the Sandbox closes). Release is safe to call more than once.
func (p *Process) Release(leave bool) {
	if p.sys == nil {
		return
	}
	p.sys.mu.Lock()
	delete(p.sys.live, p)
	if leave && p.cg != nil && p.cg.populated() {
		p.sys.detached = append(p.sys.detached, p)
		p.sys.mu.Unlock()
		return
	}
	p.sys.mu.Unlock()
	if p.cg != nil && p.cg.populated() {
		p.cg.kill()
	}
	p.cleanup()
}

func (p *Process) cleanup() {
	p.once.Do(func() {
		if p.cg != nil {
			p.cg.release()
		}
		if p.tmp != "" {
			os.RemoveAll(p.tmp)
		}
		p.sys.unref(p.view)
	})
}
