package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/testtool"
)

// TestRunRefs: hookd run takes "last", a hook's name, a unique id
// prefix (in any case) as well as an id; an ambiguous prefix and an
// unknown name are errors that say so. The outcome and the answer come
// first; --brief stops there.
func TestRunRefs(t *testing.T) {
	e := newEnv(t, "", progressHooks)
	first := runID(t, e.must(1, "fire", "two", "--wait"))
	second := runID(t, e.must(1, "fire", "two", "--wait"))

	for _, ref := range []string{"last", "two", second, strings.ToLower(second[:len(second)-2])} {
		r := e.must(0, "run", ref)
		if !strings.HasPrefix(r.stdout, "run "+second+"\n") {
			t.Errorf("run %s:\n%s", ref, r)
		}
	}
	if r := e.must(0, "run", first[:len(first)-1]); !strings.HasPrefix(r.stdout, "run "+first+"\n") {
		t.Errorf("run by prefix of the first:\n%s", r)
	}
	// The ids share their first characters (the same millisecond range).
	common := 0
	for common < len(first) && first[common] == second[common] {
		common++
	}
	if r := e.must(1, "run", first[:common]); !strings.Contains(r.stderr, "ambiguous") || !strings.Contains(r.stderr, first) {
		t.Errorf("an ambiguous prefix:\n%s", r)
	}
	if r := e.must(1, "run", "nosuch"); !strings.Contains(r.stderr, "no run nosuch") {
		t.Errorf("an unknown ref:\n%s", r)
	}

	r := e.must(0, "run", "last")
	status := strings.Index(r.stdout, "status:")
	steps := strings.Index(r.stdout, "step_0 (first)")
	if status < 0 || steps < 0 || status > steps || !strings.Contains(r.stdout, "reason:    step_1 (second): exit code 3") {
		t.Errorf("run prints the outcome first:\n%s", r)
	}
	brief := e.must(0, "run", "last", "--brief")
	if strings.Contains(brief.stdout, "step_0") || !strings.Contains(brief.stdout, "status:") || !strings.Contains(brief.stdout, "took") {
		t.Errorf("run --brief:\n%s", brief)
	}
}

// TestVersionHelpCompletion: version names the module (and, built from a
// git checkout, the revision), help CMD prints a command's usage, and
// completion scripts name every command and its flags.
func TestVersionHelpCompletion(t *testing.T) {
	e := newEnv(t, "", progressHooks)
	r := e.must(0, "version")
	if !strings.HasPrefix(r.stdout, "hookd ") || !strings.Contains(r.stdout, "module github.com/hookd/hookd") {
		t.Errorf("version:\n%s", r)
	}
	if r := e.must(0, "version", "--json"); !strings.Contains(r.stdout, `"module": "github.com/hookd/hookd"`) {
		t.Errorf("version --json:\n%s", r)
	}

	r = e.must(0, "help", "fire")
	if !strings.HasPrefix(r.stdout, "hookd fire: fire a hook") || !strings.Contains(r.stdout, "-wait") {
		t.Errorf("help fire:\n%s", r)
	}
	e.must(2, "help", "nosuch")

	for _, sh := range []string{"bash", "zsh", "fish"} {
		r := e.must(0, "completion", sh)
		for _, want := range []string{"fire", "completion", "--brief", "--wait", "list --names"} {
			if !strings.Contains(r.stdout, want) && !(sh == "fish" && want[:2] == "--") {
				t.Errorf("completion %s lacks %q", sh, want)
			}
		}
		if sh == "fish" && !strings.Contains(r.stdout, "-l brief") {
			t.Errorf("completion fish lacks run's flag brief:\n%s", r.stdout)
		}
		if sh == "bash" {
			if out, err := exec.Command(testtool.Need(t, "bash"), "-n", "-c", r.stdout).CombinedOutput(); err != nil {
				t.Errorf("the bash completion does not parse: %v\n%s", err, out)
			}
		}
	}
	e.must(2, "completion", "tcsh")
	if r := e.must(0, "list", "--names"); r.stdout != "two\n" {
		t.Errorf("list --names:\n%s", r)
	}
}

// TestVersionRevision checks `hookd version` prints the commit of a
// build with VCS stamping, as go install from a repository makes: the
// binary TestMain built with -buildvcs=true, else (that build fell back
// to none) one built here. A checkout Go cannot stamp (a git worktree,
// no git) skips, without building hookd again when TestMain's build took
// -buildvcs=true and stamped nothing.
func TestVersionRevision(t *testing.T) {
	head, err := exec.Command(testtool.Need(t, "git"), "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("cmd/hookd: not a git checkout (%v)", err)
	}
	version := func(bin string) (versionInfo, []byte) {
		out, err := exec.Command(bin, "version", "--json").Output()
		if err != nil {
			t.Fatal(err)
		}
		var v versionInfo
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatal(err)
		}
		return v, out
	}
	// A second build of hookd (not for -race, SQLite's C included) took
	// most of this test's time: made only when the first has no revision.
	bin := hookdBin
	v, out := version(bin)
	if v.Revision == "" && builtWithVCS {
		t.Skipf("cmd/hookd: Go did not stamp a revision in this checkout (a git worktree?): %s", out)
	}
	if v.Revision == "" {
		bin = filepath.Join(t.TempDir(), "hookd")
		build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".")
		build.Env = append(os.Environ(), "GOFLAGS=")
		if out, err := build.CombinedOutput(); err != nil {
			t.Skipf("cmd/hookd: cannot build with VCS stamping here: %v\n%s", err, out)
		}
		v, out = version(bin)
	}
	if v.Revision == "" {
		t.Skipf("cmd/hookd: Go did not stamp a revision in this checkout (a git worktree?): %s", out)
	}
	if want := strings.TrimSpace(string(head)); v.Revision != want {
		t.Errorf("version revision %q, want HEAD %q", v.Revision, want)
	}
	text, _ := exec.Command(bin, "version").Output()
	if !strings.Contains(string(text), "("+v.Revision[:12]) {
		t.Errorf("version:\n%s", text)
	}
}
