package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// tmpRoot is the directory a system makes its processes' temporary
// directories in: $TMPDIR/hookd-sandbox-RANDOM, 0700, which the system
// holds a shared flock on while it lives, so that a later hookd's sweep
// (sweepTmp) can tell it is in use — whatever PID namespace either runs
// in. Each process gets a directory of its own in it, made fresh (none is
// ever handed out twice: what one process left in or did to its
// directory cannot reach another), and removed with what it holds when
// the process tree has ended.
type tmpRoot struct {
	dir string
	fd  int // holds the flock
}

// tmpRootPrefix begins the names of the systems' temporary directories.
const tmpRootPrefix = "hookd-sandbox-"

func newTmpRoot() (*tmpRoot, error) {
	sweepTmp()
	// Another hookd starting meanwhile sweeps too, and may remove the
	// directory between its making and its lock (it takes an unlocked
	// one for a gone hookd's): then make another.
	var err error
	for range tmpRootTries {
		var r *tmpRoot
		if r, err = makeTmpRoot(); err == nil {
			return r, nil
		}
		if !errors.Is(err, errSwept) {
			return nil, err
		}
	}
	return nil, err
}

// tmpRootTries is how many directories newTmpRoot makes before it gives
// up, each swept away by another hookd before it held it.
const tmpRootTries = 10

// errSwept says a directory was removed by another hookd's sweep before
// its maker held it.
var errSwept = errors.New("removed by another hookd's sweep before it was held")

// makeTmpRoot makes a directory in $TMPDIR and holds its flock, or
// returns errSwept when a sweep removed it first.
func makeTmpRoot() (*tmpRoot, error) {
	dir, err := os.MkdirTemp("", tmpRootPrefix)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("%s: %w", dir, errSwept)
	}
	if err == nil {
		err = unix.Flock(fd, unix.LOCK_SH)
	}
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		os.Remove(dir)
		return nil, err
	}
	// A sweep holds the directory's flock while it removes it: held now,
	// the directory is ours if it is still there under its name.
	var held, named unix.Stat_t
	if unix.Fstat(fd, &held) != nil || unix.Lstat(dir, &named) != nil || held.Dev != named.Dev || held.Ino != named.Ino {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w", dir, errSwept)
	}
	return &tmpRoot{dir: dir, fd: fd}, nil
}

// tmpDir makes a process's temporary directory in parent (the root when
// ""), and returns it with a descriptor of it for its Landlock rule:
// opened without following a link and checked to be the directory made,
// so that a name swapped in between cannot steer the grant elsewhere.
func (r *tmpRoot) tmpDir(parent string) (string, int, error) {
	if parent == "" {
		parent = r.dir
	}
	dir, err := os.MkdirTemp(parent, "tmp-")
	if err != nil {
		return "", -1, err
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", -1, fmt.Errorf("open %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Uid != uint32(os.Geteuid()) {
		unix.Close(fd)
		return "", -1, fmt.Errorf("%s is not the directory hookd made", dir)
	}
	return dir, fd, nil
}

func (r *tmpRoot) close() {
	os.RemoveAll(r.dir)
	unix.Close(r.fd)
}

// sweepTmp removes the temporary directories of hookd processes that
// are gone: those nobody holds the flock of.
func sweepTmp() {
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tmpRootPrefix) || !e.IsDir() {
			continue // a link of that name is not followed
		}
		dir := filepath.Join(tmp, e.Name())
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
			os.RemoveAll(dir)
		}
		unix.Close(fd)
	}
}
