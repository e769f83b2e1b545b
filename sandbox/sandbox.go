package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
)

// ErrUnavailable is wrapped by Start's error when the policy cannot be
// enforced on this machine and the Sandbox is not off.
var ErrUnavailable = errors.New("sandbox: containment unavailable")

// Options configure a Sandbox.
type Options struct {
	// Off runs processes with hookd's own rights (hookd.yaml sandbox:
	// off): nothing is confined and Status says so.
	Off bool
}

// Sandbox starts processes under policies. One serves the whole daemon:
// it owns the cgroup directory its process trees live in and the network
// namespaces of processes without network. It is safe for concurrent use.
type Sandbox struct {
	opts   Options
	status Status
	sys    *system // nil when off or where the platform has none
}

// New finds what containment this machine gives and prepares it (the
// cgroup directory of hookd's process trees, and the removal of one a
// crashed hookd left). It does not fail for missing mechanisms: Status
// says what is missing.
func New(opts Options) *Sandbox {
	s := &Sandbox{opts: opts}
	if opts.Off {
		s.status = Status{Off: true}
		return s
	}
	s.sys, s.status = newSystem()
	return s
}

// Status says which containment processes started by s get.
func (s *Sandbox) Status() Status { return s.status }

// Start starts cmd under p, as cmd.Start does: cmd.Env must be set (it
// gets TMPDIR and the cache variables), cmd.Dir is p.Workdir when empty.
// The Process it returns must be released (Release) once cmd has
// exited. A nil p, or an off Sandbox, starts cmd as it is.
func (s *Sandbox) Start(cmd *exec.Cmd, p *Policy) (*Process, error) {
	if p == nil || s.opts.Off || s.sys == nil {
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return &Process{pid: cmd.Process.Pid}, nil
	}
	return s.sys.start(cmd, p)
}

// Close kills every process tree s started that is still running
// (detached ones included) and removes their cgroups.
func (s *Sandbox) Close() error {
	if s.sys == nil {
		return nil
	}
	return s.sys.close()
}

// Contains reports whether the process pid runs inside one of s's
// process trees: a peer the API socket refuses.
func (s *Sandbox) Contains(pid int) bool {
	if s.sys == nil {
		return false
	}
	return s.sys.contains(pid)
}

var (
	defaultMu sync.Mutex
	defaultSB *Sandbox
)

// Default is the process's Sandbox: the one SetDefault installed, or one
// built with zero Options at first use.
func Default() *Sandbox {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultSB == nil {
		defaultSB = New(Options{})
	}
	return defaultSB
}

// Install returns the process's Sandbox, making it with opts when there
// is none yet. Every daemon and command of a process shares it (its
// cgroups, its network namespaces, the API socket's peer check); a
// request for other options than it was made with is an error.
func Install(opts Options) (*Sandbox, error) {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultSB == nil {
		defaultSB = New(opts)
		return defaultSB, nil
	}
	if defaultSB.opts != opts {
		return nil, fmt.Errorf("sandbox: this process runs its hooks' processes with sandbox: %s already; a daemon with sandbox: %s needs a process of its own",
			offText(defaultSB.opts.Off), offText(opts.Off))
	}
	return defaultSB, nil
}

func offText(off bool) string {
	if off {
		return "off"
	}
	return "on"
}
