package config

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestLoadDir(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// TestCheckDir: CheckDir finds what LoadDirAll finds — the same errors in
// the same order (bad files, duplicate hook names, duplicate handler
// labels), the same handlers — and returns the names of the hooks that
// LoadDirAll loads, in the same order.
func TestCheckDir(t *testing.T) {
	t.Parallel()
	mixed := t.TempDir()
	for name, body := range map[string]string{
		"a.yaml":     "name: shared\nsteps:\n  - type: shell\n    command: echo {{steps.later.output}}\n",
		"b.yaml":     "name: shared\nprompt: x\n",
		"c.yaml":     "prompt: hello\n",
		"d.yaml":     "trigger: {every: 0s}\nprompt: x\n",
		"e.yaml":     "on: tool:call:before\nlabel: audit\ncommand: [sh]\n",
		"f.yaml":     "on: tool:call:before\ncommand: [sh]\nlabel: audit\n",
		"g.yaml":     "on: run:after\ncommand: [sh]\n",
		"h.yaml":     "prompt: [not, text]\n",
		"shared.yml": "prompt: third of the name\n",
	} {
		if err := os.WriteFile(filepath.Join(mixed, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{filepath.Join("testdata", "loaddir", "hooks.d"), mixed} {
		hooks, hs, errs := LoadDirAll(dir, Options{})
		names, chs, cerrs := CheckDir(dir, Options{})
		var want []string
		for _, h := range hooks {
			want = append(want, h.Name)
		}
		if strings.Join(names, " ") != strings.Join(want, " ") || len(names) == 0 {
			t.Errorf("%s: CheckDir names %q, LoadDirAll hooks %q", dir, names, want)
		}
		if len(chs) != len(hs) {
			t.Errorf("%s: CheckDir %d handlers, LoadDirAll %d", dir, len(chs), len(hs))
		}
		for i := range min(len(chs), len(hs)) {
			if chs[i].File != hs[i].File || chs[i].Label != hs[i].Label {
				t.Errorf("%s: handler %d: %s %s, want %s %s", dir, i, chs[i].File, chs[i].Label, hs[i].File, hs[i].Label)
			}
		}
		text := func(l []error) string {
			var b strings.Builder
			for _, e := range l {
				b.WriteString(e.Error() + "\n")
			}
			return b.String()
		}
		if got, want := text(cerrs), text(errs); got != want || len(errs) < 3 {
			t.Errorf("%s: CheckDir errors:\n%s\nLoadDirAll errors:\n%s", dir, got, want)
		}
	}
}

// TestCheckDirKeepsNoHook: what CheckDir returns holds the hooks' names,
// not the hooks: the live heap after checking 500 files, with the
// result alive, grows by a fraction of what the loaded hooks take.
func TestCheckDirKeepsNoHook(t *testing.T) {
	const n = 500
	dir := t.TempDir()
	for i := range n {
		hook := fmt.Sprintf("trigger: {every: %dm}\nenv: {A: a%d, B: b}\nsteps:\n  - name: s\n    type: shell\n    command: echo {{event.v}} %d | tr a-z A-Z\nprompt: |\n  Look at {{steps.s.output}} and say what changed in %d.\n", 1+i%50, i, i, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("h%04d.yaml", i)), []byte(hook), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	live := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	// The least growth of three: another goroutine's allocation can only
	// add to a measure.
	grow := func(load func() any) uint64 {
		least := uint64(1 << 62)
		for range 3 {
			before := live()
			kept := load()
			after := live()
			runtime.KeepAlive(kept)
			if after > before {
				least = min(least, after-before)
			} else {
				least = 0
			}
		}
		return least
	}
	loaded := grow(func() any {
		hooks, errs := LoadDir(dir, Options{})
		if len(hooks) != n || len(errs) > 0 {
			t.Fatalf("LoadDir: %d hooks, %v", len(hooks), errs)
		}
		return hooks
	})
	checked := grow(func() any {
		names, _, errs := CheckDir(dir, Options{})
		if len(names) != n || len(errs) > 0 {
			t.Fatalf("CheckDir: %d names, %v", len(names), errs)
		}
		return names
	})
	t.Logf("live heap after loading %d files: +%d KB with the hooks, +%d KB with CheckDir's names", n, loaded>>10, checked>>10)
	if checked > 128<<10 || checked*8 > loaded {
		t.Errorf("CheckDir of %d files keeps %d KB live (LoadDir %d KB): want at most 128 KB and an eighth of LoadDir's", n, checked>>10, loaded>>10)
	}
}

// TestJoinName holds joinName to filepath.Join for the directories a
// loader may be given and the names a directory lists.
func TestJoinName(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{".", "./", "/", "//", "hooks.d", "hooks.d/", "./hooks.d", "../x/hooks.d/.", "/a/b/../hooks.d", "a//b", ".."} {
		for _, name := range []string{"a.yaml", "hook-00001.yml", "x y.json", "..a.yaml", "a..yaml"} {
			if got, want := joinName(filepath.Clean(dir), name), filepath.Join(dir, name); got != want {
				t.Errorf("joinName(Clean(%q), %q) = %q, filepath.Join gives %q", dir, name, got, want)
			}
		}
	}
}

// TestLoadDirReportBroken: the files of a hooks directory that do not
// load come back as typed values, in name order, each with all its
// errors and the hook it defines (its name: when that was read, else the
// file's name), for the engine to keep listing; the hooks that load are
// LoadDir's.
func TestLoadDirReportBroken(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "loaddir", "hooks.d")
	l := LoadDirReport(dir, Options{})
	hooks, errs := LoadDir(dir, Options{})
	if len(l.Hooks) != len(hooks) || len(l.Errs) != len(errs) {
		t.Fatalf("LoadDirReport gave %d hooks, %d errors; LoadDir %d, %d", len(l.Hooks), len(l.Errs), len(hooks), len(errs))
	}
	var got []string
	for _, b := range l.Broken {
		got = append(got, fmt.Sprintf("%s %s %q", filepath.Base(b.File), b.Hook, b.Errors))
	}
	want := []string{
		`b.yml shared ["testdata/loaddir/hooks.d/b.yml:3: name: duplicate hook name \"shared\" (first in testdata/loaddir/hooks.d/a.yaml:1)"]`,
		`d.yaml d ["testdata/loaddir/hooks.d/d.yaml:1: syntax error: did not find expected ',' or ']'"]`,
		`e.yml e ["testdata/loaddir/hooks.d/e.yml:1: name: duplicate hook name \"e\" (first in testdata/loaddir/hooks.d/e.yaml:1)"]`,
		`f.yaml f ["testdata/loaddir/hooks.d/f.yaml:2: timeout: must be > 0 (got 0)"]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("broken:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A file that names its hook is listed by that name, with every
	// error; a broken handler file by its file's name.
	tmp := t.TempDir()
	for name, src := range map[string]string{
		"triage.yaml": "name: ci-triage\ntools: [raed_file]\nenv: {T: '${T}'}\nprompt: x\n",
		"guard.yaml":  "on: tool:call:before\nrun: [true]\nbogus: 1\n",
	} {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l = LoadDirReport(tmp, Options{})
	if len(l.Broken) != 2 {
		t.Fatalf("broken %+v", l.Broken)
	}
	if b := l.Broken[0]; b.Hook != "guard" || len(b.Errors) == 0 || !strings.Contains(b.Errors[0], "guard.yaml:") {
		t.Errorf("guard.yaml: %+v", b)
	}
	if b := l.Broken[1]; b.Hook != "ci-triage" || len(b.Errors) != 2 || !strings.Contains(b.Errors[0], `triage.yaml:2: tools[0]: unknown tool "raed_file"`) ||
		!strings.Contains(b.Errors[1], "triage.yaml:3: env.T:") {
		t.Errorf("triage.yaml: %+v", b)
	}
}
