package steps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
)

// Defaults of the git steps (git_diff, file_diff, git_log).
const (
	DefaultGitTimeout = time.Minute
	DefaultMaxFiles   = 1000
)

// gitConfig holds the fields every git step has.
type gitConfig struct {
	Workspace string `yaml:"workspace"`
	MaxOutput int    `yaml:"max_output"`
	MaxFiles  int    `yaml:"max_files"`
}

// gitRepo runs git for a step: in its workspace (a directory confined to
// the hook's workdir), without a shell, a pager, prompts or colour, under
// the step's timeout.
type gitRepo struct {
	workspace string // may hold placeholders; "" is the hook's workdir
	maxOutput int
	maxFiles  int
	timeout   time.Duration
}

func newGitRepo(def *engine.StepDef, cfg engine.Decoder, c gitConfig) (gitRepo, error) {
	g := gitRepo{workspace: c.Workspace, maxOutput: c.MaxOutput, maxFiles: c.MaxFiles, timeout: def.Timeout}
	if c.Workspace != "" {
		if err := checkPathTemplate(cfg, "workspace", c.Workspace, false); err != nil {
			return g, err
		}
		if !strings.Contains(c.Workspace, "{{") {
			if err := checkLocal(c.Workspace); err != nil {
				return g, fieldErr(cfg, "workspace", "%v", err)
			}
		}
	}
	if c.MaxOutput < 0 {
		return g, fieldErr(cfg, "max_output", "must be > 0 (got %d)", c.MaxOutput)
	}
	if c.MaxFiles < 0 {
		return g, fieldErr(cfg, "max_files", "must be > 0 (got %d)", c.MaxFiles)
	}
	if g.maxOutput == 0 {
		g.maxOutput = DefaultMaxOutput
	}
	if g.maxFiles == 0 {
		g.maxFiles = DefaultMaxFiles
	}
	if g.timeout <= 0 {
		g.timeout = DefaultGitTimeout
	}
	return g, nil
}

// templates returns the git fields that may hold placeholders.
func (g *gitRepo) templates() []string {
	if g.workspace == "" {
		return nil
	}
	return []string{g.workspace}
}

// dir resolves the workspace inside the hook's workdir.
func (g *gitRepo) dir(env *engine.StepEnv) (string, error) {
	if g.workspace == "" {
		roots, err := NewRoots(env.Workdir, nil)
		if err != nil {
			return "", err
		}
		return roots.Workdir(), nil
	}
	rel, err := engine.Expand(g.workspace, scopeOf(env), nil)
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	if err := checkLocal(rel); err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	real, err := Confine(env.Workdir, nil, rel)
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	return real, nil
}

// gitCmd is one git invocation.
type gitCmd struct {
	args      []string
	tee       func(string) // when set, gets each line (each NUL-ended record with nul)
	nul       bool
	okCodes   []int // exit codes besides 0 that are not errors
	maxOutput int   // 0: the repo's
}

// gitSession runs the git commands of one step run in one workspace,
// each made safe by gitSafeArgs and gitSafeEnv, with the filter drivers
// of the workspace's repository turned off.
type gitSession struct {
	repo *gitRepo
	dir  string
	env  []string
	red  *engine.Redactor
}

// open resolves the workspace and reads which filter drivers its
// repository configures (git config runs none of them), so that every
// later command runs with them turned off.
func (g *gitRepo) open(ctx context.Context, env *engine.StepEnv) (*gitSession, error) {
	dir, err := g.dir(env)
	if err != nil {
		return nil, err
	}
	s := &gitSession{repo: g, dir: dir, env: gitSafeEnv(env.Env, nil), red: env.Redactor}
	var keys []string
	if _, err := s.run(ctx, gitCmd{
		args:    []string{"config", "--null", "--name-only", "--get-regexp", `^filter\.`},
		okCodes: []int{1}, // none
		nul:     true,
		tee:     func(k string) { keys = append(keys, k) },
	}); err != nil {
		return nil, err
	}
	s.env = gitSafeEnv(env.Env, filterOverrides(keys))
	return s, nil
}

// run runs git in the session's directory, without a shell, a pager,
// prompts or colour. A failure to start, a timeout and an exit code not
// in okCodes are errors carrying git's stderr.
func (s *gitSession) run(ctx context.Context, gc gitCmd) (CommandResult, error) {
	g := s.repo
	c := Command{
		Argv:      append(append([]string{"git"}, gitSafeArgs...), gc.args...),
		Dir:       s.dir,
		Env:       s.env,
		Timeout:   g.timeout,
		MaxOutput: gc.maxOutput,
		Redactor:  s.red,
	}
	if c.MaxOutput == 0 {
		c.MaxOutput = g.maxOutput
	}
	var sw *splitWriter
	if gc.tee != nil {
		sep := byte('\n')
		if gc.nul {
			sep = 0
		}
		sw = newSplitWriter(sep, gc.tee)
		c.Tee = sw
		// The records are all the caller wants of stdout; the cap
		// leaves room for an error message on stderr.
		c.MaxOutput = 4 << 10
	}
	r := c.Run(ctx)
	if sw != nil {
		sw.Flush()
	}
	if r.Err != nil {
		return r, fmt.Errorf("git %s: %w", gc.args[0], r.Err)
	}
	if r.ExitCode != 0 {
		ok := false
		for _, c := range gc.okCodes {
			ok = ok || c == r.ExitCode
		}
		if !ok {
			msg := strings.TrimSpace(r.Stderr)
			if msg == "" {
				msg = fmt.Sprintf("exit status %d", r.ExitCode)
			}
			return r, fmt.Errorf("git %s: %s", gc.args[0], msg)
		}
	}
	return r, nil
}

// revParse returns the commit rev names, or ok false when there is none.
func (s *gitSession) revParse(ctx context.Context, rev string) (string, bool, error) {
	r, err := s.run(ctx, gitCmd{args: []string{"rev-parse", "--verify", "--quiet", rev + "^{commit}"}, okCodes: []int{1}})
	if err != nil {
		return "", false, err
	}
	if r.ExitCode != 0 {
		return "", false, nil
	}
	return strings.TrimSpace(r.Stdout), true, nil
}

// checkRev refuses a revision that git could read as an option or as a
// range, or that holds spaces or control characters.
func checkRev(rev string) error {
	switch {
	case rev == "":
		return fmt.Errorf("empty revision")
	case strings.HasPrefix(rev, "-"):
		return fmt.Errorf("revision %q must not start with '-'", rev)
	case strings.Contains(rev, ".."):
		return fmt.Errorf("revision %q must not contain '..'", rev)
	}
	for _, r := range rev {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("revision %q must not contain spaces or control characters", rev)
		}
	}
	return nil
}

// revField expands and checks a revision field.
func revField(field, tmpl string, scope *engine.Scope) (string, error) {
	v, err := engine.Expand(tmpl, scope, nil)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	if err := checkRev(v); err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return v, nil
}

// checkRevTemplate checks a revision field at load time.
func checkRevTemplate(cfg engine.Decoder, field, tmpl string) error {
	if _, err := engine.ParsePlaceholders(tmpl); err != nil {
		return fieldErr(cfg, field, "%v", err)
	}
	if !strings.Contains(tmpl, "{{") {
		if err := checkRev(tmpl); err != nil {
			return fieldErr(cfg, field, "%v", err)
		}
	}
	return nil
}

// fileList collects file names up to a cap and counts them all.
type fileList struct {
	max   int
	seen  map[string]bool
	names []any
	total int
}

func newFileList(max int) *fileList { return &fileList{max: max, seen: map[string]bool{}} }

func (l *fileList) add(name string) {
	if name == "" || l.seen[name] {
		return
	}
	l.total++
	if len(l.seen) < max(10*l.max, 10000) {
		l.seen[name] = true // past this, a name seen twice is counted twice
	}
	if len(l.names) < l.max {
		l.names = append(l.names, name)
	}
}

func (l *fileList) truncated() bool { return l.total > len(l.names) }
