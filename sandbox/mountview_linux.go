package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// mountView is a mount namespace the processes of one key (a hook) are
// started in: hookd's files covered, and a /tmp of the key's own holding
// each process's TMPDIR. It is made once and entered by each spawn
// (setns): making a namespace per spawn serialises concurrent spawns on
// the kernel's namespace lock, which with 8 spawners added ~2 ms to each.
//
// The namespace is private: nothing the host mounts later reaches it. A
// view is made again when its covers may no longer hold — a covered path
// that is replaced or removed (an editor renames a new hookd.yaml over
// the old one; the kernel then drops the cover in every namespace, and
// the new file may even have the old one's inode number), or one that
// appeared since — and when hookd's mount table changed (a disk mounted
// or unmounted: the next process sees it, and the old view lets go of an
// unmounted disk once its processes end). The covers are checked inside
// the view, by the mount each path resolves to, on the spawning thread
// right after it entered the view (check).
type mountView struct {
	fd     int    // the namespace (/proc/thread-self/ns/mnt of its maker)
	tmp    string // the directory over its /tmp; "": /tmp is the host's
	covers []cover
	gen    uint64 // hookd's mount table generation it was made at

	// Under system.mu:
	refs    int  // spawns and processes using the view
	retired bool // out of system.views: closed when refs falls to 0
}

// cover is a hidden path as the view was made: the id of the mount that
// covers it there, 0 when the path did not exist.
type cover struct {
	path string
	mnt  uint64
}

// errStaleView is check's error: the view no longer covers what it
// should; the spawn is tried again in a new one.
var errStaleView = errors.New("sandbox: the hook's mount namespace no longer covers hookd's files")

// maxViews bounds the mount namespaces kept for reuse; past it, a
// process gets a namespace of its own.
const maxViews = 256

// view returns a mount namespace for key's process covering hidden, with
// a /tmp of its own when swapTmp, and takes a reference to it that
// s.unref gives back.
func (s *system) view(key string, swapTmp bool, hidden []string) (*mountView, error) {
	k := fmt.Sprintf("%t\x00%s", swapTmp, key)
	gen := s.mountGen.load()
	s.mu.Lock()
	if v := s.views[k]; v != nil && key != "" {
		if v.gen == gen && sameCovers(v.covers, hidden) {
			v.refs++
			s.mu.Unlock()
			return v, nil
		}
		delete(s.views, k)
		v.retired = true
		s.dropIfUnused(v)
	}
	s.mu.Unlock()

	v, err := makeView(s.tmpRoot, swapTmp, hidden, gen)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	v.refs++
	if key != "" && !s.closed && s.views[k] == nil && len(s.views) < maxViews {
		s.views[k] = v
	} else {
		v.retired = true
	}
	s.mu.Unlock()
	return v, nil
}

func sameCovers(covers []cover, hidden []string) bool {
	if len(covers) != len(hidden) {
		return false
	}
	for i, c := range covers {
		if c.path != hidden[i] {
			return false
		}
	}
	return true
}

// retire takes v out of use: a new spawn of its key gets a new view.
func (s *system) retire(v *mountView) {
	if v == nil {
		return
	}
	s.mu.Lock()
	for k, cur := range s.views {
		if cur == v {
			delete(s.views, k)
		}
	}
	v.retired = true
	s.mu.Unlock()
}

// unref gives back a reference view took.
func (s *system) unref(v *mountView) {
	if v == nil {
		return
	}
	s.mu.Lock()
	v.refs--
	s.dropIfUnused(v)
	s.mu.Unlock()
}

// dropIfUnused closes a retired view nothing uses. s.mu is held.
func (s *system) dropIfUnused(v *mountView) {
	if v.retired && v.refs == 0 {
		v.close()
	}
}

func makeView(root *tmpRoot, swapTmp bool, hidden []string, gen uint64) (*mountView, error) {
	v := &mountView{fd: -1, gen: gen}
	if swapTmp {
		tmp, err := os.MkdirTemp(root.dir, "view-")
		if err != nil {
			return nil, fmt.Errorf("sandbox: make the private /tmp: %w", err)
		}
		v.tmp = tmp
	}
	err := onLockedThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("sandbox: mount namespace: %w", err)
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("sandbox: mount namespace: make / private: %w", err)
		}
		if v.tmp != "" {
			if err := unix.Mount(v.tmp, "/tmp", "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("sandbox: private /tmp: %w", err)
			}
		}
		for _, h := range hidden {
			if err := hide(h); err != nil {
				return err
			}
		}
		// Once all are covered: a path inside another covered one (the
		// database in the state directory) no longer resolves at all.
		for _, h := range hidden {
			mnt, err := mountOf(h)
			if err != nil {
				return err
			}
			v.covers = append(v.covers, cover{path: h, mnt: mnt})
		}
		fd, err := unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("sandbox: mount namespace: %w", err)
		}
		v.fd = fd
		return nil
	})
	if err != nil {
		v.close()
		return nil, err
	}
	return v, nil
}

// mountOf is the id of the mount path resolves to (not following a
// final link), 0 when it does not exist.
func mountOf(path string) (uint64, error) {
	var st unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &st)
	switch {
	case errors.Is(err, unix.ENOENT):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("sandbox: look at %s: %w", path, err)
	}
	return st.Mnt_id, nil
}

// enter moves the calling (locked) thread into the view.
func (v *mountView) enter() error {
	// setns into a mount namespace wants a thread that shares its root
	// and working directory with no other.
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("sandbox: mount namespace: %w", err)
	}
	if err := unix.Setns(v.fd, unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("sandbox: enter the mount namespace: %w", err)
	}
	return nil
}

// check, on a thread inside the view, reports errStaleView unless every
// hidden path resolves to the cover the view put over it, or, for one
// that did not exist, still does not exist.
func (v *mountView) check() error {
	for _, c := range v.covers {
		mnt, err := mountOf(c.path)
		if err != nil {
			return err
		}
		if mnt != c.mnt {
			return errStaleView
		}
	}
	return nil
}

func (v *mountView) close() {
	if v.fd >= 0 {
		unix.Close(v.fd)
		v.fd = -1
	}
	if v.tmp != "" {
		os.RemoveAll(v.tmp)
	}
}

// mountGen counts the changes of hookd's mount table, so that a view
// made before one is made again. /proc/.../mountinfo reports POLLPRI once
// after each mount or unmount: load asks, without waiting, at each spawn.
// No goroutine watches it: one blocked in a system call would hold up
// what waits for a program's goroutines to settle (testing/synctest).
type mountGen struct {
	mu sync.Mutex
	fd int // hookd's mount table; -1: not watched (the generation stays 0)
	n  uint64
}

// start opens the mount table of the calling thread's namespace, which is
// hookd's: /proc/self is the main thread's, which a goroutine that made a
// namespace on it may have left there (the runtime never ends it). The
// descriptor keeps that namespace, whatever becomes of the thread.
func (g *mountGen) start() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fd, err := unix.Open("/proc/thread-self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		g.fd = -1
		return
	}
	g.fd = fd
}

// load returns the generation, counting the changes since it last asked.
func (g *mountGen) load() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fd <= 0 {
		return g.n
	}
	fds := []unix.PollFd{{Fd: int32(g.fd), Events: unix.POLLPRI}}
	if n, err := unix.Poll(fds, 0); err == nil && n > 0 && fds[0].Revents&(unix.POLLPRI|unix.POLLERR) != 0 {
		g.n++
		// Read it to the end again: the next change is reported anew.
		_, _ = unix.Seek(g.fd, 0, 0)
		var buf [4096]byte
		for {
			if n, err := unix.Read(g.fd, buf[:]); n <= 0 || err != nil {
				break
			}
		}
	}
	return g.n
}

func (g *mountGen) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fd > 0 {
		unix.Close(g.fd)
		g.fd = -1
	}
}
