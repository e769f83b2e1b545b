package store

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

func TestLockInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "hookd.db")
	unlock, err := Lock(path)
	mustRun(t, err)

	// A second open file description cannot take the flock.
	_, err = Lock(path)
	if !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("second Lock: %v, want ErrLocked", err)
	}
	want := fmt.Sprintf("database %s is in use by another hookd (pid %d); stop it first or use --db", path, os.Getpid())
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

	mustRun(t, unlock())
	mustRun(t, unlock()) // safe twice
	unlock2, err := Lock(path)
	if err != nil {
		t.Fatalf("Lock after unlock: %v", err)
	}
	mustRun(t, unlock2())
}

// TestLockHelperProcess is not a test: TestLockSubprocess runs the test
// binary with it to hold the lock in another process.
func TestLockHelperProcess(t *testing.T) {
	path := os.Getenv("HOOKD_STORE_LOCK_HELPER")
	if path == "" {
		t.Skip("helper process only")
	}
	if _, err := Lock(path); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	// Hold the lock until the parent closes stdin, then exit without
	// unlocking: the kernel releases the flock.
	bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(0)
}

func TestLockSubprocess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookd.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
	// GORACE: under -race, a process otherwise lingers 1s at exit.
	cmd.Env = append(os.Environ(), "HOOKD_STORE_LOCK_HELPER="+path, "GORACE=atexit_sleep_ms=0")
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

	_, err = Lock(path)
	var le *LockError
	if !errors.As(err, &le) || !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("Lock while another process holds it: %v", err)
	}
	if le.PID != cmd.Process.Pid {
		t.Errorf("holder pid %d, want %d (%v)", le.PID, cmd.Process.Pid, err)
	}

	stdin.Close()
	mustRun(t, cmd.Wait())
	unlock, err := Lock(path)
	if err != nil {
		t.Fatalf("Lock after the holder exited: %v", err)
	}
	mustRun(t, unlock())
}
