package process

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/sandbox"
)

// Process is one process of a command's group that was still running
// when the command itself had exited.
type Process struct {
	PID  int
	Name string // the command name the kernel keeps (/proc/PID/comm)
}

func (p Process) String() string { return fmt.Sprintf("%d (%s)", p.PID, p.Name) }

// procStat is what /proc/PID/stat says of one process.
type procStat struct {
	pid, pgid int
	state     byte
	start     uint64 // clock ticks after boot
	name      string
}

// live reports whether the process runs: a zombie only waits to be reaped
// by whoever inherited it.
func (p procStat) live() bool { return p.state != 'Z' && p.state != 'X' }

// readStat parses /proc/PID/stat.
func readStat(pid int) (procStat, error) {
	var buf [1024]byte
	var path [32]byte
	b, err := readProcFile(string(strconv.AppendInt(append(path[:0], "/proc/"...), int64(pid), 10))+"/stat", buf[:0])
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// readProcFile appends the content of a small /proc file to buf with one
// open, reads and a close. os.ReadFile also stats the file and tries to
// register it with the poller: twice the system calls, for a file read
// after every command a step starts. A read that returns less than it
// had room for and ends the content with a newline read it all: the
// kernel makes such a file whole at the first read, so the read that
// would return 0 is not made.
func readProcFile(path string, buf []byte) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return buf, nil
		}
		short := n < cap(buf)-len(buf)
		buf = buf[:len(buf)+n]
		if short && buf[len(buf)-1] == '\n' {
			return buf, nil
		}
	}
}

// parseStat parses the content of /proc/PID/stat: "pid (comm) state ppid
// pgrp ..."; comm may hold spaces and parentheses, so fields are counted
// from the last ')'.
func parseStat(b []byte) (procStat, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, errors.New("parse /proc stat: no command name")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return procStat{}, fmt.Errorf("parse /proc stat: pid: %w", err)
	}
	// Field 3 (state), field 5 (pgrp) and field 22 (starttime), counted
	// from the first after the name, without splitting the rest.
	var state, pgrp, startField []byte
	rest := b[end+1:]
	for n := 3; n <= 22; n++ {
		var f []byte
		f, rest = nextField(rest)
		if f == nil {
			return procStat{}, errors.New("parse /proc stat: too few fields")
		}
		switch n {
		case 3:
			state = f
		case 5:
			pgrp = f
		case 22:
			startField = f
		}
	}
	if len(state) != 1 {
		return procStat{}, errors.New("parse /proc stat: state is not one letter")
	}
	pgid, err := strconv.Atoi(string(pgrp))
	if err != nil {
		return procStat{}, fmt.Errorf("parse /proc stat: pgrp: %w", err)
	}
	start, err := strconv.ParseUint(string(startField), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("parse /proc stat: starttime: %w", err)
	}
	return procStat{pid: pid, pgid: pgid, state: state[0], start: start, name: string(b[open+1 : end])}, nil
}

// nextField returns the first field of b separated by white space, and
// what follows it; nil when b has none.
func nextField(b []byte) (field, rest []byte) {
	i := 0
	for i < len(b) && isStatSpace(b[i]) {
		i++
	}
	j := i
	for j < len(b) && !isStatSpace(b[j]) {
		j++
	}
	if i == j {
		return nil, nil
	}
	return b[i:j], b[j:]
}

func isStatSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' }

// groupMembers lists the live processes of group pgid. ok is false when
// /proc cannot be read (not Linux): then the group's members are unknown.
func groupMembers(pgid int) (members []procStat, ok bool) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, false
	}
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.pgid != pgid || !st.live() {
			continue
		}
		members = append(members, st)
	}
	return members, true
}

// groupAlive reports whether group pgid has a live process, and its live
// members when /proc tells them.
func groupAlive(pgid int) (bool, []procStat) {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false, nil // the common case: nothing is left, not even a zombie
	}
	members, ok := groupMembers(pgid)
	if !ok {
		return true, nil // a signal can reach the group; assume it lives
	}
	return len(members) > 0, members
}

// sweepGroup ends what is left of process group pgid once its leader is
// reaped: SIGTERM to the group, then SIGKILL when something still runs
// after grace. It returns the processes it found running.
func sweepGroup(pgid int, grace time.Duration) []Process {
	alive, members := groupAlive(pgid)
	if !alive {
		return nil
	}
	found := make([]Process, len(members))
	for i, m := range members {
		found[i] = Process{PID: m.pid, Name: m.name}
	}
	if len(found) == 0 {
		found = []Process{{PID: -1, Name: "unknown"}} // no /proc: the group answered a signal
	}
	if !signalUntilGone(pgid, syscall.SIGTERM, grace) {
		signalUntilGone(pgid, syscall.SIGKILL, grace)
	}
	return found
}

// signalUntilGone sends sig to group pgid and waits up to d for it to have
// no live process left; it reports whether it has none.
func signalUntilGone(pgid int, sig syscall.Signal, d time.Duration) bool {
	_ = syscall.Kill(-pgid, sig)
	deadline := time.Now().Add(d)
	for {
		if alive, _ := groupAlive(pgid); !alive {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// listGroup returns the live processes of group pgid, for a report.
func listGroup(pgid int) []Process {
	_, members := groupAlive(pgid)
	out := make([]Process, len(members))
	for i, m := range members {
		out[i] = Process{PID: m.pid, Name: m.name}
	}
	return out
}

// maxStartWindow is the widest window of start ticks a group is recorded
// with (one second at USER_HZ 100): procGroupOf reads the leader's exact
// tick from /proc when the fork took longer, and ReapGroup takes a wider
// window for one hookd did not record (a forged journal slot with
// [1, 2^64-1] would otherwise admit any process as the leader).
const maxStartWindow = 100

// leaderStart reports whether a process that started at tick could be the
// leader recorded in g: its tick, or one of its window's. A window upside
// down or wider than maxStartWindow admits none.
func leaderStart(g engine.ProcGroup, tick uint64) bool {
	if g.StartEnd == 0 {
		return tick == g.Start
	}
	if g.StartEnd < g.Start || g.StartEnd-g.Start > maxStartWindow {
		return false
	}
	return g.Start <= tick && tick <= g.StartEnd
}

// bootID names the current boot of the machine ("" when unknown), so that
// a process group recorded before a reboot is never taken for a live one.
var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// procGroupOf describes the group led by pid, just started, for the run
// record: enough for a later hookd to tell it from a reused pid. before
// is bootTick read just before the fork (ok false: unknown); the leader's
// start is then bounded by it and a bootTick read now, and /proc is not
// read, unless the window is wider than maxStartWindow. The caller has not
// reaped the leader yet.
func procGroupOf(pid int, before uint64, ok bool) engine.ProcGroup {
	g := engine.ProcGroup{PGID: pid, Boot: bootID()}
	if after, ok2 := bootTick(); ok && ok2 && before > 0 && after >= before && after-before <= maxStartWindow {
		g.Start, g.StartEnd = before, after
		return g
	}
	if st, err := readStat(pid); err == nil {
		g.Start = st.start
	}
	return g
}

// ReapGroup kills what is left of a process group a previous hookd
// recorded for a run (it died without ending its steps), and returns the
// processes it killed ("4242 (sleep)"); it is the daemon's
// engine.Config.Reap. A group from another boot, or whose leader's pid now
// names another process (same pid, a start time other than recorded), is
// left alone; with the leader gone, the members must have started no
// earlier than it did (an older member means the group is another one).
// Without /proc nothing is killed: the group cannot be told from a reused
// one.
//
// A group recorded with a window of start ticks [Start, StartEnd] (the
// clock read before and after the fork, procGroupOf) is as safe from a
// reused pid as one recorded with the leader's exact tick: the kernel
// takes the leader's start time in fork, so its tick is in the window.
// Any other process that has pid PGID now either started before the
// window, and then had died before the fork gave the pid to the leader
// (it cannot be there now), or started after the leader was reaped,
// which hookd does only after reading StartEnd: its tick is StartEnd at
// the earliest. So the one impostor the window admits started in tick
// StartEnd itself, after the leader exited and was reaped and the kernel
// had handed out every other pid (pids are allocated cyclically) — the
// same impostor the exact tick admits (one started in the leader's own
// tick after all that), within one tick (10 ms), and as impossible.
// That holds for a window hookd recorded; one wider than maxStartWindow
// (or upside down) is not, and its group is left alone: a forged window
// [1, 2^64-1] must not make any process with pid PGID the leader.
func ReapGroup(g engine.ProcGroup) ([]string, error) {
	if g.PGID <= 1 {
		return nil, fmt.Errorf("reap process group %d: not a group a step leads", g.PGID)
	}
	if g.Boot == "" || g.Boot != bootID() || g.Start == 0 {
		return nil, nil
	}
	if g.StartEnd != 0 && (g.StartEnd < g.Start || g.StartEnd-g.Start > maxStartWindow) {
		return nil, nil // not a window hookd recorded
	}
	if leader, err := readStat(g.PGID); err == nil && !leaderStart(g, leader.start) {
		return nil, nil // the pid was reused: not our group
	}
	members, ok := groupMembers(g.PGID)
	if !ok || len(members) == 0 {
		return nil, nil
	}
	out := make([]string, len(members))
	for i, m := range members {
		if m.start < g.Start {
			// Older than the leader recorded: not its child, so not the
			// group recorded. Leave it all alone.
			return nil, nil
		}
		out[i] = Process{PID: m.pid, Name: m.name}.String()
	}
	if !signalUntilGone(g.PGID, syscall.SIGKILL, DefaultKillGrace) {
		return out, fmt.Errorf("reap process group %d: still running %s after SIGKILL", g.PGID, DefaultKillGrace)
	}
	return out, nil
}

// killTree kills the command's whole tree: its cgroup when it has one,
// else its process group.
func killTree(proc *sandbox.Process, pgid int) {
	if proc != nil {
		proc.Kill() // its cgroup, or its reaper, or its group
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// treeMembers lists the live processes of a contained command's cgroup.
func treeMembers(proc *sandbox.Process) []Process {
	var out []Process
	for _, pid := range proc.Pids() {
		if st, err := readStat(pid); err == nil && st.live() {
			out = append(out, Process{PID: pid, Name: st.name})
		}
	}
	return out
}

// sweepTree ends what is left of a contained command's tree once its
// leader is reaped: SIGTERM to every process of its cgroup, then, after
// grace, cgroup.kill. It returns the processes it found running.
func sweepTree(proc *sandbox.Process, grace time.Duration) []Process {
	found := treeMembers(proc)
	if len(found) == 0 {
		return nil
	}
	proc.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for len(treeMembers(proc)) > 0 {
		if time.Now().After(deadline) {
			proc.Kill()
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return found
}
