//go:build linux

package main

import "golang.org/x/sys/unix"

// hideEnviron makes the hookd process not dumpable, as ssh-agent does:
// /proc/PID/environ (which holds hookd's credentials however scrubbed its
// children's environments are), /proc/PID/mem and ptrace then need root,
// so a step, tool, handler or MCP server running as hookd's user cannot
// read them. It also turns off core dumps of hookd. Children are dumpable
// again once they exec.
func hideEnviron() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
