//go:build !linux

package config

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// hookDir is an open hooks directory; its files are stat'ed and opened
// by their paths.
type hookDir struct {
	f    *os.File
	path string
}

// openHookDir opens the directory at path.
func openHookDir(path string) (*hookDir, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &hookDir{f: f, path: path}, nil
}

func (d *hookDir) close() error { return d.f.Close() }

// fileStat is what loading needs of a hook file's stat.
type fileStat struct {
	regular bool
	perm    fs.FileMode
	uid     uint32 // noOwner where the platform has no owners
	size    int64
}

// stat stats the file name in the directory, following a symbolic link.
func (d *hookDir) stat(name string) (fileStat, error) {
	fi, err := os.Stat(filepath.Join(d.path, name))
	if err != nil {
		return fileStat{}, err
	}
	return statOf(fi), nil
}

func statOf(fi fs.FileInfo) fileStat {
	st := fileStat{regular: fi.Mode().IsRegular(), perm: fi.Mode().Perm(), uid: noOwner, size: fi.Size()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.uid = sys.Uid
	}
	return st
}

// hookFile is a hook file open for reading.
type hookFile struct{ f *os.File }

// open opens the file name in the directory and stats the open file, so
// what the stat says is of the very file read, whatever replaces the
// name meanwhile. O_NONBLOCK: a FIFO put in a regular file's place since
// the caller's stat is opened without waiting for a writer.
func (d *hookDir) open(name string) (hookFile, fileStat, error) {
	f, err := os.OpenFile(filepath.Join(d.path, name), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return hookFile{}, fileStat{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return hookFile{}, fileStat{}, err
	}
	return hookFile{f: f}, statOf(fi), nil
}

func (f hookFile) close() { _ = f.f.Close() }

// read reads the open file into buf (reusing its storage) and returns
// the contents, stopping past maxFileSize bytes.
func (f hookFile) read(_ int64, buf []byte) ([]byte, error) {
	b := bytes.NewBuffer(buf[:0])
	_, err := b.ReadFrom(io.LimitReader(f.f, maxFileSize+1))
	return b.Bytes(), err
}
