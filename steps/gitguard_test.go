package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hookd/hookd/process"
)

// fakeBareRepo writes, as plain files, the bare repository a model or an
// event can leave in a directory it may write: HEAD, an empty
// objects/info/alternates, a file under refs/ and a config whose
// core.fsmonitor appends to canary and whose core.worktree makes the
// directory its own work tree, so that `git status` started there runs
// the monitor.
func fakeBareRepo(t *testing.T, dir, canary string) {
	t.Helper()
	writeFiles(t, dir, map[string]string{
		"HEAD":                    "ref: refs/heads/main\n",
		"objects/info/alternates": "",
		"refs/heads/x":            "",
		"config": "[core]\n\trepositoryformatversion = 0\n\tworktree = .\n" +
			"\tfsmonitor = \"echo ran >> " + canary + "; false\"\n",
	})
}

// ranCanary reports whether canary was written, and removes it.
func ranCanary(t *testing.T, canary string) bool {
	t.Helper()
	_, err := os.Stat(canary)
	os.Remove(canary)
	return err == nil
}

// runGit runs git as a plain process would, with env, in dir.
func runGit(t *testing.T, dir string, env []string, args ...string) process.CommandResult {
	t.Helper()
	c := process.Command{Argv: append([]string{"git"}, args...), Dir: dir, Env: env}
	return c.Run(context.Background())
}

// TestGitBareRepoAttack performs the attack of a bare repository made of
// plain files in a directory of the hook's workdir: git started there
// (or below) reads its config and runs its core.fsmonitor. Live first:
// plain git, with a clean environment, writes the canary outside the
// workdir. Then every way hookd runs git — the model's run_command
// (GitCommandEnv), a shell step, the git_diff, git_log and file_diff
// steps — finds the repository refused (safe.bareRepository=explicit)
// and runs nothing.
func TestGitBareRepoAttack(t *testing.T) {
	workdir := realDir(t, t.TempDir())
	canary := filepath.Join(t.TempDir(), "canary")
	fake := filepath.Join(workdir, "out")
	fakeBareRepo(t, fake, canary)
	if err := os.Mkdir(filepath.Join(fake, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := gitEnv(t)

	for _, dir := range []string{fake, filepath.Join(fake, "sub")} {
		runGit(t, dir, plain, "status")
		if !ranCanary(t, canary) {
			t.Fatalf("live: plain git status in %s did not run the repository's fsmonitor; the attack needs redoing", dir)
		}
		env, err := GitCommandEnv(context.Background(), []string{"git", "status"}, dir, workdir, plain, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := runGit(t, dir, env, "status")
		if r.ExitCode == 0 || !strings.Contains(r.Stderr, "safe.bareRepository") {
			t.Errorf("git status as run_command runs it in %s: exit %d, %q", dir, r.ExitCode, r.Stderr)
		}
		if ranCanary(t, canary) {
			t.Fatalf("git status as run_command runs it in %s ran the repository's fsmonitor", dir)
		}
	}

	for _, st := range []struct{ kind, src string }{
		{"shell", "command: git status\nworkdir: out"},
		{"shell", "command: [git, status]\nworkdir: out/sub"},
		{"git_diff", "workspace: out\nbase_branch: x\nhead: HEAD"},
		{"git_log", "workspace: out"},
		{"git_log", "workspace: out/sub"},
		{"file_diff", "workspace: out\npath: config"},
	} {
		s := mustStep(t, st.kind, st.src, 0)
		res, err := runStep(t, s, gitStepEnv(t, workdir, plain, nil))
		if st.kind == "shell" {
			if err != nil || field(res, "exit_code") == 0 || !strings.Contains(res.Fields["stderr"].(string), "safe.bareRepository") {
				t.Errorf("%s %q: %v, exit %v, stderr %q", st.kind, st.src, err, field(res, "exit_code"), res.Fields["stderr"])
			}
		} else if err == nil || !strings.Contains(err.Error(), "safe.bareRepository") {
			t.Errorf("%s %q: %v; want the bare repository refused", st.kind, st.src, err)
		}
		if ranCanary(t, canary) {
			t.Fatalf("%s %q ran the fake repository's fsmonitor", st.kind, st.src)
		}
	}
}

// TestGitCeiling: git started for a hook looks for a repository in the
// hook's workdir and below, never above it. A repository around the
// workdir, whose config runs a program, is found by plain git (live);
// a git step and a shell step in the workdir find no repository.
func TestGitCeiling(t *testing.T) {
	outer := realDir(t, t.TempDir())
	plain := gitEnv(t)
	git(t, outer, plain, "init", "-q")
	canary := filepath.Join(t.TempDir(), "canary")
	writeFiles(t, outer, map[string]string{
		".git/hooks-unused": "",
		"work/a.txt":        "a\n",
	})
	git(t, outer, plain, "config", "core.fsmonitor", "echo ran >> "+canary+"; false")
	workdir := filepath.Join(outer, "work")

	runGit(t, workdir, plain, "status")
	if !ranCanary(t, canary) {
		t.Fatal("live: plain git status in the workdir did not run the outer repository's fsmonitor")
	}
	s := mustStep(t, "shell", "command: git status", 0)
	res, err := runStep(t, s, gitStepEnv(t, workdir, plain, nil))
	if err != nil || !strings.Contains(res.Fields["stderr"].(string), "not a git repository") {
		t.Errorf("shell git status: %v, %q", err, res.Fields["stderr"])
	}
	s = mustStep(t, "git_log", "max_count: 1", 0)
	if _, err := runStep(t, s, gitStepEnv(t, workdir, plain, nil)); err == nil || !strings.Contains(err.Error(), "not a git repository") {
		t.Errorf("git_log: %v; want no repository found", err)
	}
	if ranCanary(t, canary) {
		t.Fatal("git in the workdir ran the outer repository's fsmonitor")
	}
}

// TestGitDir: a bare repository named with git_dir is used (GIT_DIR is
// explicit), and its configuration still runs nothing; without git_dir
// it is refused like any bare repository git finds by itself.
func TestGitDir(t *testing.T) {
	src, plain := newRepo(t, "src")
	workdir := filepath.Join(src, "work")
	if err := os.Mkdir(workdir, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, workdir, plain, "clone", "-q", "--bare", filepath.Join(src, "src"), "repo.git")
	canary := filepath.Join(t.TempDir(), "canary")
	git(t, filepath.Join(workdir, "repo.git"), plain, "config", "core.fsmonitor", "echo ran >> "+canary+"; false")

	s := mustStep(t, "git_log", "git_dir: repo.git\nrev: feature", 0)
	res, err := runStep(t, s, gitStepEnv(t, workdir, plain, nil))
	if err != nil || field(res, "count") != 3 || !strings.Contains(res.Output, "feature work") {
		t.Fatalf("git_log with git_dir: %v, %v\n%s", err, field(res, "count"), res.Output)
	}
	s = mustStep(t, "git_diff", "git_dir: repo.git\nbase_branch: main\nhead: feature", 0)
	if res, err = runStep(t, s, gitStepEnv(t, workdir, plain, nil)); err != nil || !strings.Contains(res.Output, "+a2") {
		t.Fatalf("git_diff with git_dir: %v\n%s", err, res.Output)
	}
	s = mustStep(t, "shell", "command: git log --oneline feature\nenv: {GIT_DIR: repo.git}", 0)
	if res, err = runStep(t, s, gitStepEnv(t, workdir, plain, nil)); err != nil || !strings.Contains(res.Output, "feature work") {
		t.Fatalf("shell step with GIT_DIR: %v %q %q", err, res.Output, res.Fields["stderr"])
	}
	s = mustStep(t, "shell", "command: git log --oneline feature\nworkdir: repo.git", 0)
	if res, err = runStep(t, s, gitStepEnv(t, workdir, plain, nil)); err != nil || !strings.Contains(res.Fields["stderr"].(string), "safe.bareRepository") {
		t.Fatalf("shell step in the bare repository without GIT_DIR: %v %q %q", err, res.Output, res.Fields["stderr"])
	}
	s = mustStep(t, "git_log", "workspace: repo.git", 0)
	if _, err := runStep(t, s, gitStepEnv(t, workdir, plain, nil)); err == nil || !strings.Contains(err.Error(), "safe.bareRepository") {
		t.Errorf("git_log in a bare repository without git_dir: %v", err)
	}
	if ranCanary(t, canary) {
		t.Fatal("a git step ran the bare repository's fsmonitor")
	}
	newErrTests(t, "git_log", []struct{ name, src, want string }{
		{"git_dir out", "git_dir: ../x", `git_dir: "../x" leaves the hook's workdir`},
		{"git_dir absolute", "git_dir: /srv/repo.git", "git_dir: must be relative"},
	})
}

// TestGitCommandEnvDrivers performs, against git as the model's
// run_command runs it, the attack of a repository whose .git/config and
// .gitattributes name a program for git diff or status to run: a
// file-system monitor, an external diff, a driver's diff command, a
// textconv, a filter. Live first: plain git runs it. With GitCommandEnv's
// environment (the drivers it reads with git config, and the guard of
// GitEnv) the program never runs, with git's own options (-C) too.
func TestGitCommandEnvDrivers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, config, attrs, cmd string
	}{
		{name: "fsmonitor", config: "[core]\n\tfsmonitor = %s\n", cmd: "status"},
		{name: "fsmonitor in an included file", config: "[include]\n\tpath = evil.inc\n", cmd: "status"},
		{name: "external diff", config: "[diff]\n\texternal = %s\n", cmd: "diff"},
		{name: "diff driver command", config: "[diff \"evil\"]\n\tcommand = %s\n", attrs: "* diff=evil\n", cmd: "diff"},
		{name: "textconv", config: "[diff \"Evil\"]\n\ttextconv = %s\n", attrs: "* diff=Evil\n", cmd: "diff"},
		{name: "filter clean", config: "[filter \"evil\"]\n\tclean = %s\n\trequired = true\n", attrs: "* filter=evil\n", cmd: "diff"},
		{name: "filter process", config: "[filter \"ev.il=x\"]\n\tprocess = %s\n", attrs: "* filter=ev.il=x\n", cmd: "diff"}, // diff reads the file through the filter every time; status only when the index entry is racy
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			workdir, plain := newRepo(t, "")
			bin := t.TempDir()
			canary := filepath.Join(bin, "canary")
			script := filepath.Join(bin, "evil")
			if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$0 $*\" >> "+canary+"\ncat\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFiles(t, workdir, map[string]string{".git/evil.inc": "[core]\n\tfsmonitor = " + script + "\n"})
			f, err := os.OpenFile(filepath.Join(workdir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := strings.NewReplacer("%s", script).WriteString(f, tt.config); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if tt.attrs != "" {
				writeFiles(t, workdir, map[string]string{".gitattributes": tt.attrs})
			}
			writeFiles(t, workdir, map[string]string{"a.txt": "changed\n"})

			runGit(t, workdir, plain, tt.cmd)
			if !ranCanary(t, canary) {
				t.Fatalf("live: plain git %s did not run the program", tt.cmd)
			}
			for _, argv := range [][]string{{"git", tt.cmd}, {"git", "-C", ".", tt.cmd}, {"git", "--no-pager", "log", "-p"}} {
				env, err := GitCommandEnv(context.Background(), argv, workdir, workdir, plain, nil)
				if err != nil {
					t.Fatalf("%q: %v", argv, err)
				}
				r := runGit(t, workdir, env, argv[1:]...)
				if ranCanary(t, canary) {
					t.Fatalf("%q ran the repository's program (exit %d, %s)", argv, r.ExitCode, r.Stderr)
				}
			}
		})
	}
}

// TestGitEnv: GitEnv keeps the configuration pairs the environment
// already holds, before its own (which outrank them), joins the ceiling
// to one already set, and gives a nil environment what Command would.
func TestGitEnv(t *testing.T) {
	workdir := realDir(t, t.TempDir())
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(workdir, link); err != nil {
		t.Fatal(err)
	}
	base := []string{"PATH=/bin", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=Ada",
		"GIT_CEILING_DIRECTORIES=/srv", "GIT_DIR=repo.git"}
	got := strings.Join(GitEnv(base, link, [][2]string{{"diff.x.textconv", "cat"}}), "\n")
	want := strings.Join([]string{"PATH=/bin", "GIT_DIR=repo.git",
		"GIT_CEILING_DIRECTORIES=/srv:" + filepath.Dir(workdir),
		"GIT_CONFIG_COUNT=5",
		"GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=Ada",
		"GIT_CONFIG_KEY_1=safe.bareRepository", "GIT_CONFIG_VALUE_1=explicit",
		"GIT_CONFIG_KEY_2=core.fsmonitor", "GIT_CONFIG_VALUE_2=false",
		"GIT_CONFIG_KEY_3=core.hooksPath", "GIT_CONFIG_VALUE_3=/dev/null",
		"GIT_CONFIG_KEY_4=diff.x.textconv", "GIT_CONFIG_VALUE_4=cat"}, "\n")
	if got != want {
		t.Errorf("GitEnv:\n%s\nwant:\n%s", got, want)
	}
	if env := GitEnv(nil, "", nil); !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		t.Errorf("GitEnv(nil) has no PATH: %q", env)
	}
	if keys := gitDrivers([]string{"filter.Ev.il.clean", "filter.Ev.il.smudge", "diff.external", "diff.X.textconv", "diff.X.command", "diff.renames"}); fmt.Sprint(keys) !=
		"[[filter.Ev.il.clean ] [filter.Ev.il.smudge ] [filter.Ev.il.process ] [filter.Ev.il.required false] [diff.external false] [diff.X.textconv cat] [diff.X.command false]]" {
		t.Errorf("gitDrivers: %q", keys)
	}
	if g := gitGlobals([]string{"git", "-C", "sub", "--no-pager", "-c", "a.b=c", "--git-dir=x", "--work-tree", "w", "--bare", "diff", "-C", "y"}); strings.Join(g, " ") !=
		"-C sub -c a.b=c --git-dir=x --work-tree w --bare" {
		t.Errorf("gitGlobals: %q", g)
	}
}
