package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hookd/hookd/sandbox"
)

// TestWritesRefusesHookdPaths loads a project whose hooks declare
// writes: over hookd's own files (hooks.d, the state directory, the
// token file, hookd.yaml) and checks each is refused at load with its
// file, line and field, while a path beside them loads.
func TestWritesRefusesHookdPaths(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	hooksDir := filepath.Join(root, "hooks.d")
	for _, d := range []string{hooksDir, filepath.Join(root, ".hookd"), filepath.Join(root, "secrets")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	settings := "token_file: secrets/token\n"
	if err := os.WriteFile(filepath.Join(root, "hookd.yaml"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, ".hookd"), filepath.Join(root, "state-link")); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"ok.yaml":       "writes: [out, /var/tmp/x, .hookd-not]\nsteps:\n  - type: test_cmd\n    command: make\n    writes: [dist]\n",
		"whole.yaml":    "writes: [.]\n",
		"hooks.yaml":    "writes: [out, hooks.d/new]\n",
		"state.yaml":    "prompt: hi\nwrites:\n  - .hookd\n",
		"token.yaml":    "writes: [secrets]\n",
		"settings.yaml": "writes: [" + filepath.Join(root, "hookd.yaml") + "]\n",
		"link.yaml":     "writes: [state-link/sub]\n",
		"step.yaml":     "steps:\n  - type: test_cmd\n    command: make\n    writes: [out, .hookd/hookd.db]\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(hooksDir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d, err := LoadDaemonFile(filepath.Join(root, "hookd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	hooks, errs := LoadDir(d.HooksDir, d.HookOptions())
	if len(hooks) != 1 || hooks[0].Name != "ok" {
		t.Errorf("loaded %d hooks, want only ok", len(hooks))
	}
	var got []string
	for _, e := range errs {
		got = append(got, strings.ReplaceAll(e.Error(), root, "ROOT"))
	}
	want := []string{
		"hooks.d/hooks.yaml:1: writes[1]: ROOT/hooks.d/new lies inside ROOT/hooks.d, one of hookd's own files",
		"hooks.d/link.yaml:1: writes[0]: ROOT/state-link/sub lies inside ROOT/.hookd, one of hookd's own files",
		"hooks.d/settings.yaml:1: writes[0]: ROOT/hookd.yaml is ROOT/hookd.yaml, one of hookd's own files",
		"hooks.d/state.yaml:3: writes[0]: ROOT/.hookd is ROOT/.hookd, one of hookd's own files",
		"hooks.d/step.yaml:4: steps[0].writes[1]: ROOT/.hookd/hookd.db lies inside ROOT/.hookd, one of hookd's own files",
		"hooks.d/token.yaml:1: writes[0]: ROOT/secrets holds ROOT/secrets/token, one of hookd's own files",
		"hooks.d/whole.yaml:1: writes[0]: ROOT holds ROOT/hookd.yaml, one of hookd's own files",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("error %d:\n got %s\nwant %s…", i, got[i], want[i])
		}
	}
}

// TestWritesInsideStateDirOfProject: with db: hookd.db the state
// directory is the project root, which is also the hooks' workdir: a
// writes: inside it loads, one that holds it or the database does not.
func TestWritesInsideStateDirOfProject(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "hooks.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "hookd.yaml"), []byte("db: hookd.db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"out.yaml": "writes: [out]\n", "db.yaml": "writes: [hookd.db-wal]\n"} {
		if err := os.WriteFile(filepath.Join(root, "hooks.d", name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d, err := LoadDaemonFile(filepath.Join(root, "hookd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	hooks, errs := LoadDir(d.HooksDir, d.HookOptions())
	if len(hooks) != 1 || hooks[0].Name != "out" || len(errs) != 1 || !strings.Contains(errs[0].Error(), "hooks.d/db.yaml:1: writes[0]: ") {
		t.Errorf("hooks %v, errors %v: want out loaded and db refused", hooks, errs)
	}
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want int64
		err  string
	}{
		{"512MiB", 512 << 20, ""},
		{"512M", 512 << 20, ""},
		{"512m", 512 << 20, ""},
		{"2G", 2 << 30, ""},
		{"1.5GiB", 3 << 29, ""},
		{"100MB", 100e6, ""},
		{"64 KiB", 64 << 10, ""},
		{"1048576", 1 << 20, ""},
		{"1T", 1 << 40, ""},
		{"lots", 0, "is not a size"},
		{"", 0, "is not a size"},
		{"12 parsecs", 0, "unknown unit"},
		{"1.5", 0, "must be whole"},
		{"1.2.3M", 0, "is not a size"},
		{"99999999999T", 0, "too large"},
	} {
		got, err := ParseSize(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseSize(%q) = %d, %v; want an error saying %q", c.in, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

// TestSandboxWarnings: where containment is missing, a hook that starts
// processes from untrusted input is warned about (its triggers will be
// refused), and limits that cannot be enforced are; hooks that run as
// written get no warning.
func TestSandboxWarnings(t *testing.T) {
	t.Parallel()
	uncontained := &sandbox.Status{Files: "unconfined", NetworkOK: true, Limits: "not enforceable here"}
	off := &sandbox.Status{Off: true}
	contained := &sandbox.Status{FilesOK: true, NetworkOK: true, LimitsOK: true}
	files := map[string]string{
		"event.yaml":   "trigger: {event: upload.*}\nsteps:\n  - type: test_cmd\n    command: make\n",
		"tools.yaml":   "prompt: hi\ntools: [run_command]\n",
		"limits.yaml":  "steps:\n  - type: test_cmd\n    command: make\nlimits: {pids: 10}\n",
		"noproc.yaml":  "trigger: {event: upload.*}\nsteps:\n  - type: test_echo\n    text: hi\n",
		"manual.yaml":  "steps:\n  - type: test_cmd\n    command: make\n",
		"invalid.yaml": "trigger: {event: upload.*}\nsteps:\n  - type: test_cmd\n    command: make\ntimeout: -1s\n",
	}
	for _, c := range []struct {
		status *sandbox.Status
		want   []string
	}{
		{uncontained, []string{
			"hooks.d/event.yaml:1: trigger: this hook starts processes from untrusted input, which hookd cannot contain on this machine (see hookd status): its triggers will be refused (sandbox_unavailable) unless hookd.yaml sets sandbox: off",
			"hooks.d/limits.yaml:4: limits: pids 10 will not be enforced on this machine: not enforceable here",
			"hooks.d/tools.yaml:2: tools: this hook starts processes from untrusted input, which hookd cannot contain on this machine (see hookd status): its triggers will be refused (sandbox_unavailable) unless hookd.yaml sets sandbox: off",
		}},
		{off, []string{"hooks.d/limits.yaml:4: limits: pids 10 will not be enforced on this machine: sandbox: off in hookd.yaml"}},
		{contained, nil},
	} {
		var got []string
		for name, body := range files {
			opts := Options{Root: "/project", DefaultName: strings.TrimSuffix(name, ".yaml"), Sandbox: c.status,
				Warn: func(e *Error) { got = append(got, e.Error()) }}
			ParseHook(strings.NewReader(body), "hooks.d/"+name, opts)
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("status %+v: warnings\n%s\nwant\n%s", c.status, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}
