package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadRefusesWritableByOthers: a hooks directory or hook file that
// another user could have written is refused, as sshd refuses its files,
// unless AllowInsecure says to load it anyway.
func TestLoadRefusesWritableByOthers(t *testing.T) {
	write := func(dir, name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("directory writable by all", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "hooks.d")
		os.Mkdir(dir, 0o755)
		write(dir, "a.yaml", "prompt: hi\n", 0o644)
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		hooks, _, errs := LoadDirAll(dir, Options{})
		if len(hooks) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), dir+": refusing to load: the directory is writable by every user (mode 0777") ||
			!strings.Contains(errs[0].Error(), "allow_insecure_hooks: true") {
			t.Errorf("hooks %d, errs %v", len(hooks), errs)
		}
		if hooks, _, errs := LoadDirAll(dir, Options{AllowInsecure: true}); len(hooks) != 1 || len(errs) != 0 {
			t.Errorf("allowed: hooks %d, errs %v", len(hooks), errs)
		}
	})

	t.Run("file writable by all, directly and through a link", func(t *testing.T) {
		base := t.TempDir()
		dir := filepath.Join(base, "hooks.d")
		os.Mkdir(dir, 0o755)
		write(dir, "good.yaml", "prompt: hi\n", 0o644)
		bad := write(dir, "bad.yaml", "prompt: pwned\n", 0o666)
		target := write(base, "elsewhere.yaml", "prompt: pwned\n", 0o646)
		if err := os.Symlink(target, filepath.Join(dir, "link.yaml")); err != nil {
			t.Fatal(err)
		}
		hooks, _, errs := LoadDirAll(dir, Options{})
		if len(hooks) != 1 || hooks[0].Name != "good" || len(errs) != 2 ||
			!strings.Contains(errs[0].Error(), bad+": refusing to load: the file is writable by every user (mode 0666") ||
			!strings.Contains(errs[1].Error(), "link.yaml: refusing to load: the file is writable by every user (mode 0646") {
			t.Errorf("hooks %v, errs %v", hooks, errs)
		}
	})

	t.Run("file owned by another user", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("only root can give a file to another user")
		}
		dir := filepath.Join(t.TempDir(), "hooks.d")
		os.Mkdir(dir, 0o755)
		p := write(dir, "theirs.yaml", "prompt: hi\n", 0o644)
		if err := os.Chown(p, 4321, 4321); err != nil {
			t.Fatal(err)
		}
		hooks, _, errs := LoadDirAll(dir, Options{})
		if len(hooks) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "refusing to load: it is owned by uid 4321, not by hookd's user (uid 0) or root") {
			t.Errorf("hooks %d, errs %v", len(hooks), errs)
		}
		if err := os.Chown(dir, 4321, 4321); err != nil {
			t.Fatal(err)
		}
		if _, _, errs := LoadDirAll(dir, Options{}); len(errs) != 1 || !strings.Contains(errs[0].Error(), dir+": refusing to load: it is owned by uid 4321") {
			t.Errorf("directory of another user: %v", errs)
		}
	})
}

// TestBroadWorkdir: the file system root and the home directory are
// refused as a workdir, by name or through a link, unless
// allow_broad_workdir: true.
func TestBroadWorkdir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	link := filepath.Join(t.TempDir(), "root-link")
	if err := os.Symlink("/", link); err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	for _, tc := range []struct {
		src, root, want string
	}{
		{"prompt: hi\nworkdir: /\n", project, `x.yaml:2: workdir: / is the file system root`},
		{"prompt: hi\nworkdir: /tmp/..\n", project, `x.yaml:2: workdir: / is the file system root`},
		{"prompt: hi\nworkdir: " + link + "\n", project, "is the file system root"},
		{"prompt: hi\nworkdir: " + home + "\n", project, home + " is your home directory"},
		{"prompt: hi\nworkdir: ..\n", filepath.Join(home, "proj"), home + " is your home directory"},
		{"prompt: hi\n", home, "x.yaml:1: workdir: " + home + " is your home directory"},
		{"prompt: hi\nworkdir: /\nallow_broad_workdir: true\n", project, ""},
		{"prompt: hi\nallow_broad_workdir: true\n", home, ""},
		{"prompt: hi\nworkdir: sub\n", home, ""},
		{"prompt: hi\n", project, ""},
	} {
		_, err := ParseHook(strings.NewReader(tc.src), "x.yaml", Options{Root: tc.root, DefaultName: "x"})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q in %s: %v", tc.src, tc.root, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "allow_broad_workdir: true")):
			t.Errorf("%q in %s: %v; want %q", tc.src, tc.root, err, tc.want)
		}
	}
}
