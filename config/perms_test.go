package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadRefusesWritableByOthers: a hooks directory or hook file that
// another user could have written is refused, as sshd refuses its files,
// unless AllowInsecure says to load it anyway.
func TestLoadRefusesWritableByOthers(t *testing.T) {
	t.Parallel()
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

// TestLoadChecksTheFileItReads performs the swap a hostile local user
// can make when a hook file is a symbolic link into a directory they can
// write: between the loader's stat of the file and its open, the link's
// target is renamed over by a file writable by every user (or by a
// FIFO). The checks are of the file read, so the swapped-in file is
// refused (the FIFO skipped without waiting for a writer), and its hook
// is never loaded.
// Not parallel: it sets afterStat, which every load in the package calls
// (a parallel test loading meanwhile is a data race).
func TestLoadChecksTheFileItReads(t *testing.T) {
	swap := func(t *testing.T, put func(shared string) error) ([]string, []error) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "hooks.d")
		shared := filepath.Join(t.TempDir(), "shared") // the other user's directory
		for _, d := range []string{dir, shared} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		target := filepath.Join(shared, "mine.yaml")
		if err := os.WriteFile(target, []byte("name: mine\nprompt: hi\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, "mine.yaml")); err != nil {
			t.Fatal(err)
		}
		swapped := false
		afterStat = func(file string) {
			if filepath.Base(file) == "mine.yaml" && !swapped {
				swapped = true
				if err := put(shared); err != nil {
					t.Error(err)
				}
			}
		}
		defer func() { afterStat = func(string) {} }()
		type result struct {
			hooks []string
			errs  []error
		}
		done := make(chan result, 1)
		go func() {
			hooks, _, errs := LoadDirAll(dir, Options{})
			var names []string
			for _, h := range hooks {
				names = append(names, h.Name)
			}
			done <- result{names, errs}
		}()
		select {
		case r := <-done:
			if !swapped {
				t.Fatal("the file was never swapped")
			}
			return r.hooks, r.errs
		case <-time.After(2 * time.Minute):
			// An open waiting for a FIFO's writer: release it.
			if w, err := os.OpenFile(target, os.O_WRONLY, 0); err == nil {
				w.Close()
			}
			<-done
			t.Fatal("loading waited on the FIFO put in the hook file's place")
			return nil, nil
		}
	}

	t.Run("file writable by all", func(t *testing.T) {
		hooks, errs := swap(t, func(shared string) error {
			evil := filepath.Join(shared, "evil.tmp")
			if err := os.WriteFile(evil, []byte("name: evil\nprompt: pwned\n"), 0o600); err != nil {
				return err
			}
			if err := os.Chmod(evil, 0o666); err != nil {
				return err
			}
			return os.Rename(evil, filepath.Join(shared, "mine.yaml"))
		})
		if len(hooks) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "refusing to load: the file is writable by every user (mode 0666") {
			t.Errorf("loaded hooks %v, errors %v; want the swapped-in file refused", hooks, errs)
		}
	})
	t.Run("FIFO", func(t *testing.T) {
		hooks, errs := swap(t, func(shared string) error {
			target := filepath.Join(shared, "mine.yaml")
			if err := os.Remove(target); err != nil {
				return err
			}
			return syscall.Mkfifo(target, 0o644)
		})
		if len(hooks) != 0 || len(errs) != 0 {
			t.Errorf("loaded hooks %v, errors %v; want the FIFO skipped", hooks, errs)
		}
	})
}

// TestLoadEntryReplaced replaces a hook file that the directory listed
// as a regular file (whose type the loader takes from the listing,
// without a stat) between the listing and the open: by a FIFO, which is
// skipped without waiting for a writer, and by nothing (removed), which
// is skipped as a file that is not there.
// Not parallel: it sets afterStat, which every load in the package calls
// (a parallel test loading meanwhile is a data race).
func TestLoadEntryReplaced(t *testing.T) {
	for _, tc := range []struct {
		name string
		put  func(file string) error
	}{
		{"FIFO", func(file string) error {
			if err := os.Remove(file); err != nil {
				return err
			}
			return syscall.Mkfifo(file, 0o644)
		}},
		{"removed", os.Remove},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "hooks.d")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"a", "b"} {
				if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte("prompt: hi\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			swapped := false
			afterStat = func(file string) {
				if filepath.Base(file) == "a.yaml" && !swapped {
					swapped = true
					if err := tc.put(file); err != nil {
						t.Error(err)
					}
				}
			}
			defer func() { afterStat = func(string) {} }()
			type result struct {
				hooks []string
				errs  []error
			}
			done := make(chan result, 1)
			go func() {
				hooks, errs := LoadDir(dir, Options{})
				var names []string
				for _, h := range hooks {
					names = append(names, h.Name)
				}
				done <- result{names, errs}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(2 * time.Minute):
				if w, err := os.OpenFile(filepath.Join(dir, "a.yaml"), os.O_WRONLY, 0); err == nil {
					w.Close()
				}
				<-done
				t.Fatal("loading waited on the FIFO put in the hook file's place")
			}
			if !swapped {
				t.Fatal("the file was never replaced")
			}
			if len(r.errs) != 0 || !slices.Equal(r.hooks, []string{"b"}) {
				t.Errorf("loaded hooks %v, errors %v; want b alone, no error", r.hooks, r.errs)
			}
		})
	}
}
