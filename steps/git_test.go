package steps

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/process"
)

// commitAt commits everything in dir with the given author and committer
// date.
func commitAt(t *testing.T, dir string, env []string, when, msg string) {
	t.Helper()
	env = append(append([]string(nil), env...), "GIT_AUTHOR_DATE="+when, "GIT_COMMITTER_DATE="+when)
	git(t, dir, env, "add", "-A")
	git(t, dir, env, "commit", "-q", "-m", msg)
}

// newRepo makes a repository in dir/sub (dir when sub is "") with two
// commits on main and a feature branch, checked out, that changes a.txt
// and adds c.txt: a copy of one built once per run (templateRepo), the
// same files and commits (their dates are fixed) without the eight git
// runs that build it.
func newRepo(t *testing.T, sub string) (workdir string, env []string) {
	t.Helper()
	workdir = realDir(t, t.TempDir())
	env = gitEnv(t)
	copyTree(t, templateRepo(t), filepath.Join(workdir, sub))
	return workdir, env
}

// repoTemplate is the repository newRepo copies, built by the first
// test that needs one and removed by TestMain.
var repoTemplate struct {
	once      sync.Once
	root, dir string // dir is empty until the build succeeded
}

func templateRepo(t *testing.T) string {
	t.Helper()
	repoTemplate.once.Do(func() {
		root, err := os.MkdirTemp("", "hookd-steps-repo-")
		if err != nil {
			t.Fatal(err)
		}
		repoTemplate.root = root
		root = realDir(t, root)
		repo, env := filepath.Join(root, "repo"), gitEnv(t)
		if err := os.Mkdir(repo, 0o755); err != nil {
			t.Fatal(err)
		}
		git(t, repo, env, "init", "-q")
		writeFiles(t, repo, map[string]string{"a.txt": "a\n", "b.txt": "b\n", ".gitignore": "*.log\n"})
		commitAt(t, repo, env, "2024-01-01T12:00:00Z", "first")
		writeFiles(t, repo, map[string]string{"b.txt": "b2\n"})
		commitAt(t, repo, env, "2024-01-05T12:00:00Z", "second")
		git(t, repo, env, "checkout", "-q", "-b", "feature")
		writeFiles(t, repo, map[string]string{"a.txt": "a2\n", "dir/c.txt": "c\n"})
		commitAt(t, repo, env, "2024-01-10T12:00:00Z", "feature work")
		repoTemplate.dir = repo
	})
	if repoTemplate.dir == "" {
		t.Fatal("the template repository was not built (see the first test that needed it)")
	}
	return repoTemplate.dir
}

// copyTree copies the directories and regular files under src to dst,
// with their permissions.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(to, info.Mode().Perm())
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

func gitStepEnv(t *testing.T, workdir string, env []string, event map[string]any) *engine.StepEnv {
	e := stepEnv(t, event)
	e.Workdir = workdir
	e.Env = env
	return e
}

func TestGitNewErrors(t *testing.T) {
	newErrTests(t, "git_diff", []struct{ name, src, want string }{
		{"option as base", `base_branch: --output=/tmp/x`, "base_branch: revision \"--output=/tmp/x\" must not start with '-'"},
		{"range as base", `base_branch: main..HEAD`, "must not contain '..'"},
		{"space", `base_branch: "a b"`, "spaces"},
		{"workspace out", `workspace: ../x`, `workspace: "../x" leaves the hook's workdir`},
		{"workspace absolute", `workspace: /tmp`, "workspace: must be relative"},
		{"negative max_output", `max_output: -1`, "max_output: must be > 0"},
		{"unknown", `base: main`, "base"},
	})
	newErrTests(t, "file_diff", []struct{ name, src, want string }{
		{"missing path", `workspace: x`, "path: required"},
		{"path out", `path: ../x`, "leaves the hook's workdir"},
	})
	newErrTests(t, "git_log", []struct{ name, src, want string }{
		{"bad since", `since: yesterday`, "since: \"yesterday\" is not a duration"},
		{"negative since", `since: -1h`, "must be > 0"},
		{"negative max_count", `max_count: -1`, "max_count: must be > 0"},
		{"option as rev", `rev: --all`, "rev: revision"},
		{"path out", `paths: [../x]`, "paths[0]"},
	})
}

func TestGitDiff(t *testing.T) {
	t.Parallel()
	workdir, env := newRepo(t, "repo")
	tests := []struct {
		name, src string
		event     map[string]any
		wantFiles []any
		wantDiff  []string
		wantTrunc bool
		wantErr   string
	}{
		{name: "default base", src: "workspace: repo", wantFiles: []any{"a.txt", "dir/c.txt"}, wantDiff: []string{"-a\n+a2", "+c", "diff --git a/dir/c.txt"}},
		{name: "base from event", src: "workspace: repo\nbase_branch: '{{event.base}}'", event: map[string]any{"base": "main"}, wantFiles: []any{"a.txt", "dir/c.txt"}},
		{name: "base is head", src: "workspace: repo\nbase_branch: feature", wantFiles: []any{}},
		{name: "head", src: "workspace: repo\nbase_branch: 'main~1'\nhead: main", wantFiles: []any{"b.txt"}, wantDiff: []string{"+b2"}},
		{name: "cap", src: "workspace: repo\nmax_output: 40", wantFiles: []any{"a.txt", "dir/c.txt"}, wantDiff: []string{"bytes truncated]"}, wantTrunc: true},
		{name: "max_files", src: "workspace: repo\nmax_files: 1", wantFiles: []any{"a.txt"}, wantTrunc: true},
		{name: "missing base", src: "workspace: repo\nbase_branch: nope", wantErr: `base_branch: "nope" is not a commit`},
		{name: "option from event", src: "workspace: repo\nbase_branch: '{{event.base}}'", event: map[string]any{"base": "--output=" + filepath.Join(workdir, "pwned")}, wantErr: "must not start with '-'"},
		{name: "range from event", src: "workspace: repo\nbase_branch: '{{event.base}}'", event: map[string]any{"base": "HEAD..main"}, wantErr: "must not contain '..'"},
		{name: "workspace from event", src: "workspace: '{{event.ws}}'", event: map[string]any{"ws": "../.."}, wantErr: "leaves the hook's workdir"},
		{name: "workspace inside the repository", src: "workspace: repo/dir", wantFiles: []any{"a.txt", "dir/c.txt"}}, // inside the repo: git finds it
		{name: "missing workspace", src: "workspace: nope", wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustStep(t, "git_diff", tt.src, 0)
			res, err := runStep(t, s, gitStepEnv(t, workdir, env, tt.event))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v; want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Fields["files"]; !equalAny(got, tt.wantFiles) {
				t.Errorf("files %v; want %v", got, tt.wantFiles)
			}
			if field(res, "count") != len(tt.wantFiles) && !tt.wantTrunc {
				t.Errorf("count %v", field(res, "count"))
			}
			for _, w := range tt.wantDiff {
				if !strings.Contains(res.Output, w) {
					t.Errorf("diff lacks %q:\n%s", w, res.Output)
				}
			}
			if res.Output != res.Fields["diff"] || field(res, "truncated") != tt.wantTrunc {
				t.Errorf("diff field differs or truncated %v", field(res, "truncated"))
			}
		})
	}
	if _, err := os.Stat(filepath.Join(workdir, "pwned")); err == nil {
		t.Error("an option from event data reached git")
	}
}

func TestGitDiffNotARepo(t *testing.T) {
	dir := realDir(t, t.TempDir())
	s := mustStep(t, "git_diff", "base_branch: main", 0)
	_, err := runStep(t, s, gitStepEnv(t, dir, gitEnv(t), nil))
	if err == nil || !strings.Contains(err.Error(), "git") {
		t.Errorf("err = %v", err)
	}
}

func TestGitTimeout(t *testing.T) {
	workdir, env := newRepo(t, "")
	fake := t.TempDir()
	if err := os.WriteFile(filepath.Join(fake, "git"), []byte("#!/bin/sh\nsleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			env[i] = "PATH=" + fake + ":" + os.Getenv("PATH")
		}
	}
	for _, kind := range []string{"git_diff", "file_diff", "git_log"} {
		t.Run(kind, func(t *testing.T) {
			src := "max_files: 5"
			if kind == "file_diff" {
				src = "path: a.txt"
			}
			s := mustStep(t, kind, src, 300*time.Millisecond)
			start := time.Now()
			_, err := runStep(t, s, gitStepEnv(t, workdir, env, nil))
			if !errors.Is(err, process.ErrTimeout) {
				t.Errorf("err = %v; want a timeout", err)
			}
			if d := time.Since(start); d > testtool.HangBound {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestFileDiff(t *testing.T) {
	t.Parallel()
	workdir, env := newRepo(t, "")
	writeFiles(t, workdir, map[string]string{
		"a.txt":         "changed\n",
		"staged.txt":    "staged\n",
		"untracked.txt": "brand new\n",
		"dir/u.txt":     "in dir\n",
		"dir/skip.log":  "ignored\n",
		"star*.txt":     "literal star\n",
		"ignored.log":   "named on its own\n",
	})
	git(t, workdir, env, "add", "staged.txt")
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(workdir, "linkout")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(workdir, "b.txt")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, src     string
		event         map[string]any
		wantFiles     []any
		wantDiff      []string
		wantUntracked bool
		wantErr       string
	}{
		{name: "modified", src: "path: a.txt", wantFiles: []any{"a.txt"}, wantDiff: []string{"-a2", "+changed"}},
		{name: "staged new", src: "path: staged.txt", wantFiles: []any{"staged.txt"}, wantDiff: []string{"new file mode", "+staged"}},
		{name: "untracked", src: "path: untracked.txt", wantFiles: []any{"untracked.txt"}, wantDiff: []string{"new file mode", "+brand new"}, wantUntracked: true},
		{name: "deleted", src: "path: b.txt", wantFiles: []any{"b.txt"}, wantDiff: []string{"deleted file mode", "-b2"}},
		{name: "unchanged", src: "path: .gitignore", wantFiles: []any{}},
		{name: "directory", src: "path: dir", wantFiles: []any{"dir/u.txt"}, wantDiff: []string{"+in dir"}, wantUntracked: true},
		{name: "ignored file named", src: "path: ignored.log", wantFiles: []any{"ignored.log"}, wantDiff: []string{"+named on its own"}, wantUntracked: true},
		{name: "path from event", src: "path: '{{event.p}}'", event: map[string]any{"p": "a.txt"}, wantFiles: []any{"a.txt"}},
		{name: "glob from event is literal", src: "path: '{{event.p}}'", event: map[string]any{"p": "*.txt"}, wantErr: "not in git or on disk"},
		{name: "literal star", src: "path: 'star*.txt'", wantFiles: []any{"star*.txt"}, wantUntracked: true},
		{name: "missing", src: "path: nope.txt", wantErr: "not in git or on disk"},
		{name: "untracked link out", src: "path: linkout", wantFiles: []any{}},
		{name: "dotdot from event", src: "path: '{{event.p}}'", event: map[string]any{"p": "../../etc/passwd"}, wantErr: "leaves the hook's workdir"},
		{name: "magic pathspec from event", src: "path: '{{event.p}}'", event: map[string]any{"p": ":(top)a.txt"}, wantErr: "not in git or on disk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustStep(t, "file_diff", tt.src, 0)
			res, err := runStep(t, s, gitStepEnv(t, workdir, env, tt.event))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v (diff %q); want %q", err, res.Output, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalAny(res.Fields["files"], tt.wantFiles) || field(res, "count") != len(tt.wantFiles) {
				t.Errorf("files %v count %v; want %v", res.Fields["files"], field(res, "count"), tt.wantFiles)
			}
			for _, w := range tt.wantDiff {
				if !strings.Contains(res.Output, w) {
					t.Errorf("diff lacks %q:\n%s", w, res.Output)
				}
			}
			if strings.Contains(res.Output, "SECRET") {
				t.Errorf("read through a link out of the workspace:\n%s", res.Output)
			}
			if len(tt.wantFiles) == 0 && res.Output != "" {
				t.Errorf("diff of an unchanged file: %q", res.Output)
			}
			if res.Fields["untracked"] != tt.wantUntracked {
				t.Errorf("untracked %v", res.Fields["untracked"])
			}
		})
	}
}

// TestFileDiffWorkspace diffs paths relative to a workspace below the
// repository's top: names in files and diff are relative to it too.
func TestFileDiffWorkspace(t *testing.T) {
	workdir, env := newRepo(t, "repo")
	writeFiles(t, workdir, map[string]string{"repo/dir/c.txt": "c changed\n", "repo/dir/new.txt": "new\n"})
	s := mustStep(t, "file_diff", "workspace: repo/dir\npath: .", 0)
	res, err := runStep(t, s, gitStepEnv(t, workdir, env, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !equalAny(res.Fields["files"], []any{"c.txt", "new.txt"}) || !strings.Contains(res.Output, "+c changed") || !strings.Contains(res.Output, "+new") {
		t.Errorf("files %v\n%s", res.Fields["files"], res.Output)
	}
}

func TestFileDiffNoCommits(t *testing.T) {
	dir := realDir(t, t.TempDir())
	env := gitEnv(t)
	git(t, dir, env, "init", "-q")
	writeFiles(t, dir, map[string]string{"new.txt": "first\n", "idx.txt": "in index\n"})
	git(t, dir, env, "add", "idx.txt")
	for path, want := range map[string]string{"new.txt": "+first", "idx.txt": "+in index"} {
		s := mustStep(t, "file_diff", "path: "+path, 0)
		res, err := runStep(t, s, gitStepEnv(t, dir, env, nil))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Output, want) || field(res, "count") != 1 {
			t.Errorf("%s: diff %q count %v", path, res.Output, field(res, "count"))
		}
	}
}

func TestGitLog(t *testing.T) {
	t.Parallel()
	workdir, env := newRepo(t, "")
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name, src   string
		lastRun     string
		now         string
		event       map[string]any
		wantSubject []string
		wantFiles   []any
		wantErr     string
	}{
		{name: "everything", src: "max_count: 10", wantSubject: []string{"feature work", "second", "first"}, wantFiles: []any{"a.txt", "dir/c.txt", "b.txt", ".gitignore"}},
		{name: "since last run", src: "max_count: 10", lastRun: "2024-01-04T00:00:00Z", wantSubject: []string{"feature work", "second"}, wantFiles: []any{"a.txt", "dir/c.txt", "b.txt"}},
		{name: "since date", src: "since: 2024-01-06", lastRun: "2024-01-04T00:00:00Z", wantSubject: []string{"feature work"}},
		{name: "since duration", src: "since: 48h", now: "2024-01-11T00:00:00Z", wantSubject: []string{"feature work"}},
		{name: "since placeholder", src: "since: '{{event.since}}'", event: map[string]any{"since": "2024-01-02T00:00:00Z"}, wantSubject: []string{"feature work", "second"}},
		{name: "max_count", src: "max_count: 1", wantSubject: []string{"feature work"}},
		{name: "rev", src: "rev: main", wantSubject: []string{"second", "first"}},
		{name: "paths", src: "paths: [b.txt]", wantSubject: []string{"second", "first"}, wantFiles: []any{"b.txt"}},
		{name: "nothing new", src: "max_count: 5", lastRun: "2024-02-01T00:00:00Z", wantSubject: nil, wantFiles: []any{}},
		{name: "bad since from event", src: "since: '{{event.since}}'", event: map[string]any{"since": "--all"}, wantErr: "since:"},
		{name: "missing rev", src: "rev: nope", wantErr: `rev: "nope" is not a commit`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustStep(t, "git_log", tt.src, 0)
			e := gitStepEnv(t, workdir, env, tt.event)
			if tt.lastRun != "" {
				e.Scope.LastRunTime = at(tt.lastRun)
			}
			if tt.now != "" {
				e.Now = at(tt.now)
			}
			res, err := runStep(t, s, e)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v; want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			commits := res.Fields["commits"].([]any)
			var subjects []string
			for _, c := range commits {
				subjects = append(subjects, c.(map[string]any)["subject"].(string))
			}
			if strings.Join(subjects, "|") != strings.Join(tt.wantSubject, "|") || field(res, "count") != len(tt.wantSubject) {
				t.Errorf("subjects %q count %v; want %q", subjects, field(res, "count"), tt.wantSubject)
			}
			if tt.wantFiles != nil && !equalAny(res.Fields["files"], tt.wantFiles) {
				t.Errorf("files %v; want %v", res.Fields["files"], tt.wantFiles)
			}
			for _, sub := range tt.wantSubject {
				if !strings.Contains(res.Output, "Ada: "+sub) {
					t.Errorf("log lacks %q:\n%s", sub, res.Output)
				}
			}
			if len(tt.wantSubject) == 0 && res.Output != "" {
				t.Errorf("log %q", res.Output)
			}
		})
	}
}

func TestGitLogNoCommits(t *testing.T) {
	dir := realDir(t, t.TempDir())
	env := gitEnv(t)
	git(t, dir, env, "init", "-q")
	s := mustStep(t, "git_log", "max_count: 3", 0)
	res, err := runStep(t, s, gitStepEnv(t, dir, env, nil))
	if err != nil || field(res, "count") != 0 || res.Output != "" {
		t.Errorf("err %v count %v output %q", err, field(res, "count"), res.Output)
	}
}

// equalAny compares a []any field with want, treating nil and empty alike.
func equalAny(got any, want []any) bool {
	g, _ := got.([]any)
	if len(g) != len(want) {
		return false
	}
	for i := range g {
		if g[i] != want[i] {
			return false
		}
	}
	return true
}

// TestGitRepositoryConfigRunsNothing performs the attack of a repository
// whose configuration (or whose caller's environment) names a program
// for git to run — a file-system monitor, an external diff, a textconv or
// filter driver, a pager, hooks — and runs every git step against it:
// the program, which would touch a marker file, never runs. By default
// the three forms of file_diff take turns over the configurations;
// HOOKD_TEST_LONG=1 runs each form on each.
func TestGitRepositoryConfigRunsNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, config, attrs string
		env                 []string
	}{
		{name: "fsmonitor", config: "[core]\n\tfsmonitor = %s\n"},
		{name: "fsmonitor in an included file", config: "[include]\n\tpath = evil.inc\n"},
		{name: "hooks path", config: "[core]\n\thooksPath = %[2]s\n"},
		{name: "external diff", config: "[diff]\n\texternal = %s\n"},
		{name: "diff driver command", config: "[diff \"evil\"]\n\tcommand = %s\n", attrs: "* diff=evil\n"},
		{name: "textconv", config: "[diff \"evil\"]\n\ttextconv = %s\n", attrs: "* diff=evil\n"},
		{name: "filter clean", config: "[filter \"evil\"]\n\tclean = %s\n\tsmudge = %s\n\trequired = true\n", attrs: "* filter=evil\n"},
		{name: "filter process", config: "[filter \"ev.il=x\"]\n\tprocess = %s\n", attrs: "* filter=ev.il=x\n"},
		{name: "pager", config: "[core]\n\tpager = %s\n[pager]\n\tdiff = %s\n\tlog = %s\n"},
		{name: "GIT_EXTERNAL_DIFF", env: []string{"GIT_EXTERNAL_DIFF=%s"}},
		{name: "GIT_CONFIG_COUNT", env: []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0=%s"}},
		{name: "GIT_CONFIG_PARAMETERS", env: []string{"GIT_CONFIG_PARAMETERS='diff.external'='%s'"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			workdir, env := newRepo(t, "")
			bin := t.TempDir()
			marker := filepath.Join(bin, "marker")
			script := filepath.Join(bin, "evil")
			// The script marks its run and then behaves like cat, so
			// that a filter or textconv would still produce output.
			if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$0 $*\" >> "+marker+"\ncat\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			hooks := filepath.Join(bin, "hooks")
			if err := os.Mkdir(hooks, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, h := range []string{"post-index-change", "reference-transaction", "fsmonitor-watchman", "pre-commit"} {
				if err := os.WriteFile(filepath.Join(hooks, h), []byte("#!/bin/sh\necho hook >> "+marker+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeFiles(t, workdir, map[string]string{".git/evil.inc": "[core]\n\tfsmonitor = " + script + "\n"})
			if tt.config != "" {
				f, err := os.OpenFile(filepath.Join(workdir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				fill := strings.NewReplacer("%s", script, "%[2]s", hooks)
				if _, err := fill.WriteString(f, tt.config); err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			if tt.attrs != "" {
				writeFiles(t, workdir, map[string]string{".gitattributes": tt.attrs})
			}
			writeFiles(t, workdir, map[string]string{"a.txt": "changed\n", "new.txt": "untracked\n"})
			for _, kv := range tt.env {
				env = append(env, strings.ReplaceAll(kv, "%s", script))
			}
			steps := []struct{ kind, src string }{
				{"file_diff", "path: a.txt"},
				{"file_diff", "path: new.txt"},
				{"file_diff", "path: ."},
				{"git_diff", "base_branch: main\nhead: feature"},
				{"git_log", "rev: feature"},
			}
			for j, st := range steps {
				// By default each configuration runs git_diff, git_log and
				// one of the three file_diff forms, a different one for
				// each configuration in turn (each form meets four of
				// them); HOOKD_TEST_LONG=1 runs all five steps on each.
				if j < 3 && j != i%3 && !testtool.Long() {
					continue
				}
				s := mustStep(t, st.kind, st.src, 0)
				res, err := runStep(t, s, gitStepEnv(t, workdir, env, nil))
				if err != nil {
					t.Errorf("%s %q: %v", st.kind, st.src, err)
				} else if res.Output == "" {
					t.Errorf("%s %q: no output", st.kind, st.src)
				}
				if b, err := os.ReadFile(marker); err == nil {
					t.Fatalf("%s %q ran a program the repository named:\n%s", st.kind, st.src, b)
				}
			}
		})
	}
}

// TestGitErrorMessage checks that git's own message reaches the step
// error when a command whose output is read record by record fails.
func TestGitErrorMessage(t *testing.T) {
	workdir, env := newRepo(t, "")
	writeFiles(t, workdir, map[string]string{".git/config": "[core\n"})
	s := mustStep(t, "file_diff", "path: a.txt", 0)
	_, err := runStep(t, s, gitStepEnv(t, workdir, env, nil))
	if err == nil || !strings.Contains(err.Error(), "bad config line 1") {
		t.Errorf("err = %v; want git's message", err)
	}
}
