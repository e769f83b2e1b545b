package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// started is a process under p that prints its first line of output,
// then waits for a line on its stdin before it goes on.
type started struct {
	cmd   *exec.Cmd
	proc  *Process
	in    io.WriteCloser
	out   *bufio.Reader
	rest  bytes.Buffer
	waitc chan struct{}
}

func startPaused(t *testing.T, sb *Sandbox, p *Policy, dir, script string) *started {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	proc, err := sb.Start(cmd, p)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	s := &started{cmd: cmd, proc: proc, in: in, out: bufio.NewReader(pr), waitc: make(chan struct{})}
	go func() { cmd.Wait(); pw.Close(); close(s.waitc) }()
	t.Cleanup(func() { proc.Release(false) })
	return s
}

// line reads the process's next line of output.
func (s *started) line(t *testing.T) string {
	t.Helper()
	l, err := s.out.ReadString('\n')
	if err != nil {
		t.Fatalf("read the process's output: %v (%q)", err, l)
	}
	return strings.TrimSpace(l)
}

// finish lets the process go on and returns the rest of its output.
func (s *started) finish(t *testing.T) string {
	t.Helper()
	io.WriteString(s.in, "go\n")
	s.in.Close()
	b, _ := io.ReadAll(s.out)
	<-s.waitc
	return string(b)
}

// TestReplacedHookdFileStaysHidden: the processes of one hook share a
// mount namespace, and a covered file that is replaced (an editor
// renames its new hookd.yaml over the old one) loses its cover in every
// namespace. Shown live first: a process already running in the
// namespace reads the new file once it is renamed in. A process started
// after the rename gets a namespace that covers the new file.
func TestReplacedHookdFileStaysHidden(t *testing.T) {
	sb := New(Options{})
	defer sb.Close()
	need(t, sb)
	if !sb.sys.mountNS {
		t.Skip("no mount namespace here (not root): hookd's files are kept out of the Landlock grants instead")
	}
	wd := t.TempDir()
	cfg := filepath.Join(wd, "hookd.yaml")
	os.WriteFile(cfg, []byte("OLD-CANARY\n"), 0o600)
	p := &Policy{Workdir: wd, Hidden: []string{cfg}, Key: "hook"}

	early := startPaused(t, sb, p, wd, "cat hookd.yaml; echo read; read x; cat hookd.yaml")
	if l := early.line(t); l != "read" {
		t.Fatalf("hookd.yaml was read before the rename: %q", l)
	}
	tmp := filepath.Join(wd, ".hookd.yaml.swp")
	os.WriteFile(tmp, []byte("NEW-CANARY\n"), 0o600)
	if err := os.Rename(tmp, cfg); err != nil {
		t.Fatal(err)
	}
	if out := early.finish(t); !strings.Contains(out, "NEW-CANARY") {
		t.Fatalf("live: the running process did not see the renamed file, so this test shows nothing: %q", out)
	}

	out, proc := run(t, sb, p, wd, "cat hookd.yaml")
	proc.Release(false)
	if strings.Contains(out, "CANARY") {
		t.Errorf("a process started after the rename read hookd.yaml: %q", out)
	}
}

// TestPrivateTmp: a process's TMPDIR is its own; one left empty is used
// again (mode reset), one with something in it is removed; the /tmp of
// one hook's processes is not another's.
func TestPrivateTmp(t *testing.T) {
	sb := New(Options{})
	defer sb.Close()
	need(t, sb)
	// Outside /tmp: a workdir under /tmp keeps the host's /tmp.
	wd, err := os.MkdirTemp(".", ".wd-")
	if err != nil {
		t.Fatal(err)
	}
	wd, _ = filepath.Abs(wd)
	t.Cleanup(func() { os.RemoveAll(wd) })
	a := &Policy{Workdir: wd, Key: "a"}
	b := &Policy{Workdir: wd, Key: "b"}
	tmpOf := func(p *Policy, script string) (string, string) {
		t.Helper()
		out, proc := run(t, sb, p, wd, "echo $TMPDIR; "+script)
		dir := proc.tmp
		proc.Release(false)
		first, rest, _ := strings.Cut(out, "\n")
		return dir, first + "|" + rest
	}
	d1, _ := tmpOf(a, "chmod 777 $TMPDIR")
	d2, out := tmpOf(a, "stat -c %a $TMPDIR; echo secret > $TMPDIR/f")
	if d2 != d1 {
		t.Errorf("an empty TMPDIR was not used again: %s, then %s", d1, d2)
	}
	if !strings.Contains(out, "|700") {
		t.Errorf("a TMPDIR used again kept the last process's mode: %q", out)
	}
	if exists(d2) {
		t.Errorf("a TMPDIR with a file in it was kept: %s", d2)
	}
	d3, _ := tmpOf(a, "true")
	if d3 == d2 {
		t.Errorf("a TMPDIR that held a file was handed out again")
	}

	held := startPaused(t, sb, a, wd, "echo A-CANARY > $TMPDIR/f; echo $TMPDIR; read x")
	tmpA := held.line(t)
	out, proc := run(t, sb, b, wd, "ls -a /tmp "+tmpA+" 2>&1 | head -20; cat "+tmpA+"/f 2>&1")
	proc.Release(false)
	held.finish(t)
	if sb.sys.mountNS && strings.Contains(out, "A-CANARY") {
		t.Errorf("hook b read hook a's TMPDIR: %q", out)
	}
}

// TestStaleTmpSwept: the temporary directories a hookd that is gone left
// behind are removed when the next one starts; a live one's are kept.
func TestStaleTmpSwept(t *testing.T) {
	gone := exec.Command("/bin/true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale, err := os.MkdirTemp("", fmt.Sprintf("hookd-tmp-%d-", gone.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(stale, "f"), []byte("x"), 0o600)
	live, err := os.MkdirTemp("", fmt.Sprintf("hookd-tmp-%d-", os.Getppid()))
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(live)
	sb := New(Options{})
	defer sb.Close()
	if exists(stale) {
		t.Errorf("the directory of a hookd that is gone was kept: %s", stale)
	}
	if !exists(live) {
		t.Errorf("the directory of a live process was removed: %s", live)
	}
}

// TestViewFollowsHostMounts: a hook's mount namespace outlives its
// processes, and what the host mounts after it was made (a disk plugged
// in) reaches the hook's next process, as does an unmount (a disk taken
// out is not held busy by hookd). Shown live: a namespace that is
// private to the host's (as the first cut of the views made them) sees
// neither.
func TestViewFollowsHostMounts(t *testing.T) {
	sb := New(Options{})
	defer sb.Close()
	need(t, sb)
	if !sb.sys.mountNS {
		t.Skip("no mount namespace here (not root)")
	}
	wd := t.TempDir()
	// A shared mount, as systemd makes the host's every mount (here the
	// root mount is private, and nothing could reach a namespace).
	if err := unix.Mount(wd, wd, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	defer unix.Unmount(wd, unix.MNT_DETACH)
	if err := unix.Mount("", wd, "", unix.MS_SHARED, ""); err != nil {
		t.Fatal(err)
	}
	disk := filepath.Join(wd, "disk")
	os.Mkdir(disk, 0o755)
	p := &Policy{Workdir: wd, Key: "hook"}
	out, proc := run(t, sb, p, wd, "cat disk/label 2>&1")
	proc.Release(false)
	if strings.Contains(out, "DISK-LABEL") {
		t.Fatalf("the label was there before the mount: %q", out)
	}
	// Live: a namespace private to the host's, made now.
	private := startPaused(t, sb, &Policy{Workdir: wd, Key: "private"}, wd, "echo ready; read x; cat disk/label 2>&1")
	if l := private.line(t); l != "ready" {
		t.Fatal(l)
	}
	v := sb.sys.views[fmt.Sprintf("%t\x00%s", false, "private")]
	if v == nil {
		t.Fatal("no view for key private")
	}
	if err := onLockedThread(func() error {
		if err := v.enter(); err != nil {
			return err
		}
		return unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
	}); err != nil {
		t.Fatal(err)
	}

	if err := unix.Mount("tmpfs", disk, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	mounted := true
	defer func() {
		if mounted {
			unix.Unmount(disk, unix.MNT_DETACH)
		}
	}()
	os.WriteFile(filepath.Join(disk, "label"), []byte("DISK-LABEL\n"), 0o644)
	if out := private.finish(t); strings.Contains(out, "DISK-LABEL") {
		t.Fatalf("live: a private namespace saw the host's new mount, so this test shows nothing: %q", out)
	}
	out, proc = run(t, sb, p, wd, "cat disk/label 2>&1")
	proc.Release(false)
	if !strings.Contains(out, "DISK-LABEL") {
		t.Errorf("the hook's next process does not see what the host mounted: %q", out)
	}
	if err := unix.Unmount(disk, 0); err != nil {
		t.Fatalf("the host cannot unmount what a hook's namespace saw: %v", err)
	}
	mounted = false
	out, proc = run(t, sb, p, wd, "cat disk/label 2>&1; grep -c ' "+disk+" ' /proc/self/mountinfo")
	proc.Release(false)
	if strings.Contains(out, "DISK-LABEL") || !strings.HasSuffix(strings.TrimSpace(out), "0") {
		t.Errorf("the hook's namespace kept what the host unmounted: %q", out)
	}
}
