package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// tmpDirs hands out the private temporary directories (TMPDIR) of
// processes, made in parent (os.TempDir when empty). One a process left
// as it found it (empty, no extended attributes or ACLs) goes back to a
// small pool for the next process instead of being removed: making and
// removing a directory costs ~0.15 ms on an ext4 /tmp, checking one a
// few µs.
type tmpDirs struct {
	parent string
	mu     sync.Mutex
	free   []string
	closed bool
}

// maxFreeTmp bounds the directories kept for reuse.
const maxFreeTmp = 32

// take returns an empty directory only the caller's process will use.
func (t *tmpDirs) take() (string, error) {
	t.mu.Lock()
	var dir string
	if n := len(t.free); n > 0 {
		dir, t.free = t.free[n-1], t.free[:n-1]
	}
	t.mu.Unlock()
	if dir != "" {
		// The last process may have changed its mode: back to private.
		if err := os.Chmod(dir, 0o700); err == nil {
			return dir, nil
		}
		os.RemoveAll(dir)
	}
	return os.MkdirTemp(t.parent, tmpPrefix)
}

// tmpPrefix begins the names of the temporary directories this process
// makes for its sandboxes, with its pid, so that a later hookd can remove
// what one that is gone (killed before it could) left behind.
var tmpPrefix = fmt.Sprintf("hookd-tmp-%d-", os.Getpid())

// sweepTmp removes the temporary directories of hookd processes that
// are gone.
func sweepTmp() {
	dir := os.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "hookd-tmp-")
		if !ok || !e.IsDir() {
			continue
		}
		p, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(p)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if unix.Kill(pid, 0) == unix.ESRCH {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// put takes back dir once its process tree has ended: kept for reuse if
// it is as take gave it, removed with its contents otherwise.
func (t *tmpDirs) put(dir string) {
	if pristine(dir) {
		t.mu.Lock()
		if !t.closed && len(t.free) < maxFreeTmp {
			t.free = append(t.free, dir)
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
	}
	os.RemoveAll(dir)
}

// pristine reports whether dir is still an empty directory with no
// extended attributes (an ACL is one): nothing of one process's would
// reach the next.
func pristine(dir string) bool {
	f, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); err != io.EOF {
		return false
	}
	n, err := unix.Flistxattr(int(f.Fd()), nil)
	return err == nil && n == 0
}

// close removes the kept directories; put removes those returned after.
func (t *tmpDirs) close() {
	t.mu.Lock()
	free := t.free
	t.free, t.closed = nil, true
	t.mu.Unlock()
	for _, d := range free {
		os.Remove(d)
	}
}
