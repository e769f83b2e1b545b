package config

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestHookDirReadFile: a hook file is read whole whatever its stat said
// (the file may have grown or shrunk since), a file past maxFileSize is
// read just past it (the caller refuses it), and errors name the file's
// path.
func TestHookDirReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := bytes.Repeat([]byte("0123456789abcdef\n"), 600) // 10,200 bytes
	write("f.yaml", text)
	write("empty.yaml", nil)
	write("big.yaml", bytes.Repeat([]byte("x"), maxFileSize+100))
	hd, err := openHookDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer hd.close()
	readFile := func(name string, size int64, buf []byte) ([]byte, error) {
		f, st, err := hd.open(name)
		if err != nil {
			return buf[:0], err
		}
		defer f.close()
		if !st.regular {
			t.Errorf("open %s: not regular: %+v", name, st)
		}
		return f.read(size, buf)
	}

	st, err := hd.stat("f.yaml")
	if err != nil || !st.regular || st.size != int64(len(text)) {
		t.Fatalf("stat: %+v, %v", st, err)
	}
	for _, size := range []int64{st.size, 0, 5, 4096, st.size - 1, st.size + 1, 3 * st.size} {
		for _, buf := range [][]byte{nil, make([]byte, 0, 100), make([]byte, 0, 64<<10)} {
			got, err := readFile("f.yaml", size, buf)
			if err != nil || !bytes.Equal(got, text) {
				t.Errorf("stat size %d, buffer of %d: read %d bytes, %v; want the %d bytes of the file", size, cap(buf), len(got), err, len(text))
			}
		}
	}
	if got, err := readFile("empty.yaml", 0, nil); err != nil || len(got) != 0 {
		t.Errorf("empty file: %q, %v", got, err)
	}
	for _, size := range []int64{maxFileSize + 100, 10} {
		if got, err := readFile("big.yaml", size, nil); err != nil || len(got) <= maxFileSize || len(got) > maxFileSize+4096 {
			t.Errorf("file past the limit, stat size %d: read %d bytes, %v; want just past %d", size, len(got), err, maxFileSize)
		}
	}

	_, err = readFile("missing.yaml", 10, nil)
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "open" || pe.Path != filepath.Join(dir, "missing.yaml") || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := hd.stat("missing.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat of a missing file: %v", err)
	}

	// A symbolic link is followed; a FIFO is not a regular file (and is
	// never opened: opening it would wait for a writer).
	if err := os.Symlink(filepath.Join(dir, "f.yaml"), filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if st, err := hd.stat("link.yaml"); err != nil || !st.regular || st.size != int64(len(text)) {
		t.Errorf("stat of a link: %+v, %v", st, err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if st, err := hd.stat("fifo.yaml"); err != nil || st.regular {
		t.Errorf("stat of a FIFO: %+v, %v", st, err)
	}
	// Loading skips the FIFO (it returns: nothing waits on it) and reports
	// the other files, none of them a hook.
	hooks, errs := LoadDir(dir, Options{})
	var files []string
	for _, e := range errs {
		var le *Error
		if errors.As(e, &le) {
			files = append(files, filepath.Base(le.File))
		}
	}
	if len(hooks) != 0 || strings.Join(files, " ") != "big.yaml empty.yaml f.yaml link.yaml" {
		t.Errorf("LoadDir: %d hooks, errors of %v (%v); want big.yaml empty.yaml f.yaml link.yaml", len(hooks), files, errs)
	}
}
