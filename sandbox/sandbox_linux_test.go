package sandbox

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// run starts sh -c script under p (nil: unconfined) in dir and waits.
func run(t *testing.T, sb *Sandbox, p *Policy, dir, script string) (string, *Process) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	proc, err := sb.Start(cmd, p)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	_ = cmd.Wait()
	return out.String(), proc
}

// runEnded is run, with the process's tree released (killed, its
// cgroup and TMPDIR removed) before it returns the output.
func runEnded(t *testing.T, sb *Sandbox, p *Policy, dir, script string) string {
	t.Helper()
	out, proc := run(t, sb, p, dir, script)
	proc.Release(false)
	return out
}

// need skips t when this machine cannot give what it tests (trees: a
// cgroup per tree; limits: memory and pids limits too), or fails it
// under HOOKD_REQUIRE_SANDBOX (as testtool.NeedSandbox does; that
// package imports this one).
func need(t *testing.T, sb *Sandbox, what ...string) {
	t.Helper()
	st := sb.Status()
	missing := ""
	switch {
	case !st.Contained():
		missing = fmt.Sprintf("no containment here: %v", st.Lines())
	case slices.Contains(what, "trees") && !st.CgroupsOK:
		missing = "no cgroup delegation here: " + st.Tree
	case slices.Contains(what, "limits") && !st.LimitsOK:
		missing = "limits are not enforceable here: " + st.Limits
	}
	if missing == "" {
		return
	}
	if os.Getenv("HOOKD_REQUIRE_SANDBOX") != "" {
		t.Fatal(missing)
	}
	t.Skip(missing)
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// outsideTmp makes a directory outside /tmp, which a sandboxed process
// may see replaced by its private one, removed at the end of t: here,
// unless the checkout itself lies under /tmp, else in /var/tmp.
func outsideTmp(t *testing.T, prefix string) string {
	t.Helper()
	base := "."
	if cwd, err := os.Getwd(); err != nil || within(realPath(cwd), "/tmp") {
		base = "/var/tmp"
	}
	dir, err := os.MkdirTemp(base, prefix)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ = filepath.Abs(dir)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestWritesOnlyWhereDeclared(t *testing.T) {
	sb := New(Options{})
	defer sb.Close()
	need(t, sb)
	wd, declared := t.TempDir(), t.TempDir()
	// Outside /tmp, which a process may see replaced by its private one.
	outside := outsideTmp(t, ".canary-")
	script := "echo x > ok; echo x > " + outside + "/canary; echo x > " + declared + "/out; mkdir " + outside + "/d; ln -s /etc " + outside + "/l"

	// Live: without the sandbox the same script writes the canary.
	run(t, sb, nil, wd, script)
	if !exists(filepath.Join(outside, "canary")) {
		t.Fatal("the unconfined script did not write the canary: the test shows nothing")
	}
	os.RemoveAll(outside)
	os.Mkdir(outside, 0o755)

	out, proc := run(t, sb, &Policy{Workdir: wd, Writes: []string{declared}}, wd, script)
	proc.Release(false)
	if !exists(filepath.Join(wd, "ok")) || !exists(filepath.Join(declared, "out")) {
		t.Fatalf("the workdir or the declared tree was not writable:\n%s", out)
	}
	for _, p := range []string{"canary", "d", "l"} {
		if exists(filepath.Join(outside, p)) {
			t.Errorf("%s was made outside the declared paths:\n%s", p, out)
		}
	}
	if !strings.Contains(out, "Permission denied") {
		t.Errorf("no EACCES reported:\n%s", out)
	}
}

func TestHookdFilesHidden(t *testing.T) {
	sb := New(Options{})
	defer sb.Close()
	need(t, sb)
	wd := t.TempDir()
	state := filepath.Join(wd, ".hookd")
	os.Mkdir(state, 0o700)
	os.WriteFile(filepath.Join(state, "token"), []byte("TOKEN-CANARY"), 0o600)
	os.WriteFile(filepath.Join(wd, "hookd.yaml"), []byte("CONFIG-CANARY"), 0o600)
	hooks := filepath.Join(wd, "hooks.d")
	os.Mkdir(hooks, 0o755)
	script := "cat .hookd/token hookd.yaml; echo 'trigger: {every: 1s}' > hooks.d/evil.yaml; echo x >> hookd.yaml; " +
		"cat /proc/" + strconv.Itoa(os.Getpid()) + "/root" + state + "/token; rm -rf .hookd; mv hookd.yaml gone.yaml"
	out, _ := run(t, sb, nil, wd, script)
	if !strings.Contains(out, "TOKEN-CANARY") {
		t.Fatalf("unconfined, the script did not read the token: %s", out)
	}
	os.RemoveAll(wd)
	os.MkdirAll(state, 0o700)
	os.Mkdir(hooks, 0o755)
	os.WriteFile(filepath.Join(state, "token"), []byte("TOKEN-CANARY"), 0o600)
	os.WriteFile(filepath.Join(wd, "hookd.yaml"), []byte("CONFIG-CANARY"), 0o600)

	out, proc := run(t, sb, &Policy{Workdir: wd, Hidden: []string{state, filepath.Join(wd, "hookd.yaml"), hooks}}, wd, script)
	proc.Release(false)
	if strings.Contains(out, "CANARY") {
		t.Errorf("hookd's files were read:\n%s", out)
	}
	if exists(filepath.Join(hooks, "evil.yaml")) {
		t.Error("a hook file was written")
	}
	if b, _ := os.ReadFile(filepath.Join(wd, "hookd.yaml")); string(b) != "CONFIG-CANARY" {
		t.Errorf("hookd.yaml changed: %q", b)
	}
	if !exists(filepath.Join(state, "token")) {
		t.Error("the state directory was removed")
	}
}

func TestMissingHookdFileCannotBeMade(t *testing.T) {
	sb := New(Options{})
	defer sb.Close()
	need(t, sb)
	wd := t.TempDir()
	os.Mkdir(filepath.Join(wd, "sub"), 0o755)
	cfg := filepath.Join(wd, "hookd.yaml")
	out, proc := run(t, sb, &Policy{Workdir: wd, Hidden: []string{cfg}}, wd, "echo 'sandbox: off' > hookd.yaml; echo x > sub/ok")
	proc.Release(false)
	if exists(cfg) {
		t.Errorf("the process made hookd.yaml:\n%s", out)
	}
	if !exists(filepath.Join(wd, "sub", "ok")) {
		t.Errorf("the workdir's other entries stopped being writable:\n%s", out)
	}
}

// listener accepts on loopback and counts connections: count says how
// many so far; more waits a while for one past before (a connection
// still in the backlog is accepted within the wait).
func listener(t *testing.T) (port int, count func() int, more func(before int) bool) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			n.Add(1)
		}
	}()
	count = func() int { return int(n.Load()) }
	more = func(before int) bool {
		deadline := time.Now().Add(500 * time.Millisecond)
		for count() == before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		return count() > before
	}
	return ln.Addr().(*net.TCPAddr).Port, count, more
}

func TestNetwork(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash (Debian package bash)")
	}
	sb := New(Options{})
	defer sb.Close()
	need(t, sb)
	port, count, more := listener(t)
	wd := t.TempDir()
	script := "bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(port) + "' && echo CONNECTED"
	for _, c := range []struct {
		name string
		p    *Policy
		want bool
	}{
		{"unconfined", nil, true},
		{"none", &Policy{Workdir: wd, Key: "h"}, false},
		{"all", &Policy{Workdir: wd, Network: Network{All: true}}, true},
		{"port", &Policy{Workdir: wd, Network: Network{Ports: []uint16{uint16(port)}}}, true},
		{"other port", &Policy{Workdir: wd, Network: Network{Ports: []uint16{1}}}, false},
	} {
		before := count()
		out, proc := run(t, sb, c.p, wd, script)
		if c.p != nil {
			proc.Release(false)
		}
		// more waits for the accept of this case's connection even when the
		// output says it connected, so that a late accept is not counted
		// for the next case.
		accepted := more(before)
		if connected := strings.Contains(out, "CONNECTED") || accepted; connected != c.want {
			t.Errorf("%s: connected %v, want %v:\n%s", c.name, connected, c.want, out)
		}
	}
	// UDP (and so DNS) is closed too without network.
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	udp := "echo hi > /dev/udp/127.0.0.1/" + strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)
	_, proc := run(t, sb, &Policy{Workdir: wd, Key: "h"}, wd, "bash -c '"+udp+"'")
	proc.Release(false)
	pc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, _, err := pc.ReadFrom(make([]byte, 10)); err == nil {
		t.Error("a datagram left a process without network")
	}
}

func TestTreeEndsWithIt(t *testing.T) {
	sb := New(Options{})
	defer sb.Close()
	need(t, sb, "trees")
	wd := t.TempDir()
	out, proc := run(t, sb, &Policy{Workdir: wd}, wd, "setsid sleep 300 >/dev/null 2>&1 & (sleep 301 >/dev/null 2>&1 &) ; sleep 0.1; echo started")
	left := proc.Pids()
	if len(left) < 2 {
		t.Fatalf("the setsid'd and double-forked sleeps are not in the tree: %v\n%s", left, out)
	}
	proc.Release(false)
	for _, pid := range left {
		if syscall.Kill(pid, 0) == nil {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			if !strings.Contains(string(b), ") Z ") {
				t.Errorf("pid %d outlived the step: %s", pid, b)
			}
		}
	}
}

func TestNoSignalsOut(t *testing.T) {
	sb := New(Options{})
	defer sb.Close()
	need(t, sb)
	victim := exec.Command("sleep", "30")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer victim.Process.Kill()
	wd := t.TempDir()
	out, proc := run(t, sb, &Policy{Workdir: wd}, wd, "kill "+strconv.Itoa(victim.Process.Pid)+" && echo KILLED")
	proc.Release(false)
	if strings.Contains(out, "KILLED") {
		t.Errorf("a contained process signalled one outside: %s", out)
	}
}

func TestContainsPeer(t *testing.T) {
	sb := New(Options{})
	defer sb.Close()
	need(t, sb)
	wd := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", "sleep 5")
	cmd.Dir, cmd.Env = wd, []string{"PATH=/usr/bin:/bin"}
	proc, err := sb.Start(cmd, &Policy{Workdir: wd})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { proc.Kill(); cmd.Wait(); proc.Release(false) }()
	if !sb.Contains(cmd.Process.Pid) {
		t.Error("the contained process is not recognised")
	}
	if sb.Contains(os.Getpid()) {
		t.Error("hookd itself is taken for a contained process")
	}
}

func TestPidsLimit(t *testing.T) {
	sb := New(Options{})
	defer sb.Close()
	need(t, sb, "limits")
	wd := t.TempDir()
	out, proc := run(t, sb, &Policy{Workdir: wd, Limits: Limits{Pids: 5}}, wd, "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 1 & done; wait; echo done")
	proc.Release(false)
	if !strings.Contains(strings.ToLower(out), "fork") && !strings.Contains(out, "Resource temporarily unavailable") {
		t.Errorf("ten processes started under pids: 5:\n%s", out)
	}
}

// TestRootLosesCapabilities: a process started by a root hookd can
// neither undo the hiding (umount), nor leave its namespaces (nsenter),
// nor read the non-dumpable daemon's environment.
func TestRootLosesCapabilities(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a non-root hookd has no capabilities to lose")
	}
	sb := New(Options{})
	defer sb.Close()
	need(t, sb)
	// What /proc/PID/environ shows of the daemon: its initial environment.
	environ, err := os.ReadFile("/proc/self/environ")
	if err != nil || len(environ) == 0 {
		t.Skip("no environment to steal")
	}
	envCanary := strings.SplitN(string(environ), "\x00", 2)[0]
	// hookd makes itself non-dumpable (cmd/hookd hideEnviron); so does the test.
	if err := unixPrctlDumpable(0); err != nil {
		t.Fatal(err)
	}
	defer unixPrctlDumpable(1)
	wd := t.TempDir()
	state := filepath.Join(wd, ".hookd")
	os.Mkdir(state, 0o700)
	os.WriteFile(filepath.Join(state, "token"), []byte("TOKEN-CANARY"), 0o600)
	pid := strconv.Itoa(os.Getpid())
	script := "umount " + state + "; cat " + state + "/token; nsenter -t 1 -n -m cat " + state + "/token; " +
		"tr '\\0' '\\n' < /proc/" + pid + "/environ; grep Cap /proc/self/status"
	out, proc := run(t, sb, &Policy{Workdir: wd, Hidden: []string{state}}, wd, script)
	proc.Release(false)
	if strings.Contains(out, "CANARY") || strings.Contains(out, envCanary) {
		t.Errorf("a contained root process reached hookd's secrets:\n%s", out)
	}
	if !strings.Contains(out, "CapEff:\t0000000000000000") {
		t.Errorf("capabilities left:\n%s", out)
	}
}

func unixPrctlDumpable(v uintptr) error {
	_, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, v, 0)
	if e != 0 {
		return e
	}
	return nil
}

// TestCgroupReuse: an empty cgroup is kept for the next process tree,
// and one that was killed is not (a process cloned into a cgroup after a
// cgroup.kill would be killed at birth): every run after either still
// runs to its end.
func TestCgroupReuse(t *testing.T) {
	sb := New(Options{})
	defer sb.Close()
	need(t, sb, "trees")
	wd := t.TempDir()
	p := &Policy{Workdir: wd, Network: Network{All: true}}
	var dirs []string
	for i, script := range []string{"echo ran", "echo ran", "sleep 300 >/dev/null 2>&1 & echo ran", "echo ran", "echo ran"} {
		out, proc := run(t, sb, p, wd, script)
		dirs = append(dirs, proc.cg.dir)
		proc.Release(false)
		if !strings.Contains(out, "ran") {
			t.Errorf("run %d (%q) did not run: %q", i, script, out)
		}
	}
	if dirs[1] != dirs[0] {
		t.Errorf("the empty cgroup was not reused: %v", dirs)
	}
	if dirs[3] == dirs[2] {
		t.Errorf("a killed cgroup was reused: %v", dirs)
	}
}

// TestReaperWithoutCgroups: where no cgroup can be had, each tree runs
// under a reaper (this test binary, started again), and what the tree
// leaves behind — a setsid'd and a double-forked sleep — ends with it,
// at its own end and when it is killed. Shown live first: without the
// reaper, the setsid'd sleep outlives its tree.
func TestReaperWithoutCgroups(t *testing.T) {
	sb := New(Options{})
	defer sb.Close()
	need(t, sb)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sb.sys.cg = nil // as on a machine without cgroup delegation
	wd := t.TempDir()
	script := "setsid sleep 300 >/dev/null 2>&1 & echo $! > a.pid; (sleep 301 >/dev/null 2>&1 & echo $! > b.pid); sleep 0.2"
	alive := func(name string) (int, bool) {
		b, _ := os.ReadFile(filepath.Join(wd, name))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid <= 0 || syscall.Kill(pid, 0) != nil {
			return pid, false
		}
		st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return pid, !strings.Contains(string(st), ") Z ")
	}

	sb.sys.reaperExe = ""
	_, proc := run(t, sb, &Policy{Workdir: wd}, wd, script)
	proc.Release(false)
	pid, ok := alive("a.pid")
	if !ok {
		t.Fatal("without a reaper the setsid'd sleep did not outlive its tree: the test shows nothing")
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if pid, ok := alive("b.pid"); ok {
		syscall.Kill(pid, syscall.SIGKILL)
	}

	sb.sys.reaperExe = exe
	out, proc := run(t, sb, &Policy{Workdir: wd}, wd, script+"; echo done")
	proc.Release(false)
	if !strings.Contains(out, "done") || !strings.Contains(proc.Containment(), "reaper") {
		t.Fatalf("the tree did not run under its reaper: %q (%s)", out, proc.Containment())
	}
	for _, f := range []string{"a.pid", "b.pid"} {
		if pid, ok := alive(f); ok {
			t.Errorf("%s: %d outlived its tree", f, pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}

	// Killed while it runs (a timeout).
	cmd := exec.Command("/bin/sh", "-c", script+"; sleep 300")
	cmd.Dir, cmd.Env = wd, []string{"PATH=/usr/bin:/bin"}
	proc, err = sb.Start(cmd, &Policy{Workdir: wd})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := alive("b.pid"); ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	proc.Kill()
	_ = cmd.Wait()
	proc.Release(false)
	for _, f := range []string{"a.pid", "b.pid"} {
		if pid, ok := alive(f); ok {
			t.Errorf("killed tree: %s: %d outlived it", f, pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestSandboxesKeepTheirTrees: a second Sandbox in the process (a
// status probe while a daemon runs, or two daemons built in one test
// binary) has cgroups of its own: making and closing it leaves the
// first one's process trees running.
func TestSandboxesKeepTheirTrees(t *testing.T) {
	first := New(Options{})
	defer first.Close()
	need(t, first, "trees")
	wd := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", "sleep 30")
	cmd.Dir, cmd.Env = wd, []string{"PATH=/usr/bin:/bin"}
	proc, err := first.Start(cmd, &Policy{Workdir: wd})
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() { proc.Kill(); <-exited; proc.Release(false) }()

	second := New(Options{})
	second.Close()
	select {
	case <-exited:
		t.Fatal("making and closing a second Sandbox killed the first one's process")
	case <-time.After(300 * time.Millisecond):
	}
	if !first.Contains(cmd.Process.Pid) {
		t.Error("the first Sandbox lost its process")
	}
}
