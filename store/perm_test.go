package store

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hookd/hookd/engine"
)

// TestFilesPrivate: the database and its -wal and -shm files are 0600
// whatever the umask (here 0, which leaves SQLite's 0644 as it is), and
// a database left readable by others is narrowed when it is opened.
func TestFilesPrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	path := filepath.Join(t.TempDir(), "state", "hookd.db")
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mustRun(t, d.AppendEvent(ctx, &engine.Event{ID: "e1", Type: "x.y", Time: t0}))
	files := []string{path, path + "-wal", path + "-shm"}
	checkModes(t, files)
	mustRun(t, d.Close())

	for _, f := range files {
		if err := os.Chmod(f, 0o644); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	d, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	mustRun(t, d.AppendEvent(ctx, &engine.Event{ID: "e2", Type: "x.y", Time: t0}))
	checkModes(t, files)
}

func checkModes(t *testing.T, files []string) {
	t.Helper()
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s: mode %o; want 600", filepath.Base(f), m)
		}
	}
}
