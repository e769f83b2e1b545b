package steps

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/process"
	"github.com/hookd/hookd/redact"
	"github.com/hookd/hookd/sandbox"
)

// Defaults of the git steps (git_diff, file_diff, git_log).
const (
	DefaultGitTimeout = time.Minute
	DefaultMaxFiles   = 1000
)

// gitConfig holds the fields every git step has.
type gitConfig struct {
	Workspace string `yaml:"workspace"`
	GitDir    string `yaml:"git_dir"`
	MaxOutput int    `yaml:"max_output"`
	MaxFiles  int    `yaml:"max_files"`
}

// gitRepo runs git for a step: in its workspace (a directory confined to
// the hook's workdir), without a shell, a pager, prompts or colour, under
// the step's timeout.
type gitRepo struct {
	workspace string // may hold placeholders; "" is the hook's workdir
	gitDir    string // may hold placeholders; "": git finds the repository itself
	maxOutput int
	maxFiles  int
	timeout   time.Duration
}

func newGitRepo(def *engine.StepDef, cfg engine.Decoder, c gitConfig) (gitRepo, error) {
	g := gitRepo{workspace: c.Workspace, gitDir: c.GitDir, maxOutput: c.MaxOutput, maxFiles: c.MaxFiles, timeout: def.Timeout}
	for _, f := range []struct{ field, path string }{{"workspace", c.Workspace}, {"git_dir", c.GitDir}} {
		if f.path == "" {
			continue
		}
		if err := checkPathTemplate(cfg, f.field, f.path, false); err != nil {
			return g, err
		}
		if !strings.Contains(f.path, "{{") {
			if err := checkLocal(f.path); err != nil {
				return g, fieldErr(cfg, f.field, "%v", err)
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
		g.maxOutput = process.DefaultMaxOutput
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
	var out []string
	for _, t := range []string{g.workspace, g.gitDir} {
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}

// gitPlace is where a git step runs git: the hook's real workdir, the
// workspace (the directory git runs in) and the git directory named with
// git_dir ("" when git finds it).
type gitPlace struct{ workdir, dir, gitDir string }

// place resolves the workspace and git_dir inside the hook's workdir.
func (g *gitRepo) place(env *engine.StepEnv) (gitPlace, error) {
	roots, err := NewRoots(env.Workdir, nil)
	if err != nil {
		return gitPlace{}, err
	}
	p := gitPlace{workdir: roots.Workdir(), dir: roots.Workdir()}
	resolve := func(field, tmpl string) (string, error) {
		rel, err := engine.Expand(tmpl, scopeOf(env), nil)
		if err != nil {
			return "", fmt.Errorf("%s: %w", field, err)
		}
		if err := checkLocal(rel); err != nil {
			return "", fmt.Errorf("%s: %w", field, err)
		}
		real, err := roots.Resolve(rel)
		if err != nil {
			return "", fmt.Errorf("%s: %w", field, err)
		}
		return real, nil
	}
	if g.workspace != "" {
		if p.dir, err = resolve("workspace", g.workspace); err != nil {
			return p, err
		}
	}
	if g.gitDir != "" {
		if p.gitDir, err = resolve("git_dir", g.gitDir); err != nil {
			return p, err
		}
	}
	return p, nil
}

// gitCmd is one git invocation.
type gitCmd struct {
	globals   []string // options before the subcommand (-C dir, -c k=v)
	args      []string
	tee       func(string) // when set, gets each line (each NUL-ended record with nul)
	nul       bool
	okCodes   []int // exit codes besides 0 that are not errors
	maxOutput int   // 0: the repo's
	// live makes the command's output the step's live output (the step's
	// own output: a diff), which its followers see as git writes it
	// (StepEnv.Output); liveLines, when set, rewrites each whole line of
	// stdout for them first (git log's records as the step shows them).
	live      bool
	liveLines func(line string) string
}

// gitSession runs the git commands of one step run in one workspace,
// each made safe by gitSafeArgs and gitSafeEnv, with the filter, textconv
// and external diff drivers of the workspace's repository turned off.
type gitSession struct {
	repo *gitRepo
	dir  string
	env  []string
	red  *redact.Redactor
	// policy contains each git process: the hook's, without network
	// (hookd's git steps read the local repository only).
	policy *sandbox.Policy
	// res, when set, is the step's result, whose containment field each
	// git process sets.
	res *engine.StepResult
	// out is the step's live output (StepEnv.Output; nil: none).
	out func(stream string, p []byte)
}

// open resolves the workspace and reads which drivers its repository
// configures (git config runs none of them), so that every later
// command runs with them turned off.
func (g *gitRepo) open(ctx context.Context, env *engine.StepEnv, res *engine.StepResult) (*gitSession, error) {
	p, err := g.place(env)
	if err != nil {
		return nil, err
	}
	s := &gitSession{repo: g, dir: p.dir, env: gitSafeEnv(env.Env, p.workdir, p.gitDir, nil), red: env.Redactor, res: res, out: env.Output}
	if env.Sandbox != nil {
		s.policy = env.Sandbox.With(nil, &sandbox.Network{})
	}
	var keys []string
	if _, err := s.run(ctx, gitCmd{
		args:    gitDriverKeys,
		okCodes: []int{1}, // none
		nul:     true,
		tee:     func(k string) { keys = append(keys, k) },
	}); err != nil {
		return nil, err
	}
	s.env = gitSafeEnv(env.Env, p.workdir, p.gitDir, gitDrivers(keys))
	return s, nil
}

// run runs git in the session's directory, without a shell, a pager,
// prompts or colour. A failure to start, a timeout and an exit code not
// in okCodes are errors carrying git's stderr.
func (s *gitSession) run(ctx context.Context, gc gitCmd) (process.CommandResult, error) {
	g := s.repo
	c := process.Command{
		Argv:      append(append(append([]string{"git"}, gitSafeArgs...), gc.globals...), gc.args...),
		Dir:       s.dir,
		Env:       s.env,
		Timeout:   g.timeout,
		MaxOutput: gc.maxOutput,
		Redactor:  s.red,
		Policy:    s.policy,
	}
	if c.MaxOutput == 0 {
		c.MaxOutput = g.maxOutput
	}
	var lines *liveLines
	if gc.live && s.out != nil {
		c.Live = s.out
		if gc.liveLines != nil {
			lines = &liveLines{out: s.out, edit: gc.liveLines}
			c.Live = lines.write
		}
	}
	var sw *process.SplitWriter
	if gc.tee != nil {
		sep := byte('\n')
		if gc.nul {
			sep = 0
		}
		sw = process.NewSplitWriter(sep, gc.tee)
		c.Tee = sw
		if c.Live == nil {
			// The records are all the caller wants of stdout; the cap
			// leaves room for an error message on stderr. (Shown live,
			// the output is capped at the repo's max_output, as the
			// step's own is.)
			c.MaxOutput = 4 << 10
		}
	}
	r := c.Run(ctx)
	if sw != nil {
		sw.Flush()
	}
	if lines != nil {
		lines.flush()
	}
	if s.res != nil {
		s.res.Fields["containment"] = process.Containment(c.Policy, r)
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

// liveLines shows a git command's stdout live line by line, each line
// as edit rewrites it; stderr, and hookd's own notes, go as they come.
// Run calls write from the stdout and the stderr goroutines at once.
type liveLines struct {
	out  func(stream string, p []byte)
	edit func(line string) string

	mu      sync.Mutex
	partial []byte
}

func (l *liveLines) write(stream string, p []byte) {
	if stream != "stdout" {
		l.out(stream, p)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	i := bytes.LastIndexByte(l.partial, '\n')
	if i < 0 {
		return
	}
	var b strings.Builder
	for line := range strings.Lines(string(l.partial[:i+1])) {
		b.WriteString(l.edit(strings.TrimSuffix(line, "\n")))
	}
	l.partial = append(l.partial[:0], l.partial[i+1:]...)
	if b.Len() > 0 {
		l.out(stream, []byte(b.String()))
	}
}

// flush shows what is left of a last line without its newline.
func (l *liveLines) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		if s := l.edit(string(l.partial)); s != "" {
			l.out("stdout", []byte(s))
		}
		l.partial = nil
	}
}
