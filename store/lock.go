package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hookd/hookd/engine"
)

// LockError says that another process holds the daemon lock of a database.
// It wraps engine.ErrLocked.
type LockError struct {
	Path string // the database path
	PID  int    // the holder's pid, 0 if unknown
	// Holder is the hookd command that holds the lock, as recorded in the
	// lock file: Daemon for `hookd serve`, else the command run without a
	// daemon ("fire", "emit", "pause", "prune", ...); "" when unknown (an
	// older hookd recorded only its pid).
	Holder string
	// Gone says that the process PID has exited: the lock is held by a
	// process that inherited it (one that hookd started).
	Gone bool
}

func (e *LockError) Error() string {
	if e.Gone {
		return fmt.Sprintf("database %s is still locked by a process that hookd (pid %d, which has exited) started; "+
			"find it with `fuser %s.lock` and stop it, or use --db", e.Path, e.PID, e.Path)
	}
	return fmt.Sprintf("database %s is in use by another hookd (%s); stop it first or use --db", e.Path, e.Who())
}

// Who names the holder: "hookd fire, pid 1234", "pid 1234" when the
// command is unknown.
func (e *LockError) Who() string {
	pid := "pid unknown"
	if e.PID > 0 {
		pid = "pid " + strconv.Itoa(e.PID)
	}
	if e.Holder == "" {
		return pid
	}
	return "hookd " + e.Holder + ", " + pid
}

// Transient reports whether the holder is a hookd command run without a
// daemon (fire, emit, pause, prune, ...), alive: it ends by itself, so a
// daemon that starts may wait for it (LockWait). A daemon, a holder whose
// command is unknown, and a lock left to the child of an exited process
// are not.
func (e *LockError) Transient() bool {
	return e.Holder != "" && e.Holder != Daemon && !e.Gone
}

// Unwrap returns engine.ErrLocked.
func (e *LockError) Unwrap() error { return engine.ErrLocked }

// Daemon is the holder that `hookd serve` records in the lock file.
const Daemon = "serve"

// held keeps the files of held locks reachable: a lock file closed by a
// finalizer would release the lock behind its holder's back.
var held sync.Map // *os.File -> struct{}

// DaemonLock is the daemon's exclusive hold on a database; see Lock.
type DaemonLock struct {
	db   string   // the database path
	path string   // the lock file's path
	f    *os.File // the locked file

	once sync.Once
	err  error
}

// Lock takes the daemon's exclusive lock on the database at dbPath: a
// non-blocking flock on dbPath+".lock", into which it writes the holder's
// pid and holder, the hookd command taking it (Daemon for `hookd serve`).
// When another process (or another Lock in this one) holds it, the
// error is a *LockError wrapping engine.ErrLocked. The lock is released by
// Unlock, which is safe to call more than once, or when the process exits.
//
// Lock is separate from Open: commands that only read open the database
// while the daemon runs; only the daemon (and anything that must not run
// beside it) takes the lock.
//
// A flock holds an inode, not a path: if the state directory is removed
// or the lock file replaced, a second daemon can lock a new file at the
// same path. The holder must call Check (and DB.Check) periodically and
// stop when they fail.
func Lock(dbPath, holder string) (*DaemonLock, error) {
	path := dbPath + ".lock"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock database %s: create directory: %w", dbPath, err)
	}
	// No O_TRUNC: the file may hold the pid of the current holder.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock database %s: %w", dbPath, err)
	}
	if err := flockHeld(f); err != nil {
		defer f.Close()
		var le *LockError
		if errors.As(err, &le) {
			le.Path = dbPath
			return nil, le
		}
		return nil, fmt.Errorf("lock database %s: flock %s: %w", dbPath, path, err)
	}
	if err := writeHolder(f, holder); err != nil {
		f.Close() // releases the flock
		return nil, fmt.Errorf("lock database %s: write pid to %s: %w", dbPath, path, err)
	}
	held.Store(f, struct{}{})
	return &DaemonLock{db: dbPath, path: path, f: f}, nil
}

// Unlock releases the lock. It is safe to call more than once; later
// calls return the result of the first.
func (l *DaemonLock) Unlock() error {
	l.once.Do(func() {
		held.Delete(l.f)
		// The file stays: removing it would let a process that opened
		// the old file and one that creates a new one both "hold" it.
		_ = l.f.Truncate(0)
		if err := l.f.Close(); err != nil { // closing releases the flock
			l.err = fmt.Errorf("unlock database %s: %w", l.db, err)
		}
	})
	return l.err
}

// Check reports whether the lock still guards its path: the file at
// dbPath+".lock" must be the very file this lock holds. A removed or
// replaced lock file is a *GoneError: another daemon may now lock the
// new file. Check costs two stat calls.
func (l *DaemonLock) Check() error {
	return sameFile(l.path, "lock file", l.f.Stat)
}

// GoneError says that a file the daemon relies on (its database or its
// lock file) was removed or replaced while the daemon ran: a second daemon
// could start on a fresh database at the same path and run the same hooks,
// and what this one writes nobody would see.
type GoneError struct {
	Path string // the file's path
	What string // "database" or "lock file"
	Err  error  // the stat error when the path is gone, nil when replaced
}

func (e *GoneError) Error() string {
	how := "was replaced by another file"
	if e.Err != nil {
		how = "was removed"
	}
	return fmt.Sprintf("the %s %s %s while hookd ran (was the state directory deleted?): "+
		"another hookd could run the same hooks on a new database, and what this one records nobody would see",
		e.What, e.Path, how)
}

func (e *GoneError) Unwrap() error { return e.Err }

// sameFile checks that path still names the file held (described by
// stat), returning a *GoneError when it does not.
func sameFile(path, what string, stat func() (os.FileInfo, error)) error {
	mine, err := stat()
	if err != nil {
		return fmt.Errorf("check %s %s: %w", what, path, err)
	}
	now, err := os.Stat(path)
	if err != nil {
		return &GoneError{Path: path, What: what, Err: err}
	}
	if !os.SameFile(mine, now) {
		return &GoneError{Path: path, What: what}
	}
	return nil
}

// orphanWait bounds how long Lock waits for a lock whose recorded holder
// is no longer alive; a variable for tests.
var orphanWait = 5 * time.Second

// flockHeld takes the exclusive flock on f. When another open file
// description holds it, flockHeld returns a *LockError at once if the pid
// recorded in the file is a live process. If that process is gone (or no
// pid is recorded) the flock is held by what it left behind: a child
// forked by a daemon killed with SIGKILL keeps the inherited lock until it
// execs (which closes it) or exits, and a holder that is unlocking has
// truncated the file before closing it. A restart right after a kill -9
// must not be refused for that, so flockHeld tries again for up to
// orphanWait before it gives up.
func flockHeld(f *os.File) error {
	deadline := time.Now().Add(orphanWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		pid, holder := readHolder(f)
		if pid > 0 && alive(pid) {
			return &LockError{PID: pid, Holder: holder}
		}
		if time.Now().After(deadline) {
			return &LockError{PID: pid, Holder: holder, Gone: pid > 0}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether a process with this pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// pidWidth is the width of the pid line of a lock file, newline
// included. An older hookd reads the first 32 bytes of the file as the
// pid (spaces trimmed); the holder goes on the line after, past them, so
// that it still reads the pid.
const pidWidth = 32

// writeHolder records this process in the lock file: its pid on a line
// padded to pidWidth, then the holder's command on a line of its own
// ("1234" + spaces + "\n" + "fire\n").
func writeHolder(f *os.File, holder string) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	text := fmt.Sprintf("%-*d\n", pidWidth-1, os.Getpid())
	if holder != "" {
		text += holder + "\n"
	}
	if _, err := f.WriteAt([]byte(text), 0); err != nil {
		return err
	}
	return f.Sync()
}

// readHolder reads the pid and holder a lock file records; 0 and "" when
// unknown. A file of an older hookd holds only the pid.
func readHolder(f *os.File) (pid int, holder string) {
	b := make([]byte, 2*pidWidth)
	n, _ := f.ReadAt(b, 0)
	fields := strings.Fields(string(b[:n]))
	if len(fields) == 0 {
		return 0, ""
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0, ""
	}
	if len(fields) == 2 && CommandName(fields[1]) {
		holder = fields[1]
	}
	return pid, holder
}

// CommandName reports whether s can be a hookd command's name, as a lock
// holder names itself (in the lock file here, in the lock session's
// application_name on PostgreSQL); anything else is not believed.
func CommandName(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && r != '-' {
			return false
		}
	}
	return true
}

// lockPoll is how often LockWait tries the lock again.
const lockPoll = 100 * time.Millisecond

// LockWait is Lock for a daemon that starts: while the lock is held by a
// hookd command run without a daemon (LockError.Transient: `hookd fire`,
// `hookd emit`, ...), which ends by itself, it waits for it, trying again
// every lockPoll, and calls waiting with the holder each time it finds a
// new one (a different pid). Any other refusal (another daemon, a holder
// an older hookd recorded without its command) is returned at once, as by
// Lock. When ctx ends first it returns an error wrapping ctx's cause.
//
// The wait is not fair: a command started while the daemon waits may take
// the lock before it; the daemon then waits for that one too.
func LockWait(ctx context.Context, dbPath, holder string, waiting func(*LockError)) (*DaemonLock, error) {
	lastPID := -1
	for {
		l, err := Lock(dbPath, holder)
		var le *LockError
		if err == nil || !errors.As(err, &le) || !le.Transient() {
			return l, err
		}
		if le.PID != lastPID {
			lastPID = le.PID
			if waiting != nil {
				waiting(le)
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lock database %s: stopped waiting for %s: %w", dbPath, le.Who(), context.Cause(ctx))
		case <-time.After(lockPoll):
		}
	}
}
