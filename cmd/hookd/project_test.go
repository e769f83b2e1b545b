package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindsProject: a command run in a subdirectory of a project uses
// the project's hookd.yaml (or, without one, its hooks.d), and
// HOOKD_CONFIG names the settings file from anywhere, as --config does.
func TestFindsProject(t *testing.T) {
	e := newEnv(t, "max_concurrent: 3\n", map[string]string{"hello.yaml": "steps:\n  - type: shell\n    command: echo hi\nskip_llm: true\n"})
	sub := e.path("src/deep")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	r := runHost(host{dir: sub, stdin: strings.NewReader("")}, "list")
	if r.code != 0 || !strings.Contains(r.stdout, "hello") {
		t.Fatalf("list from a subdirectory of the project:\n%s", r)
	}
	r = runHost(host{dir: sub, stdin: strings.NewReader("")}, "status")
	if want := "settings:  " + e.path("hookd.yaml"); !strings.Contains(r.stdout, want) {
		t.Errorf("status does not say which settings it used (%q):\n%s", want, r)
	}

	// HOOKD_CONFIG, from a directory outside the project.
	elsewhere := t.TempDir()
	env := func(k string) string {
		if k == ConfigEnv {
			return e.path("hookd.yaml")
		}
		return ""
	}
	r = runHost(host{dir: elsewhere, getenv: env, stdin: strings.NewReader("")}, "list")
	if r.code != 0 || !strings.Contains(r.stdout, "hello") {
		t.Fatalf("list with %s:\n%s", ConfigEnv, r)
	}
	bad := func(k string) string {
		if k == ConfigEnv {
			return filepath.Join(elsewhere, "nope.yaml")
		}
		return ""
	}
	if r = runHost(host{dir: elsewhere, getenv: bad, stdin: strings.NewReader("")}, "list"); r.code != exitError || !strings.Contains(r.stderr, "nope.yaml") {
		t.Errorf("a %s naming no file must be an error naming it:\n%s", ConfigEnv, r)
	}

	// A project with hooks.d and no hookd.yaml is found by its hooks.d.
	bare := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bare, "hooks.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bare, "hooks.d", "bare.yaml"), []byte("steps:\n  - type: shell\n    command: echo hi\nskip_llm: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(bare, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r = runHost(host{dir: filepath.Join(bare, "sub"), stdin: strings.NewReader("")}, "list"); r.code != 0 || !strings.Contains(r.stdout, "bare") {
		t.Errorf("list below a project with hooks.d only:\n%s", r)
	}
}

// TestFindsProjectProcess: the real binary, run in a subdirectory of a
// project, finds its hookd.yaml; HOOKD_CONFIG names the settings file
// from outside it; --config wins over HOOKD_CONFIG; and hookd status
// says which file each used.
func TestFindsProjectProcess(t *testing.T) {
	e := newEnv(t, "max_concurrent: 3\n", map[string]string{"hello.yaml": "steps:\n  - type: shell\n    command: echo hi\nskip_llm: true\n"})
	e.write("other.yaml", "max_concurrent: 2\n")
	sub := e.path("src/deep")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	for _, tt := range []struct {
		name, dir, env string
		args           []string
		want           string
	}{
		{"a subdirectory", sub, "", nil, e.path("hookd.yaml")},
		{"HOOKD_CONFIG", elsewhere, e.path("other.yaml"), nil, e.path("other.yaml")},
		{"--config over HOOKD_CONFIG", sub, e.path("hookd.yaml"), []string{"--config", e.path("other.yaml")}, e.path("other.yaml")},
	} {
		cmd := e.newCommand(context.Background(), append([]string{"status"}, tt.args...)...)
		cmd.Dir = tt.dir
		cmd.Env = append(cmd.Env, ConfigEnv+"="+tt.env) // "" is unset
		out, err := cmd.CombinedOutput()
		// No daemon runs: status exits 1 saying so, and names the settings.
		if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != exitError ||
			!strings.Contains(string(out), "hookd is not running") || !strings.Contains(string(out), "\nsettings:  "+tt.want+"\n") {
			t.Errorf("%s: hookd status (%v) must name %s:\n%s", tt.name, err, tt.want, out)
		}
	}
	cmd := e.newCommand(context.Background(), "list")
	cmd.Dir = sub
	cmd.Env = append(cmd.Env, ConfigEnv+"=")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "hello") {
		t.Errorf("hookd list in a subdirectory of the project (%v):\n%s", err, out)
	}
}

// TestReadOnlyCommandsWithBrokenSettings: with an invalid hookd.yaml,
// list, runs, run, status and validate still work on the db and
// hooks_dir it names and say what they used, in the form
// "hookd.yaml:LINE invalid; using …"; status names the file and says it
// is invalid; a command that acts (fire) refuses.
func TestReadOnlyCommandsWithBrokenSettings(t *testing.T) {
	e := newEnv(t, "", map[string]string{"hello.yaml": "steps:\n  - type: shell\n    command: echo hi\nskip_llm: true\n"})
	id := runID(t, e.must(0, "fire", "hello", "--wait"))
	e.write("hookd.yaml", "db: .hookd/hookd.db\nmax_concurent: 3\n")
	invalid := "hookd.yaml:2 invalid; using db " // as the binary run in the directory names it
	// The paths are named as the user names them, relative to the
	// directory (before, absolute: "using db /tmp/…/.hookd/hookd.db").
	used := invalid + ".hookd/hookd.db, hooks_dir hooks.d (its db)"
	said := func(r result) bool {
		return strings.Contains(r.stderr, "max_concurent: unknown field; did you mean max_concurrent?") &&
			strings.Contains(r.stderr, "hookd "+r.args[0]+": "+used+"\n")
	}
	if r := e.must(0, "runs"); !strings.Contains(r.stdout, "hello") || !said(r) {
		t.Errorf("runs with an invalid hookd.yaml:\n%s", r)
	}
	if r := e.must(0, "list"); !strings.Contains(r.stdout, "hello") || !said(r) {
		t.Errorf("list with an invalid hookd.yaml:\n%s", r)
	}
	if r := e.must(0, "run", id); !strings.Contains(r.stdout, "completed") || !said(r) {
		t.Errorf("run with an invalid hookd.yaml:\n%s", r)
	}
	// No daemon runs: status says so, and which settings it read.
	if r := e.must(exitError, "status"); !strings.Contains(r.stdout, "settings:  "+invalid) || strings.Contains(r.stdout, "none (") || !said(r) {
		t.Errorf("status with an invalid hookd.yaml must name it and say it is invalid:\n%s", r)
	}
	if r := e.must(exitError, "validate"); !strings.Contains(r.stdout, "1 hook(s) valid") || !strings.Contains(r.stdout, "hookd.yaml is invalid") || !said(r) {
		t.Errorf("validate with an invalid hookd.yaml:\n%s", r)
	}
	if r := e.run("fire", "hello"); r.code != exitError || !strings.Contains(r.stderr, "max_concurent") {
		t.Errorf("fire with an invalid hookd.yaml must refuse, naming the error:\n%s", r)
	}
}

// TestDidYouMean: a mistyped command or hook name gets the name the user
// most likely meant, transpositions included, in one line.
func TestDidYouMean(t *testing.T) {
	e := newEnv(t, "", map[string]string{"nightly.yaml": "steps:\n  - type: shell\n    command: echo hi\nskip_llm: true\n"})
	r := e.run("lst")
	if r.code != exitUsage || !strings.Contains(r.stderr, `unknown command "lst"; did you mean list?`) || strings.Count(r.stderr, "\n") > 1 {
		t.Errorf("hookd lst:\n%s", r)
	}
	for _, args := range [][]string{{"fire", "nigthly"}, {"next", "nigthly"}, {"render", "nigthly"}, {"runs", "nigthly"}} {
		if r := e.run(args...); r.code != exitError || !strings.Contains(r.stderr, `no hook named "nigthly"; did you mean nightly?`) {
			t.Errorf("hookd %s:\n%s", strings.Join(args, " "), r)
		}
	}
	e.serve()
	if r := e.run("fire", "nigthly"); r.code != exitError || !strings.Contains(r.stderr, "did you mean nightly?") {
		t.Errorf("hookd fire nigthly with a daemon:\n%s", r)
	}
}

// TestInProcessNamesFilesAsBinary: a command run in this process, in a
// host with the test's directory (env.cmdsInProcess, and every test's
// commands by default), prints what the real binary run in that
// directory prints: the files it names (hook files that do not load,
// hooks.d, hookd.yaml, the socket) relative to it, not by the absolute
// paths the host opens them by. Tests match such lines by their start
// (the containment battery's refusals: "hooks.d/ID.yaml:").
func TestInProcessNamesFilesAsBinary(t *testing.T) {
	e := newProcEnv(t, "", map[string]string{
		"good.yaml": "steps:\n  - type: shell\n    command: echo hi\nskip_llm: true\n",
		"bad.yaml":  "trigger:\n  every: -1m\nsteps:\n  - type: shell\n    command: echo hi\nskip_llm: true\n",
	})
	e.badHooksOK = true
	same := func(args ...string) {
		t.Helper()
		e.cmdsInProcess = false
		want := e.run(args...)
		e.cmdsInProcess = true
		got := e.run(args...)
		if got.code != want.code || got.stdout != want.stdout || got.stderr != want.stderr {
			t.Errorf("in process:\n%s\nthe binary:\n%s", got, want)
		}
	}
	for _, args := range [][]string{{"validate"}, {"validate", "--json"}, {"validate", "hooks.d"}, {"status"}, {"handlers"},
		{"render", "nope"}, {"list"}, {"list", "--json"}} {
		same(args...)
	}
	e.write("hookd.yaml", "db: .hookd/hookd.db\nmax_concurent: 3\n")
	for _, args := range [][]string{{"validate"}, {"validate", "--json"}, {"status"}, {"fire", "good"}, {"list"}} {
		same(args...)
	}
}
