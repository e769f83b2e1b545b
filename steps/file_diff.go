package steps

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/process"
)

func init() {
	engine.RegisterStep("file_diff", engine.DeclaredKind{Build: newFileDiff,
		Fields: []string{"diff", "path", "files", "count", "truncated", "untracked", "exit_code", "containment"}, Starts: engine.ProcessesFixed})
}

type fileDiffConfig struct {
	Git  gitConfig `yaml:",inline"`
	Path string    `yaml:"path"`
}

// fileDiffStep reports how one path in the working tree differs from
// HEAD: tracked changes, staged or not, and untracked files shown whole
// as added.
type fileDiffStep struct {
	def  *engine.StepDef
	repo gitRepo
	path string // may hold placeholders; relative to the workspace
}

func newFileDiff(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
	var c fileDiffConfig
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	repo, err := newGitRepo(def, cfg, c.Git)
	if err != nil {
		return nil, err
	}
	if err := checkPathTemplate(cfg, "path", c.Path, true); err != nil {
		return nil, err
	}
	if !strings.Contains(c.Path, "{{") {
		if err := checkLocal(c.Path); err != nil {
			return nil, fieldErr(cfg, "path", "%v", err)
		}
	}
	return &fileDiffStep{def: def, repo: repo, path: c.Path}, nil
}

// Templates returns the strings of the step that may hold placeholders.
func (s *fileDiffStep) Templates() []string { return append(s.repo.templates(), s.path) }

// Run diffs the path against HEAD (against an empty tree in a repository
// without commits). A path that is neither in git nor on disk is an error;
// one without changes gives an empty diff.
func (s *fileDiffStep) Run(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
	res := newResult(s.def, map[string]any{
		"diff": "", "path": "", "files": []any{}, "untracked": false, "containment": "",
	})
	res.Count, res.ExitCode = new(0), new(-1)
	p, err := engine.Expand(s.path, scopeOf(env), nil)
	if err != nil {
		return fail(res, fmt.Errorf("path: %w", err))
	}
	if err := checkLocal(p); err != nil {
		return fail(res, fmt.Errorf("path: %w", err))
	}
	p = filepath.Clean(p)
	res.Fields["path"] = filepath.ToSlash(p)
	git, err := s.repo.open(ctx, env, res)
	if err != nil {
		return fail(res, err)
	}
	dir := git.dir

	base, ok, err := git.revParse(ctx, "HEAD")
	if err != nil {
		return fail(res, err)
	}
	if !ok {
		// No commits yet: everything in the index is new.
		r, err := git.run(ctx, gitCmd{args: []string{"hash-object", "-t", "tree", "/dev/null"}})
		if err != nil {
			return fail(res, err)
		}
		base = strings.TrimSpace(r.Stdout)
	}

	files := newFileList(s.repo.maxFiles)
	if _, err := git.run(ctx, gitCmd{
		args: append(append([]string{"diff", "--relative", "--name-only", "-z"}, gitDiffArgs...), base, "--", p), tee: files.add, nul: true,
	}); err != nil {
		return fail(res, err)
	}
	out := process.NewCapBuffer(s.repo.maxOutput)
	truncated := false
	r, err := git.run(ctx, gitCmd{args: append(append([]string{"diff", "--relative", "--no-color"}, gitDiffArgs...), base, "--", p), live: true})
	if err != nil {
		return fail(res, err)
	}
	out.Write([]byte(r.Stdout))
	truncated = truncated || r.Truncated

	// Untracked files are not in any diff: show them whole, as added. A
	// directory lists what git would not ignore; a file named on its own
	// is shown even when ignored.
	fi, statErr := os.Lstat(filepath.Join(dir, p))
	lsArgs := []string{"ls-files", "--others", "-z"}
	if statErr == nil && fi.IsDir() {
		lsArgs = append(lsArgs, "--exclude-standard")
	}
	var untracked []string
	if _, err := git.run(ctx, gitCmd{
		args: append(lsArgs, "--", p),
		nul:  true,
		tee: func(name string) {
			if name != "" && len(untracked) < s.repo.maxFiles {
				untracked = append(untracked, name)
			}
		},
	}); err != nil {
		return fail(res, err)
	}
	roots, rootsErr := NewRoots(dir, nil) // once for every untracked file
	for _, name := range untracked {
		if ctx.Err() != nil {
			return fail(res, context.Cause(ctx))
		}
		if rootsErr != nil {
			continue
		}
		if _, err := roots.Resolve(name); err != nil {
			continue // a link out of the workspace: not shown
		}
		files.add(name)
		r, err := git.run(ctx, gitCmd{
			args:    append(append([]string{"diff", "--no-index", "--no-color"}, gitDiffArgs...), "--", "/dev/null", name),
			okCodes: []int{1},
			live:    true,
		})
		if err != nil {
			return fail(res, err)
		}
		out.Write([]byte(r.Stdout))
		truncated = truncated || r.Truncated
		res.Fields["untracked"] = true
	}

	if files.total == 0 && errors.Is(statErr, fs.ErrNotExist) {
		if r, err := git.run(ctx, gitCmd{args: []string{"ls-files", "--error-unmatch", "--", p}, okCodes: []int{1}}); err != nil {
			return fail(res, err)
		} else if r.ExitCode != 0 {
			return fail(res, fmt.Errorf("path: %q is not in git or on disk in %s", p, dir))
		}
	}
	diff, cut := out.String()
	res.Output = diff
	res.Fields["diff"] = diff
	res.Fields["files"] = files.names
	res.Count, res.Truncated, res.ExitCode = new(files.total), truncated || cut || files.truncated(), new(0)
	return done(res)
}
