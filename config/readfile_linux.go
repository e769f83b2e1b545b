package config

import (
	"io/fs"
	"slices"
	"syscall"
)

// readFileInto reads the file name into buf (reusing its storage) and
// returns the contents, stopping past maxFileSize bytes. It is
// os.ReadFile without what a loader of thousands of small files pays for
// and does not need: the *os.File and its cleanup, the registration with
// the network poller (refused for a regular file, one more system call),
// and the fstat that sizes the buffer. Errors are os.ReadFile's.
func readFileInto(name string, buf []byte) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return buf[:0], &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer syscall.Close(fd)
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) > maxFileSize {
				return buf, nil // the caller refuses it
			}
			buf = slices.Grow(buf, min(max(len(buf), 4096), maxFileSize+1))
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return buf, &fs.PathError{Op: "read", Path: name, Err: err}
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}
