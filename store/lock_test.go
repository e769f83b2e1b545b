package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

func TestLockInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "hookd.db")
	lock, err := Lock(path, Daemon)
	mustRun(t, err)

	// A second open file description cannot take the flock.
	_, err = Lock(path, Daemon)
	if !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("second Lock: %v, want ErrLocked", err)
	}
	want := fmt.Sprintf("database %s is in use by another hookd (hookd serve, pid %d); stop it first or use --db", path, os.Getpid())
	if err.Error() != want {
		t.Errorf("error:\n got %s\nwant %s", err, want)
	}
	var le *LockError
	if !errors.As(err, &le) || le.PID != os.Getpid() || le.Path != path {
		t.Errorf("LockError = %+v", le)
	}

	// The database stays usable beside the lock.
	d, err := Open(path)
	mustRun(t, err)
	mustRun(t, d.Close())

	mustRun(t, lock.Unlock())
	mustRun(t, lock.Unlock()) // safe twice
	lock2, err := Lock(path, Daemon)
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	mustRun(t, lock2.Unlock())
}

// lockHelperMain is the lock-holding process TestLockSubprocess starts:
// TestMain runs it instead of the tests when HOOKD_STORE_LOCK_HELPER names
// a database. It takes the lock, says "locked" and holds it until its
// standard input closes, then exits without unlocking: the kernel
// releases the flock.
func lockHelperMain(path string) int {
	if _, err := Lock(path, os.Getenv("HOOKD_STORE_LOCK_HOLDER")); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("locked")
	bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

// lockHelper starts a process holding the lock of path as holder; closing
// stdin makes it exit.
func lockHelper(t *testing.T, path, holder string) (cmd *exec.Cmd, stdin io.WriteCloser) {
	t.Helper()
	cmd = exec.Command(os.Args[0])
	// GORACE: under -race, a process otherwise lingers 1s at exit.
	cmd.Env = append(os.Environ(), "HOOKD_STORE_LOCK_HELPER="+path, "HOOKD_STORE_LOCK_HOLDER="+holder, "GORACE=atexit_sleep_ms=0")
	stdin, err := cmd.StdinPipe()
	mustRun(t, err)
	stdout, err := cmd.StdoutPipe()
	mustRun(t, err)
	cmd.Stderr = os.Stderr
	mustRun(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "locked" {
		stdin.Close()
		cmd.Wait()
		t.Fatalf("helper said %q, %v", line, err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	return cmd, stdin
}

func TestLockSubprocess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookd.db")
	cmd, stdin := lockHelper(t, path, Daemon)

	_, err := Lock(path, Daemon)
	var le *LockError
	if !errors.As(err, &le) || !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("Lock while another process holds it: %v", err)
	}
	if le.PID != cmd.Process.Pid || le.Holder != Daemon || le.Transient() {
		t.Errorf("holder pid %d %q (transient %v), want %d %q (%v)", le.PID, le.Holder, le.Transient(), cmd.Process.Pid, Daemon, err)
	}

	stdin.Close()
	mustRun(t, cmd.Wait())
	lock, err := Lock(path, Daemon)
	if err != nil {
		t.Fatalf("Lock after the holder exited: %v", err)
	}
	mustRun(t, lock.Unlock())
}

// TestLockFollowsFile: the lock and the database guard their paths only
// while the paths name the files held. Removing the state directory (what
// let a second daemon start beside a running one) or replacing either
// file makes Check fail with a GoneError; an untouched state passes.
func TestLockFollowsFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, dir, db string)
		what   string
	}{
		{"state directory removed", func(t *testing.T, dir, db string) { mustRun(t, os.RemoveAll(dir)) }, "lock file"},
		{"database removed", func(t *testing.T, dir, db string) { mustRun(t, os.Remove(db)) }, "database"},
		{"database replaced", func(t *testing.T, dir, db string) {
			mustRun(t, os.Rename(db, db+".old"))
			mustRun(t, os.WriteFile(db, nil, 0o600))
		}, "database"},
		{"lock file replaced", func(t *testing.T, dir, db string) {
			mustRun(t, os.Remove(db+".lock"))
			mustRun(t, os.WriteFile(db+".lock", nil, 0o600))
		}, "lock file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			path := filepath.Join(dir, "hookd.db")
			lock, err := Lock(path, Daemon)
			mustRun(t, err)
			defer lock.Unlock()
			d, err := Open(path)
			mustRun(t, err)
			defer d.Close()
			mustRun(t, lock.Check())
			mustRun(t, d.Check())

			tc.change(t, dir, path)
			err = errors.Join(lock.Check(), d.Check())
			var gone *GoneError
			if !errors.As(err, &gone) || gone.What != tc.what {
				t.Fatalf("Check after the change: %v, want a GoneError of the %s", err, tc.what)
			}
			if !strings.Contains(err.Error(), "another hookd could run the same hooks") {
				t.Errorf("error does not say why it matters: %v", err)
			}
			// A second daemon can now take a lock at the same path: that
			// is why the first must stop.
			if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
				second, err := Lock(path, Daemon)
				mustRun(t, err)
				mustRun(t, second.Unlock())
			}
		})
	}
}

// TestLockLeftToAChild: a daemon killed with SIGKILL while a child it
// forked has not yet exec'd leaves its flock to that child for a moment.
// The next daemon waits for the child instead of refusing to start, and
// names the situation when the child keeps the lock.
func TestLockLeftToAChild(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookd.db")
	// A pid that no longer exists: a process that has been reaped.
	dead := exec.Command("true")
	mustRun(t, dead.Run())
	deadPID := dead.ProcessState.Pid()

	hold := func() (release func()) {
		f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
		mustRun(t, err)
		mustRun(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
		mustRun(t, f.Truncate(0))
		_, err = f.WriteAt([]byte(fmt.Sprintf("%d\n", deadPID)), 0)
		mustRun(t, err)
		// The child inherits the locked file description; then the
		// "daemon" (this test) lets go of its own copy.
		child := exec.Command("cat")
		child.ExtraFiles = []*os.File{f}
		stdin, err := child.StdinPipe()
		mustRun(t, err)
		mustRun(t, child.Start())
		mustRun(t, f.Close())
		return func() { stdin.Close(); child.Wait() }
	}

	// Lock waits up to orphanWait for the child: a minute here, not the
	// daemon's 5s, so that a loaded machine's slow child exit cannot fail
	// the test (a wait that succeeds returns at once).
	defer func(d time.Duration) { orphanWait = d }(orphanWait)
	orphanWait = time.Minute
	release := hold()
	got := make(chan error, 1)
	go func() {
		lock, err := Lock(path, Daemon)
		if err == nil {
			err = lock.Unlock()
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond) // let Lock find the lock held
	release()
	if err := <-got; err != nil {
		t.Fatalf("Lock after the child let go: %v", err)
	}

	// A child that keeps the lock: Lock gives up and says why.
	orphanWait = 200 * time.Millisecond
	release = hold()
	defer release()
	_, err := Lock(path, Daemon)
	var le *LockError
	if !errors.As(err, &le) || !le.Gone || le.PID != deadPID {
		t.Fatalf("Lock while a child holds it: %v (%+v), want a LockError naming the exited pid", err, le)
	}
	if !strings.Contains(err.Error(), "which has exited") {
		t.Errorf("error %q does not say the holder exited", err)
	}
}

// TestLockHolderRecorded: the lock file names the command holding it, a
// file of an older hookd (a pid alone) is read as before (holder unknown,
// not to be waited for), and an older hookd, which reads the first 32
// bytes as the pid, still reads the pid of a file this one wrote.
func TestLockHolderRecorded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookd.db")
	lock, err := Lock(path, "fire")
	mustRun(t, err)
	_, err = Lock(path, Daemon)
	var le *LockError
	if !errors.As(err, &le) || le.Holder != "fire" || le.PID != os.Getpid() || !le.Transient() {
		t.Fatalf("Lock while `fire` holds it: %v (%+v), want a transient LockError of fire", err, le)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("(hookd fire, pid %d)", os.Getpid())) {
		t.Errorf("error %q does not name the command and pid", err)
	}
	// What an older hookd reads: the first 32 bytes, trimmed.
	b, err := os.ReadFile(path + ".lock")
	mustRun(t, err)
	if len(b) < 32 || strings.TrimSpace(string(b[:32])) != strconv.Itoa(os.Getpid()) {
		t.Errorf("an older hookd would not read the pid from %q", b)
	}
	mustRun(t, lock.Unlock())

	// A lock file written by an older hookd: the pid alone.
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	mustRun(t, err)
	defer f.Close()
	mustRun(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	mustRun(t, f.Truncate(0))
	_, err = f.WriteAt([]byte(fmt.Sprintf("%d\n", os.Getpid())), 0)
	mustRun(t, err)
	_, err = Lock(path, Daemon)
	if !errors.As(err, &le) || le.Holder != "" || le.PID != os.Getpid() || le.Transient() {
		t.Fatalf("Lock while an older hookd holds it: %v (%+v), want a LockError of unknown holder", err, le)
	}
	want := fmt.Sprintf("database %s is in use by another hookd (pid %d); stop it first or use --db", path, os.Getpid())
	if err.Error() != want {
		t.Errorf("error:\n got %s\nwant %s", err, want)
	}
	// Nor is a holder that is not a command's name believed.
	mustRun(t, f.Truncate(0))
	_, err = f.WriteAt([]byte(fmt.Sprintf("%d\nfire; rm -rf /\n", os.Getpid())), 0)
	mustRun(t, err)
	_, err = Lock(path, Daemon)
	if !errors.As(err, &le) || le.Holder != "" || le.Transient() {
		t.Fatalf("Lock with a garbled holder: %v (%+v), want a LockError of unknown holder", err, le)
	}
}

// TestLockWait: a daemon starting waits for a command (another process)
// holding the lock and takes it once the command exits; it does not wait
// for another daemon, and stops waiting when its context ends.
func TestLockWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookd.db")

	cmd, stdin := lockHelper(t, path, "emit")
	waiting := make(chan *LockError, 10)
	got := make(chan error, 1)
	go func() {
		lock, err := LockWait(context.Background(), path, Daemon, func(le *LockError) { waiting <- le })
		if err == nil {
			err = lock.Unlock()
		}
		got <- err
	}()
	select {
	case le := <-waiting:
		if le.PID != cmd.Process.Pid || le.Holder != "emit" {
			t.Errorf("waiting for %+v, want emit pid %d", le, cmd.Process.Pid)
		}
	case err := <-got:
		t.Fatalf("LockWait returned while the command held the lock: %v", err)
	}
	stdin.Close()
	mustRun(t, cmd.Wait())
	if err := <-got; err != nil {
		t.Fatalf("LockWait after the command exited: %v", err)
	}
	if len(waiting) != 0 {
		t.Errorf("waiting called again for the same holder: %+v", <-waiting)
	}

	// Another daemon: refused at once, waiting not called.
	cmd, stdin = lockHelper(t, path, Daemon)
	_, err := LockWait(context.Background(), path, Daemon, func(le *LockError) { t.Errorf("waiting for a daemon: %+v", le) })
	var le *LockError
	if !errors.As(err, &le) || le.PID != cmd.Process.Pid || le.Holder != Daemon {
		t.Fatalf("LockWait while a daemon holds it: %v, want its LockError", err)
	}
	stdin.Close()
	mustRun(t, cmd.Wait())

	// A signal while waiting (the context ends): an error, no lock.
	lockHelper(t, path, "fire")
	ctx, cancel := context.WithCancel(context.Background())
	_, err = LockWait(ctx, path, Daemon, func(*LockError) { cancel() })
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stopped waiting for hookd fire") {
		t.Fatalf("LockWait cancelled: %v, want context.Canceled naming the command", err)
	}
}
