package config

import (
	"io/fs"
	"os"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// hookDir is an open hooks directory. Its files are stat'ed and opened
// relative to it (fstatat, openat): the kernel walks the directory's
// path once, not twice a file, and every file comes from the directory
// whose entries were read and whose ownership was checked.
type hookDir struct {
	f    *os.File
	path string
	fd   int
}

// openHookDir opens the directory at path.
func openHookDir(path string) (*hookDir, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	d := &hookDir{f: f, path: path, fd: -1}
	if sc, err := f.SyscallConn(); err == nil {
		_ = sc.Control(func(fd uintptr) { d.fd = int(fd) })
	}
	return d, nil
}

func (d *hookDir) close() error { return d.f.Close() }

// fileStat is what loading needs of a hook file's stat.
type fileStat struct {
	regular bool
	perm    fs.FileMode
	uid     uint32
	size    int64
}

// stat stats the file name in the directory, following a symbolic link
// as os.Stat does.
func (d *hookDir) stat(name string) (fileStat, error) {
	var st unix.Stat_t
	var err error
	for {
		err = unix.Fstatat(d.fd, name, &st, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return fileStat{}, &fs.PathError{Op: "stat", Path: d.join(name), Err: err}
	}
	return statOf(&st), nil
}

func statOf(st *unix.Stat_t) fileStat {
	return fileStat{regular: st.Mode&unix.S_IFMT == unix.S_IFREG, perm: fs.FileMode(st.Mode & 0o777), uid: st.Uid, size: st.Size}
}

func (d *hookDir) join(name string) string { return d.path + string(os.PathSeparator) + name }

// hookFile is a hook file open for reading: the file name in dir, whose
// path only an error needs.
type hookFile struct {
	fd   int
	dir  *hookDir
	name string
}

// open opens the file name in the directory and stats the open file, so
// what the stat says (regular, owner, mode, size) is of the very file
// read, whatever replaces the name meanwhile: a file that passed the
// ownership check is never swapped for one that would not. O_NONBLOCK:
// a FIFO put in a regular file's place between the caller's stat and
// this open is opened without waiting for a writer (and refused, not
// being regular).
func (d *hookDir) open(name string) (hookFile, fileStat, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return hookFile{fd: -1}, fileStat{}, &fs.PathError{Op: "open", Path: d.join(name), Err: err}
	}
	f := hookFile{fd: fd, dir: d, name: name}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.close()
		return hookFile{fd: -1}, fileStat{}, &fs.PathError{Op: "stat", Path: d.join(name), Err: err}
	}
	return f, statOf(&st), nil
}

func (f hookFile) close() { _ = syscall.Close(f.fd) }

// read reads the open file, whose stat gave size, into buf (reusing its
// storage) and returns the contents, stopping past maxFileSize bytes. It
// is os.ReadFile without what a loader of thousands of small files pays
// for and does not need: the *os.File and its cleanup, the registration
// with the network poller (refused for a regular file, one more system
// call) and, when a read returns fewer bytes than asked and the file
// then holds the size its stat gave, the last read that would return 0
// (a short read of a regular file is its end; a file that grew since the
// stat is read on to its end). Errors are os.ReadFile's, naming the
// file's path.
func (f hookFile) read(size int64, buf []byte) ([]byte, error) {
	fd := f.fd
	buf = buf[:0]
	if want := int(min(max(size, 0), maxFileSize)) + 1; cap(buf) < want {
		buf = slices.Grow(buf, want)
	}
	for {
		if len(buf) == cap(buf) {
			if len(buf) > maxFileSize {
				return buf, nil // the caller refuses it
			}
			buf = slices.Grow(buf, min(max(len(buf), 4096), maxFileSize+1))
		}
		asked := cap(buf) - len(buf)
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return buf, &fs.PathError{Op: "read", Path: f.dir.join(f.name), Err: err}
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if n < asked && int64(len(buf)) == size {
			return buf, nil
		}
	}
}
