package steps

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// confineTree makes:
//
//	base/hook/       the workdir: a.txt, sub/b.txt, links in and out
//	base/shared/     an extra root: s.txt
//	base/secret/     outside everything: key
func confineTree(t *testing.T) (base, hook string) {
	t.Helper()
	base = realDir(t, t.TempDir())
	hook = filepath.Join(base, "hook")
	writeFiles(t, base, map[string]string{
		"hook/a.txt":     "a",
		"hook/sub/b.txt": "b",
		"shared/s.txt":   "s",
		"secret/key":     "KEY",
	})
	for link, target := range map[string]string{
		"hook/out":       filepath.Join(base, "secret"),
		"hook/outfile":   filepath.Join(base, "secret", "key"),
		"hook/relout":    "../secret/key",
		"hook/in":        "sub/b.txt",
		"hook/toshared":  "../shared",
		"hook/sub/up":    "..",
		"hook/dangling":  "nowhere",
		"hook/sub/upout": "../../secret",
	} {
		if err := os.Symlink(target, filepath.Join(base, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	return base, hook
}

func TestRootsResolve(t *testing.T) {
	base, hook := confineTree(t)
	tests := []struct {
		path  string
		extra []string
		want  string // relative to base; "" means an error containing wantErr
		err   string
	}{
		{path: "a.txt", want: "hook/a.txt"},
		{path: ".", want: "hook"},
		{path: "sub/b.txt", want: "hook/sub/b.txt"},
		{path: "sub/../a.txt", want: "hook/a.txt"},
		{path: "in", want: "hook/sub/b.txt"},
		{path: "sub/up/a.txt", want: "hook/a.txt"},
		{path: filepath.Join(hook, "a.txt"), want: "hook/a.txt"},
		{path: "../secret/key", err: "leaves the hook's workdir"},
		{path: "sub/../../secret/key", err: "leaves the hook's workdir"},
		{path: "/etc/passwd", err: "outside the hook's workdir"},
		{path: "out/key", err: "outside the hook's workdir"},
		{path: "outfile", err: "outside the hook's workdir"},
		{path: "relout", err: "outside the hook's workdir"},
		{path: "sub/upout/key", err: "outside the hook's workdir"},
		{path: "toshared/s.txt", err: "outside the hook's workdir"},
		{path: "missing", err: "no such file or directory"},
		{path: "dangling", err: "no such file or directory"},
		{path: "", err: "empty path"},
		{path: "a\x00b", err: "NUL"},
		// An extra root widens what may be reached, and nothing else.
		{path: "toshared/s.txt", extra: []string{"../shared"}, want: "shared/s.txt"},
		{path: "../shared/s.txt", extra: []string{"../shared"}, want: "shared/s.txt"},
		{path: filepath.Join(base, "shared", "s.txt"), extra: []string{filepath.Join(base, "shared")}, want: "shared/s.txt"},
		{path: "../secret/key", extra: []string{"../shared"}, err: "leaves the hook's workdir and its allowed roots"},
		{path: "../shared/../secret/key", extra: []string{"../shared"}, err: "leaves"},
	}
	for _, tt := range tests {
		t.Run(tt.path+"|"+strings.Join(tt.extra, ","), func(t *testing.T) {
			got, err := Confine(hook, tt.extra, tt.path)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Confine = %q, %v; want an error containing %q", got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(base, filepath.FromSlash(tt.want)); got != want {
				t.Errorf("Confine = %s; want %s", got, want)
			}
		})
	}
}

func TestNewRootsErrors(t *testing.T) {
	_, hook := confineTree(t)
	for _, extra := range [][]string{{"missing"}, {"a.txt"}} {
		if _, err := NewRoots(hook, extra); err == nil {
			t.Errorf("NewRoots(%q) accepted a root that is not a directory", extra)
		}
	}
	if _, err := NewRoots(filepath.Join(hook, "nope"), nil); err == nil {
		t.Error("NewRoots accepted a missing workdir")
	}
}

func TestRootsResolveNew(t *testing.T) {
	base, hook := confineTree(t)
	r, err := NewRoots(hook, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ path, want, err string }{
		{path: "new.txt", want: "hook/new.txt"},
		{path: "sub/new.txt", want: "hook/sub/new.txt"},
		{path: "a.txt", want: "hook/a.txt"},
		{path: "in", want: "hook/sub/b.txt"},
		{path: ".", want: "hook"},
		{path: "nodir/new.txt", err: "no such file or directory"},
		{path: "out/new", err: "outside"},
		{path: "outfile", err: "outside"},
		{path: "../new", err: "leaves"},
	}
	for _, tt := range tests {
		got, err := r.ResolveNew(tt.path)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ResolveNew(%q) = %q, %v; want an error containing %q", tt.path, got, err, tt.err)
			}
			continue
		}
		if want := filepath.Join(base, filepath.FromSlash(tt.want)); err != nil || got != want {
			t.Errorf("ResolveNew(%q) = %q, %v; want %s", tt.path, got, err, want)
		}
	}
}

func TestRootsOpenAndRel(t *testing.T) {
	base, hook := confineTree(t)
	r, err := NewRoots(hook, []string{"../shared"})
	if err != nil {
		t.Fatal(err)
	}
	f, real, err := r.Open("in")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "b" || r.Rel(real) != "sub/b.txt" {
		t.Errorf("read %q from %s (rel %s)", b, real, r.Rel(real))
	}
	if got := r.Rel(filepath.Join(base, "shared", "s.txt")); got != filepath.Join(base, "shared", "s.txt") {
		t.Errorf("Rel of a file in an extra root = %s", got)
	}
	if _, _, err := r.Open("outfile"); err == nil {
		t.Error("Open followed a link out of the roots")
	}
}

// TestOpenBeneathSwap replaces a checked file by a link out of the root
// between the check and the open: the open must refuse it.
func TestOpenBeneathSwap(t *testing.T) {
	base, hook := confineTree(t)
	r, err := NewRoots(hook, nil)
	if err != nil {
		t.Fatal(err)
	}
	real, err := r.Resolve("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "secret", "key"), real); err != nil {
		t.Fatal(err)
	}
	if f, err := openBeneath(r.Workdir(), real); err == nil {
		b, _ := io.ReadAll(f)
		f.Close()
		t.Fatalf("opened the swapped link and read %q", b)
	}
	// A directory on the way swapped for a link out is refused too.
	sub := filepath.Join(hook, "sub")
	if err := os.Rename(sub, filepath.Join(hook, "sub.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "secret"), sub); err != nil {
		t.Fatal(err)
	}
	if f, err := openBeneath(r.Workdir(), filepath.Join(sub, "key")); err == nil {
		f.Close()
		t.Fatal("opened a file through a directory swapped for a link out")
	}
}

func TestOpenFIFODoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	r, err := NewRoots(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := r.Open("fifo")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Mode().IsRegular() {
		t.Errorf("stat %v, %v", fi, err)
	}
}
