package store

import (
	"context"
	"database/sql"
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

// TestFilesPrivateSymlink: when the database path is a symbolic link,
// SQLite keeps the -wal and -shm files beside the link's target, and
// those are the ones Open narrows to 0600 (a wider pair left there by
// another tool is narrowed), not names beside the link. Size reads the
// log there too.
func TestFilesPrivateSymlink(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	target := filepath.Join(t.TempDir(), "real", "hookd.db")
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "hookd.db")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := Open(link)
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, d.AppendEvent(ctx, &engine.Event{ID: "e1", Type: "x.y", Time: t0}))
	sidecars := []string{target + "-wal", target + "-shm"}
	checkModes(t, append([]string{target}, sidecars...))
	mustRun(t, d.Close())

	// Another tool, which has the database open (so its -wal and -shm
	// stay), left them readable by others.
	other, err := sql.Open("sqlite3", target+"?_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec(`CREATE TABLE other_tool (x)`); err != nil {
		t.Fatal(err)
	}
	for _, f := range sidecars {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err = Open(link)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	checkModes(t, sidecars)
	mustRun(t, d.AppendEvent(ctx, &engine.Event{ID: "e2", Type: "x.y", Time: t0}))
	checkModes(t, sidecars)
	// Size reads the log beside the target too.
	size, err := d.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(target + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if size.WALBytes == 0 || size.WALBytes != fi.Size() {
		t.Errorf("Size: WAL %d bytes; the log beside the target has %d", size.WALBytes, fi.Size())
	}
	for _, f := range []string{link + "-wal", link + "-shm"} {
		if _, err := os.Lstat(f); !os.IsNotExist(err) {
			t.Errorf("%s: %v; want no file beside the link", f, err)
		}
	}
}
