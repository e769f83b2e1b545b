package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/hookd/hookd/engine"
)

// LockError says that another process holds the daemon lock of a database.
// It wraps engine.ErrLocked.
type LockError struct {
	Path string // the database path
	PID  int    // the holder's pid, 0 if unknown
}

func (e *LockError) Error() string {
	pid := "pid unknown"
	if e.PID > 0 {
		pid = "pid " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("database %s is in use by another hookd (%s); stop it first or use --db", e.Path, pid)
}

// Unwrap returns engine.ErrLocked.
func (e *LockError) Unwrap() error { return engine.ErrLocked }

// held keeps the files of held locks reachable: a lock file closed by a
// finalizer would release the lock behind its holder's back.
var held sync.Map // *os.File -> struct{}

// Lock takes the daemon's exclusive lock on the database at dbPath: a
// non-blocking flock on dbPath+".lock", into which it writes the holder's
// pid. When another process (or another Lock in this one) holds it, the
// error is a *LockError wrapping engine.ErrLocked. The lock is released by
// unlock, which is safe to call more than once, or when the process exits.
//
// Lock is separate from Open: commands that only read open the database
// while the daemon runs; only the daemon (and anything that must not run
// beside it) takes the lock.
func Lock(dbPath string) (unlock func() error, err error) {
	path := dbPath + ".lock"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock database %s: create directory: %w", dbPath, err)
	}
	// No O_TRUNC: the file may hold the pid of the current holder.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock database %s: %w", dbPath, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockError{Path: dbPath, PID: readPID(f)}
		}
		return nil, fmt.Errorf("lock database %s: flock %s: %w", dbPath, path, err)
	}
	if err := writePID(f); err != nil {
		f.Close() // releases the flock
		return nil, fmt.Errorf("lock database %s: write pid to %s: %w", dbPath, path, err)
	}
	held.Store(f, struct{}{})

	var once sync.Once
	return func() error {
		var uerr error
		once.Do(func() {
			held.Delete(f)
			// The file stays: removing it would let a process that opened
			// the old file and one that creates a new one both "hold" it.
			_ = f.Truncate(0)
			if err := f.Close(); err != nil { // closing releases the flock
				uerr = fmt.Errorf("unlock database %s: %w", dbPath, err)
			}
		})
		return uerr
	}, nil
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		return err
	}
	return f.Sync()
}

func readPID(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil {
		return 0
	}
	return pid
}
