package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A hookd sweeps away, 30 s after it made its sandbox (sandbox's
// staleSweepDelay), the cgroups (hookd-PID) of the hookd processes that
// are gone, with what still runs in them, from the parent cgroup its own
// are made in. The hookd processes of the tests, the daemons the tests
// run in this process, and those of any other test binary in the same
// cgroup would share that parent: a sweep by any of them would kill what
// the steps of a daemon a test killed with SIGKILL had left running,
// before that test's restarted daemon could reap it and say so in the
// run's record. So each hookd process a test starts runs in a cgroup of
// its own, as a daemon of its own under systemd does, and sees no other's
// cgroups.

// cgroupSeq numbers the cgroups the tests make.
var cgroupSeq atomic.Int64

// testCgroups is where the tests' cgroups are made: a cgroup2 directory
// beside this process's own, or "" where there is none this process can
// write to (its hookd processes then share this process's cgroup).
var testCgroups = sync.OnceValue(func() string {
	mount := cgroup2Mount()
	b, err := os.ReadFile("/proc/self/cgroup")
	if mount == "" || err != nil {
		return ""
	}
	own := ""
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			own = p
		}
	}
	if own == "" {
		return ""
	}
	dir := filepath.Join(mount, own)
	if filepath.Base(dir) == fmt.Sprintf("hookd-%d-self", os.Getpid()) {
		dir = filepath.Dir(dir) // the leaf an in-process daemon moved this process into
	}
	return dir
})

// cgroup2Mount is where the cgroup2 hierarchy is mounted, or "".
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPER
		fields := strings.Fields(sc.Text())
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4]
			}
		}
	}
	return ""
}

// placeInCgroup makes cmd, a hookd process of e about to start, start in
// a new cgroup of its own (below one of e's, removed with what is left
// in it when the test ends), where the machine lets the test make one.
// e's cgroup gives it the controllers e's parent offers, so that hookd
// can set a hook's limits there as it would in the test's own cgroup
// (the process's own cgroup has none enabled: it holds the process).
// Call done once cmd has started; after its end, done removes the
// cgroup too, if nothing is left in it.
func (e *env) placeInCgroup(cmd *exec.Cmd) (done func()) {
	e.cgMu.Lock()
	defer e.cgMu.Unlock()
	if e.cgroup == "" {
		base := testCgroups()
		if base == "" {
			return func() {}
		}
		dir := filepath.Join(base, fmt.Sprintf("hooktest-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return func() {} // not ours to write: the processes share this one's cgroup
		}
		e.cgroup = dir
		e.t.Cleanup(func() { removeCgroup(e.t, dir) })
		delegate(dir)
	}
	e.cgSeq++
	dir := filepath.Join(e.cgroup, fmt.Sprintf("p%d", e.cgSeq))
	if err := os.Mkdir(dir, 0o755); err != nil {
		e.t.Errorf("make the cgroup of a hookd process: %v", err)
		return func() {}
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		e.t.Errorf("open the cgroup of a hookd process: %v", err)
		return func() {}
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	return func() {
		syscall.Close(fd)
		if cmd.ProcessState != nil && !populated(dir) {
			_ = syscall.Rmdir(dir) // a command that ended: its cgroup goes now, unless it made some
		}
	}
}

// delegate enables in the new cgroup dir the controllers its parent gives
// it, so that dir's children get them.
func delegate(dir string) {
	offered, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	for _, c := range strings.Fields(string(offered)) {
		_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0)
	}
}

// removeCgroup kills every process left in the cgroup dir and below it,
// then removes the directories, deepest first.
func removeCgroup(t *testing.T, dir string) {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		t.Logf("kill what is left in the test's cgroup %s: %v", dir, err)
	}
	deadline := time.Now().Add(waitLong)
	for populated(dir) && time.Now().Before(deadline) {
		time.Sleep(pollStep)
	}
	var dirs []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syscall.Rmdir(dirs[i]); err != nil && !os.IsNotExist(err) {
			t.Logf("remove the test's cgroup %s: %v", dirs[i], err)
		}
	}
}

// populated reports whether a process is left in cgroup dir or below.
func populated(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	return err == nil && strings.Contains(string(b), "populated 1")
}
