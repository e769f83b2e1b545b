package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// mountView is a mount namespace the processes of one key (a hook) are
// started in: hookd's files covered, and a /tmp of the key's own. It is
// made once and entered by each spawn (setns): making a namespace per
// spawn serialises concurrent spawns on the kernel's namespace lock,
// which with 8 spawners added ~2 ms to each.
//
// A covered path that is replaced (an editor renames a new hookd.yaml
// over the old one) loses its cover in every namespace, so each spawn
// compares the covered paths' identities with what the view was made
// over, and a view that no longer matches is retired for a new one.
type mountView struct {
	fd     int    // the namespace (/proc/thread-self/ns/mnt of its maker)
	tmp    string // the directory over its /tmp; "": /tmp is the host's
	hidden []fileID
	tmps   tmpDirs // the processes' TMPDIRs, in tmp

	// Under system.mu:
	refs    int  // spawns and processes using the view
	retired bool // out of system.views: closed when refs falls to 0
}

// fileID is a path and the file it named when looked at.
type fileID struct {
	path     string
	dev, ino uint64
}

// maxViews bounds the mount namespaces kept for reuse; past it, a
// process gets a namespace of its own.
const maxViews = 256

// identify returns the identities of the paths that exist.
func identify(paths []string) []fileID {
	ids := make([]fileID, 0, len(paths))
	for _, p := range paths {
		var st unix.Stat_t
		if unix.Lstat(p, &st) == nil {
			ids = append(ids, fileID{path: p, dev: uint64(st.Dev), ino: st.Ino})
		}
	}
	return ids
}

// view returns a mount namespace for key's process covering hidden, with
// a /tmp of its own when swapTmp, and takes a reference to it that
// s.unref gives back.
func (s *system) view(key string, swapTmp bool, hidden []fileID) (*mountView, error) {
	k := fmt.Sprintf("%t\x00%s", swapTmp, key)
	s.mu.Lock()
	if v := s.views[k]; v != nil && key != "" {
		if slices.Equal(v.hidden, hidden) {
			v.refs++
			s.mu.Unlock()
			return v, nil
		}
		delete(s.views, k)
		v.retired = true
		s.dropIfUnused(v)
	}
	s.mu.Unlock()

	v, err := makeView(swapTmp, hidden)
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

func makeView(swapTmp bool, hidden []fileID) (*mountView, error) {
	v := &mountView{fd: -1, hidden: hidden}
	if swapTmp {
		tmp, err := os.MkdirTemp("", tmpPrefix)
		if err != nil {
			return nil, fmt.Errorf("sandbox: make the private /tmp: %w", err)
		}
		v.tmp, v.tmps.parent = tmp, tmp
	}
	err := onLockedThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("sandbox: mount namespace: %w", err)
		}
		// Slave, not private: what the host mounts and unmounts later
		// (a disk plugged in, or taken out) reaches the namespace, which
		// outlives many processes; what it mounts itself stays in it.
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
			return fmt.Errorf("sandbox: mount namespace: make / a slave of the host's: %w", err)
		}
		if v.tmp != "" {
			if err := unix.Mount(v.tmp, "/tmp", "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("sandbox: private /tmp: %w", err)
			}
		}
		for _, h := range hidden {
			if err := hide(h.path); err != nil {
				return err
			}
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

// tmpDir returns a TMPDIR for one process: its path here and as the
// process sees it.
func (v *mountView) tmpDir() (real, seen string, err error) {
	d, err := v.tmps.take()
	if err != nil {
		return "", "", err
	}
	return d, filepath.Join("/tmp", filepath.Base(d)), nil
}

func (v *mountView) close() {
	if v.fd >= 0 {
		unix.Close(v.fd)
		v.fd = -1
	}
	v.tmps.close()
	if v.tmp != "" {
		os.RemoveAll(v.tmp)
	}
}
