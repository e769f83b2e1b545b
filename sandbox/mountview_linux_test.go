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
	"time"

	"golang.org/x/sys/unix"
)

// newMountNS returns a sandbox that hides hookd's files with a mount
// namespace, closed when t ends; t skips where there is none (not root:
// hookd's files are kept out of the Landlock grants instead).
func newMountNS(t *testing.T) *Sandbox {
	t.Helper()
	sb := New(Options{})
	t.Cleanup(func() { sb.Close() })
	need(t, sb)
	if !sb.sys.mountNS {
		t.Skip("no mount namespace here (not root): hookd's files are kept out of the Landlock grants instead")
	}
	return sb
}

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
	sb := newMountNS(t)
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

	out := runEnded(t, sb, p, wd, "cat hookd.yaml")
	if strings.Contains(out, "CANARY") {
		t.Errorf("a process started after the rename read hookd.yaml: %q", out)
	}
}

// TestHiddenWhateverTheInode: a covered file removed and made again
// (ext4 hands the new file the old one's inode number, which no identity
// taken on the host tells apart), or a hookd path made after the hook's
// namespace, is not readable by the hook's next process.
func TestHiddenWhateverTheInode(t *testing.T) {
	sb := newMountNS(t)
	wd := t.TempDir()
	cfg := filepath.Join(wd, "hookd.yaml")
	state := filepath.Join(wd, ".hookd")
	os.WriteFile(cfg, []byte("FIRST-CANARY\n"), 0o600)
	db := filepath.Join(state, "hookd.db")
	os.Mkdir(state, 0o700)
	os.WriteFile(db, []byte("DB-CANARY"), 0o600)
	// The database before the state directory that holds it, as hookd
	// lists them: covered first, then no longer there at all.
	p := &Policy{Workdir: wd, Hidden: []string{cfg, db, state}, Key: "hook"}
	out := runEnded(t, sb, p, wd, "cat .hookd/hookd.db; echo ran")
	if !strings.Contains(out, "ran") || strings.Contains(out, "CANARY") {
		t.Fatalf("a process with nested covers: %q", out)
	}
	os.RemoveAll(state)
	for i := range 3 {
		os.Remove(cfg)
		os.WriteFile(cfg, fmt.Appendf(nil, "AGAIN-CANARY-%d\n", i), 0o600)
		out := runEnded(t, sb, p, wd, "cat hookd.yaml")
		if strings.Contains(out, "CANARY") {
			t.Errorf("after hookd.yaml was removed and made again (%d), a process read it: %q", i, out)
		}
	}
	os.Mkdir(state, 0o700)
	os.WriteFile(filepath.Join(state, "token"), []byte("TOKEN-CANARY"), 0o600)
	out = runEnded(t, sb, p, wd, "cat .hookd/token")
	if strings.Contains(out, "CANARY") {
		t.Errorf("a state directory made after the namespace was read: %q", out)
	}
}

// TestPrivateTmp: each process gets a TMPDIR of its own, made fresh and
// removed with its contents when the process has ended; the /tmp of one
// hook's processes is not another's.
func TestPrivateTmp(t *testing.T) {
	sb := New(Options{})
	defer sb.Close()
	need(t, sb)
	wd := outsideTmp(t, ".wd-") // a workdir under /tmp keeps the host's /tmp
	a := &Policy{Workdir: wd, Key: "a"}
	b := &Policy{Workdir: wd, Key: "b"}
	out, p1 := run(t, sb, a, wd, "echo left > $TMPDIR/f; chmod 777 $TMPDIR; echo $TMPDIR")
	d1 := p1.tmp
	p1.Release(false)
	if exists(d1) {
		t.Errorf("a TMPDIR was kept after its process: %s (%q)", d1, out)
	}
	out, p2 := run(t, sb, a, wd, "ls -A $TMPDIR; stat -c %a $TMPDIR")
	p2.Release(false)
	if p2.tmp == d1 || strings.Contains(out, "f\n") || !strings.Contains(out, "700") {
		t.Errorf("the next process's TMPDIR is not a fresh one: %s after %s: %q", p2.tmp, d1, out)
	}

	held := startPaused(t, sb, a, wd, "echo A-CANARY > $TMPDIR/f; echo $TMPDIR; read x")
	tmpA := held.line(t)
	out = runEnded(t, sb, b, wd, "ls -a /tmp "+tmpA+" 2>&1 | head -20; cat "+tmpA+"/f 2>&1")
	held.finish(t)
	if sb.sys.mountNS && strings.Contains(out, "A-CANARY") {
		t.Errorf("hook b read hook a's TMPDIR: %q", out)
	}
}

// TestTmpDirSwappedForALink: a TMPDIR replaced by a link to another
// directory while its process runs (by something with the right to
// write its parent) steers nothing of hookd's: at the end the link is
// removed, not what it points to, the target's mode is not touched, and
// the next process gets a new directory, granted by the descriptor of
// the directory made, not by a name.
func TestTmpDirSwappedForALink(t *testing.T) {
	sb := New(Options{})
	defer sb.Close()
	need(t, sb)
	wd := t.TempDir()
	target := outsideTmp(t, ".target-")
	os.WriteFile(filepath.Join(target, "keep"), []byte("x"), 0o600)
	os.Chmod(target, 0o755)
	p := &Policy{Workdir: wd, Key: "a"}
	held := startPaused(t, sb, p, wd, "echo ready; read x")
	if l := held.line(t); l != "ready" {
		t.Fatal(l)
	}
	tmp := held.proc.tmp
	if err := os.Rename(tmp, tmp+".moved"); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp + ".moved")
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	held.finish(t)
	held.proc.Release(false)
	if _, err := os.Stat(filepath.Join(target, "keep")); err != nil {
		t.Errorf("removing the TMPDIR removed what its link pointed to: %v", err)
	}
	if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the link's target changed: %v %v", fi.Mode(), err)
	}
	out := runEnded(t, sb, p, wd, "echo x > "+target+"/escaped 2>&1; echo done")
	if exists(filepath.Join(target, "escaped")) {
		t.Errorf("a process wrote where the swapped link pointed: %q", out)
	}
}

// TestStaleTmpSwept: the temporary directories of a hookd that is gone
// (no one holds their lock) are removed when the next one starts; a live
// one's are kept, whatever PID namespace it runs in, and a link of that
// name is not followed.
func TestStaleTmpSwept(t *testing.T) {
	stale, err := os.MkdirTemp("", tmpRootPrefix)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(stale, "f"), []byte("x"), 0o600)
	live, err := os.MkdirTemp("", tmpRootPrefix)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(live)
	fd, err := unix.Open(live, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	os.WriteFile(filepath.Join(target, "keep"), []byte("x"), 0o600)
	link := filepath.Join(os.TempDir(), tmpRootPrefix+"link-"+filepath.Base(target))
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(link)

	sb := New(Options{})
	defer sb.Close()
	if exists(stale) {
		t.Errorf("the directory of a hookd that is gone was kept: %s", stale)
	}
	if !exists(live) {
		t.Errorf("the directory of a live hookd was removed: %s", live)
	}
	if !exists(filepath.Join(target, "keep")) {
		t.Errorf("the sweep followed a link")
	}
}

// TestViewRemadeAfterHostMount: a hook's mount namespace is private, so a
// disk the host mounts after it was made does not reach a process that
// runs in it (the live part), but the hook's next process sees it, in a
// namespace made again; and once the host unmounts it, the next process
// does not see it.
func TestViewRemadeAfterHostMount(t *testing.T) {
	sb := newMountNS(t)
	wd := t.TempDir()
	disk := filepath.Join(wd, "disk")
	os.Mkdir(disk, 0o755)
	p := &Policy{Workdir: wd, Key: "hook"}
	early := startPaused(t, sb, p, wd, "echo ready; read x; cat disk/label 2>&1")
	if l := early.line(t); l != "ready" {
		t.Fatal(l)
	}
	gen := sb.sys.mountGen.load()
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
	if out := early.finish(t); strings.Contains(out, "DISK-LABEL") {
		t.Fatalf("a running process saw the host's new mount: the namespace is not private: %q", out)
	}
	// hookd's watch of its mount table runs on its own goroutine.
	for deadline := time.Now().Add(10 * time.Second); sb.sys.mountGen.load() == gen; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the mount table's change was not seen")
		}
	}
	out := runEnded(t, sb, p, wd, "cat disk/label 2>&1")
	if !strings.Contains(out, "DISK-LABEL") {
		t.Errorf("the hook's next process does not see what the host mounted: %q", out)
	}
	gen = sb.sys.mountGen.load()
	if err := unix.Unmount(disk, 0); err != nil {
		t.Fatalf("unmount: %v", err)
	}
	mounted = false
	for deadline := time.Now().Add(10 * time.Second); sb.sys.mountGen.load() == gen; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the unmount was not seen")
		}
	}
	out = runEnded(t, sb, p, wd, "cat disk/label 2>&1")
	if strings.Contains(out, "DISK-LABEL") {
		t.Errorf("the hook's next process still sees what the host unmounted: %q", out)
	}
}

// TestHideWhileReplaced: a hidden file replaced by a rename while a
// view is made (a user saving hookd.yaml as a hook's step starts). The
// mount finds the name's old, now unlinked file and the kernel refuses
// it (ENOENT); the view covers the new file instead of failing the
// step. The file is renamed over in a loop while views are made.
func TestHideWhileReplaced(t *testing.T) {
	sb := newMountNS(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "hookd.yaml")
	os.WriteFile(target, []byte("x: 1\n"), 0o644)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tmp := filepath.Join(dir, ".hookd.yaml.new")
		for {
			select {
			case <-stop:
				return
			default:
			}
			os.WriteFile(tmp, []byte("x: 2\n"), 0o644)
			os.Rename(tmp, target)
		}
	}()
	defer func() { close(stop); <-done }()
	for i := 0; i < 300; i++ {
		v, err := makeView(sb.sys.tmpRoot, false, []string{target}, 0)
		if err != nil {
			t.Fatalf("view %d: %v", i, err)
		}
		v.close()
	}
}
