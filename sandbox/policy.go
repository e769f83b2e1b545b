package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Policy is what one process tree hookd starts may reach. The zero value
// but Workdir is the narrowest: read the file system (less Hidden), write
// the workdir and a private temporary directory, no network.
type Policy struct {
	// Workdir is the process's working directory; it is writable unless
	// ReadOnlyWorkdir.
	Workdir         string
	ReadOnlyWorkdir bool
	// Writes are more trees (directories, or single files) the process may
	// write, absolute.
	Writes []string
	// Reads, when not nil, narrows what the process may read to these
	// trees, the workdir, Writes, and the system's own directories (/usr,
	// /bin, /lib*, /etc, /dev, /proc, /sys, /opt, and HOME read-only).
	// Nil: the whole file system, less Hidden.
	Reads []string
	// Hidden are hookd's own files and directories (hookd.yaml, hooks.d,
	// the state directory, the token file, the API socket): neither
	// readable nor writable, existing or not.
	Hidden []string
	// Network is what the process may reach over the network.
	Network Network
	// Limits bound the process tree's resources, when the cgroup
	// controllers can be had.
	Limits Limits
	// Cache is a persistent cache directory of the hook's, writable,
	// created when missing: XDG_CACHE_HOME, GOCACHE, GOMODCACHE and the
	// npm and pip caches point into it. Empty: none.
	Cache string
	// Key names who the process belongs to (the hook): processes of one key
	// share a network namespace when they have no network.
	Key string
	// Detach lets what the tree started keep running after its leader
	// exits (a step's detach: true).
	Detach bool
}

// Network is what a sandboxed process may reach: nothing (the zero value),
// TCP connections to the listed ports on any host, or everything.
type Network struct {
	All   bool
	Ports []uint16
}

// None reports whether the network is closed.
func (n Network) None() bool { return !n.All && len(n.Ports) == 0 }

func (n Network) String() string {
	switch {
	case n.All:
		return "all"
	case len(n.Ports) > 0:
		s := make([]string, len(n.Ports))
		for i, p := range n.Ports {
			s[i] = strconv.Itoa(int(p))
		}
		return "tcp ports " + strings.Join(s, ",")
	}
	return "none"
}

// Limits bound a process tree's resources; zero means no bound.
type Limits struct {
	Memory int64   // bytes
	Pids   int     // processes and threads
	CPU    float64 // cores
}

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l == Limits{} }

func (l Limits) String() string {
	var s []string
	if l.Memory > 0 {
		s = append(s, fmt.Sprintf("memory %d MiB", l.Memory>>20))
	}
	if l.Pids > 0 {
		s = append(s, fmt.Sprintf("pids %d", l.Pids))
	}
	if l.CPU > 0 {
		s = append(s, fmt.Sprintf("cpu %g", l.CPU))
	}
	return strings.Join(s, ", ")
}

// With returns a copy of p with more writable trees and, when net is not
// nil, another network: what a step or tool declares on top of its hook.
func (p *Policy) With(writes []string, net *Network) *Policy {
	q := *p
	if len(writes) > 0 {
		q.Writes = append(slices.Clip(p.Writes), writes...)
	}
	if net != nil {
		q.Network = *net
	}
	return &q
}

// Conflicts returns the first of paths that is one of hidden or holds
// one (a writable tree that contains hookd's own files), or "".
func Conflicts(paths, hidden []string) (path, hookdPath string) {
	for _, p := range paths {
		p = filepath.Clean(p)
		for _, h := range hidden {
			if within(h, p) {
				return p, h
			}
		}
	}
	return "", ""
}

// within reports whether path is root or lies under it (both clean).
func within(path, root string) bool {
	if root == "/" {
		return true
	}
	return path == root || strings.HasPrefix(path, root) && path[len(root)] == '/'
}

// Status says which containment a Sandbox gives on this machine.
type Status struct {
	Landlock   int    // the Landlock ABI in use; 0: none
	Files      string // how files are confined, or why they are not
	Network    string // how "no network" is enforced, or why it is not
	Hiding     string // how hookd's own files are kept from processes
	Tree       string // how the process tree is bounded
	Limits     string // which of limits: can be enforced
	Off        bool   // sandbox: off on purpose
	FilesOK    bool   // files are confined
	NetworkOK  bool   // no network can be enforced
	CgroupsOK  bool   // each process tree in its own cgroup
	LimitsOK   bool   // memory and pids limits can be enforced
	Problems   []string
	Delegation string // the cgroup directory hookd creates process cgroups in
}

// Contained reports whether both files and network can be confined: what
// a hook that takes untrusted input needs to run.
func (s Status) Contained() bool { return !s.Off && s.FilesOK && s.NetworkOK }

// Lines are the status as "name: value" lines for the log and hookd status.
func (s Status) Lines() []string {
	if s.Off {
		return []string{"sandbox: off (hookd.yaml sandbox: off): processes run with hookd's own rights"}
	}
	ll := "unavailable"
	if s.Landlock > 0 {
		ll = fmt.Sprintf("ABI %d", s.Landlock)
	}
	out := []string{
		"landlock: " + ll,
		"files: " + s.Files,
		"network: " + s.Network,
		"hookd files: " + s.Hiding,
		"process tree: " + s.Tree,
		"limits: " + s.Limits,
	}
	for _, p := range s.Problems {
		out = append(out, "warning: "+p)
	}
	return out
}
