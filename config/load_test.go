package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadDir(t *testing.T) {
	dir := filepath.Join("testdata", "loaddir", "hooks.d")
	hooks, errs := LoadDir(dir, Options{})
	var got strings.Builder
	for _, h := range hooks {
		got.WriteString("hook " + h.Name + " " + filepath.Base(h.Source.File) + "\n")
	}
	for _, err := range errs {
		if _, ok := err.(*Error); !ok {
			t.Errorf("error %T is not an *Error", err)
		}
		got.WriteString(err.Error() + "\n")
	}
	golden(t, filepath.Join("testdata", "loaddir", "result.golden"), got.String())

	// Root defaults to the parent of the hooks directory.
	root, _ := filepath.Abs(filepath.Join("testdata", "loaddir"))
	for _, h := range hooks {
		want := root
		if h.Name == "c" {
			want = filepath.Join(root, "work")
		}
		if h.Workdir != want {
			t.Errorf("%s: workdir %q, want %q", h.Name, h.Workdir, want)
		}
	}

	// An explicit root wins.
	hooks, _ = LoadDir(dir, Options{Root: "/elsewhere"})
	if len(hooks) == 0 || hooks[0].Workdir != "/elsewhere" {
		t.Errorf("explicit root: %+v", hooks)
	}
}

func TestLoadDirMissing(t *testing.T) {
	hooks, errs := LoadDir(filepath.Join(t.TempDir(), "nope"), Options{})
	if len(hooks) != 0 || len(errs) != 1 || !os.IsNotExist(unwrapAll(errs[0])) {
		t.Fatalf("got %v %v", hooks, errs)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}

func TestLoadDirSymlinkAndUnreadable(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "real.yaml")
	if err := os.WriteFile(target, []byte("prompt: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "linked.yaml")); err != nil {
		t.Skip(err)
	}
	if err := os.Symlink(filepath.Join(dir, "missing"), filepath.Join(dir, "dangling.yaml")); err != nil {
		t.Fatal(err)
	}
	hooks, errs := LoadDir(dir, Options{})
	if len(hooks) != 1 || hooks[0].Name != "linked" || len(errs) != 0 {
		t.Fatalf("got %v %v", hooks, errs)
	}
}
