package steps

import (
	"context"
	"fmt"

	"github.com/hookd/hookd/engine"
)

func init() {
	engine.RegisterStep("git_diff", engine.DeclaredKind{Build: newGitDiff,
		Fields: []string{"diff", "files", "count", "truncated", "base", "head", "exit_code", "containment"}, Starts: engine.ProcessesFixed})
}

type gitDiffConfig struct {
	Git        gitConfig `yaml:",inline"`
	BaseBranch string    `yaml:"base_branch"`
	Head       string    `yaml:"head"`
}

// gitDiffStep reports what a branch changed since it left its base: the
// diff of base_branch...head (from their merge base to head).
type gitDiffStep struct {
	def  *engine.StepDef
	repo gitRepo
	base string // may hold placeholders
	head string
}

func newGitDiff(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
	var c gitDiffConfig
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	repo, err := newGitRepo(def, cfg, c.Git)
	if err != nil {
		return nil, err
	}
	s := &gitDiffStep{def: def, repo: repo, base: c.BaseBranch, head: c.Head}
	if s.base == "" {
		s.base = "main"
	}
	if s.head == "" {
		s.head = "HEAD"
	}
	if err := checkRevTemplate(cfg, "base_branch", s.base); err != nil {
		return nil, err
	}
	if err := checkRevTemplate(cfg, "head", s.head); err != nil {
		return nil, err
	}
	return s, nil
}

// Templates returns the strings of the step that may hold placeholders.
func (s *gitDiffStep) Templates() []string {
	return append(s.repo.templates(), s.base, s.head)
}

// Run diffs base...head. A base or head that is not a commit, a workspace
// that is not a git repository and a timeout are errors.
func (s *gitDiffStep) Run(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
	res := newResult(s.def, map[string]any{
		"diff": "", "files": []any{}, "base": "", "head": "", "containment": "",
	})
	res.Count, res.ExitCode = new(0), new(-1)
	scope := scopeOf(env)
	base, err := revField("base_branch", s.base, scope)
	if err != nil {
		return fail(res, err)
	}
	head, err := revField("head", s.head, scope)
	if err != nil {
		return fail(res, err)
	}
	res.Fields["base"], res.Fields["head"] = base, head
	git, err := s.repo.open(ctx, env, res)
	if err != nil {
		return fail(res, err)
	}
	for _, r := range []struct{ field, rev string }{{"base_branch", base}, {"head", head}} {
		if _, ok, err := git.revParse(ctx, r.rev); err != nil {
			return fail(res, err)
		} else if !ok {
			return fail(res, fmt.Errorf("%s: %q is not a commit in %s", r.field, r.rev, git.dir))
		}
	}
	rng := base + "..." + head

	files := newFileList(s.repo.maxFiles)
	if _, err := git.run(ctx, gitCmd{
		args: append(append([]string{"diff", "--name-only", "-z"}, gitDiffArgs...), rng, "--"),
		tee:  files.add, nul: true,
	}); err != nil {
		return fail(res, err)
	}
	r, err := git.run(ctx, gitCmd{args: append(append([]string{"diff", "--no-color"}, gitDiffArgs...), rng, "--"), live: true})
	if err != nil {
		return fail(res, err)
	}
	res.Output = r.Stdout
	res.Fields["diff"] = r.Stdout
	res.Fields["files"] = files.names
	res.Count, res.Truncated, res.ExitCode = new(files.total), r.Truncated || files.truncated(), new(r.ExitCode)
	return done(res)
}
