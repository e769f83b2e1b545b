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
	st := fileStat{regular: fi.Mode().IsRegular(), perm: fi.Mode().Perm(), uid: noOwner, size: fi.Size()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.uid = sys.Uid
	}
	return st, nil
}

// readFile reads the file name in the directory into buf (reusing its
// storage) and returns the contents, stopping past maxFileSize bytes.
func (d *hookDir) readFile(name string, _ int64, buf []byte) ([]byte, error) {
	f, err := os.Open(filepath.Join(d.path, name))
	if err != nil {
		return buf[:0], err
	}
	defer f.Close()
	b := bytes.NewBuffer(buf[:0])
	_, err = b.ReadFrom(io.LimitReader(f, maxFileSize+1))
	return b.Bytes(), err
}
