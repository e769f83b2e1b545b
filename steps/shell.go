package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/process"
	"github.com/hookd/hookd/shellcheck"
)

// DefaultShellTimeout bounds a shell step whose definition sets no timeout.
const DefaultShellTimeout = 5 * time.Minute

func init() {
	engine.RegisterStep("shell", engine.DeclaredKind{Build: newShell,
		Fields: []string{"stdout", "stderr", "exit_code", "timed_out", "truncated", "duration_ms", "command", "containment"}, Starts: engine.ProcessesDeclared})
}

// shellConfig is the kind-specific part of a shell step definition.
type shellConfig struct {
	Command   any               `yaml:"command"`
	Workdir   string            `yaml:"workdir"`
	Env       map[string]string `yaml:"env"`
	MaxOutput int               `yaml:"max_output"`
	// AllowOptionValues lets a placeholder's value that begins with '-'
	// stand where a program would read it as an option.
	AllowOptionValues bool `yaml:"allow_option_values"`
	// Detach leaves the command's background processes running after
	// it exits (a daemon the step starts); they are reported.
	Detach bool `yaml:"detach"`
}

// shellStep runs a command: a string through `sh -c`, or a list as argv
// without a shell.
type shellStep struct {
	def        *engine.StepDef
	written    string             // the command as written, for the result
	script     *shellcheck.Script // string form
	argv       []string           // list form: templates, one per argument
	argvOpt    []string           // list form: argvOpt[i] says where argv[i]'s value would begin an argument ("" if not)
	argvEnvOpt map[string]string  // list form: the same for env variables an inner shell's script uses
	workdir    string             // relative to the hook's workdir; may hold placeholders
	env        []envVar           // sorted by name
	timeout    time.Duration
	maxOutput  int
	allowOpts  bool
	detach     bool
}

type envVar struct{ name, tmpl string }

func newShell(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
	var c shellConfig
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	return buildShell(def, cfg, &c)
}

// buildShell checks a decoded shell configuration and builds the step;
// run_tests builds its command with it too.
func buildShell(def *engine.StepDef, cfg engine.Decoder, c *shellConfig) (*shellStep, error) {
	s := &shellStep{def: def, timeout: def.Timeout, maxOutput: c.MaxOutput, allowOpts: c.AllowOptionValues, detach: c.Detach}
	if s.timeout <= 0 {
		s.timeout = DefaultShellTimeout
	}

	names := make([]string, 0, len(c.Env))
	taintedEnv := map[string]bool{}
	for name := range c.Env {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := c.Env[name]
		if err := shellcheck.CheckEnvName(name); err != nil {
			return nil, fieldErr(cfg, "env."+name, "%v", err)
		}
		if _, err := engine.ParsePlaceholders(v); err != nil {
			return nil, fieldErr(cfg, "env."+name, "%v", err)
		}
		if shellcheck.DataTemplate(v) {
			if why := shellcheck.DangerousVar(name); why != "" {
				return nil, fieldErr(cfg, "env."+name, "a value from a placeholder may not go in %s, which %s", name, why)
			}
			taintedEnv[name] = true
		}
		s.env = append(s.env, envVar{name, v})
	}

	switch cmd := c.Command.(type) {
	case nil:
		return nil, fieldErr(cfg, "command", "required")
	case string:
		if strings.TrimSpace(cmd) == "" {
			return nil, fieldErr(cfg, "command", "must not be empty")
		}
		script, err := shellcheck.Parse(cmd, taintedEnv)
		if err != nil {
			return nil, fieldErr(cfg, "command", "%v", err)
		}
		s.script, s.written = script, cmd
	case []any:
		if len(cmd) == 0 {
			return nil, fieldErr(cfg, "command", "must not be an empty list")
		}
		s.argv = make([]string, 0, len(cmd))
		for i, v := range cmd {
			a, ok := v.(string)
			if !ok {
				return nil, fieldErr(cfg, "command", "element %d must be a string (got %s; quote it)", i, kindOf(v))
			}
			if _, err := engine.ParsePlaceholders(a); err != nil {
				return nil, fieldErr(cfg, "command", "element %d: %v", i, err)
			}
			s.argv = append(s.argv, a)
		}
		if strings.TrimSpace(s.argv[0]) == "" {
			return nil, fieldErr(cfg, "command", "element 0 (the program) must not be empty")
		}
		opt, envOpt, err := shellcheck.CheckArgv(s.argv, taintedEnv)
		if err != nil {
			return nil, fieldErr(cfg, "command", "%v", err)
		}
		s.argvOpt, s.argvEnvOpt = opt, envOpt
		s.written = quoteArgv(s.argv)
	default:
		return nil, fieldErr(cfg, "command", "must be a string or a list of strings (got %s)", kindOf(cmd))
	}

	if c.Workdir != "" {
		if _, err := engine.ParsePlaceholders(c.Workdir); err != nil {
			return nil, fieldErr(cfg, "workdir", "%v", err)
		}
		if err := checkLocal(c.Workdir); err != nil {
			return nil, fieldErr(cfg, "workdir", "%v", err)
		}
		s.workdir = c.Workdir
	}

	if c.MaxOutput < 0 {
		return nil, fieldErr(cfg, "max_output", "must be > 0 (got %d)", c.MaxOutput)
	}
	return s, nil
}

// Templates returns the step's strings that hold placeholders, so a loader
// can check them against the hook's other steps.
func (s *shellStep) Templates() []string {
	var out []string
	if s.script != nil {
		out = append(out, s.written)
	}
	out = append(out, s.argv...)
	if s.workdir != "" {
		out = append(out, s.workdir)
	}
	for _, e := range s.env {
		out = append(out, e.tmpl)
	}
	return out
}

// Run runs the command and reports its output. A non-zero exit is a
// result, not an error; not starting, a placeholder that does not resolve,
// a workdir outside the hook's and a timeout are errors.
func (s *shellStep) Run(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
	res := newResult(s.def, map[string]any{"stdout": "", "stderr": "", "command": s.written, "containment": ""})
	res.ExitCode = new(-1)
	c, err := s.command(env)
	if err != nil {
		return fail(res, err)
	}

	r := c.Run(ctx)
	res.Output = r.Stdout
	res.Fields["stdout"] = r.Stdout
	res.Fields["stderr"] = r.Stderr
	res.Fields["containment"] = process.Containment(c.Policy, r)
	res.ExitCode, res.TimedOut, res.Truncated = new(r.ExitCode), r.TimedOut, r.Truncated
	if len(r.Killed) > 0 {
		res.Fields["killed_pids"] = pids(r.Killed)
	}
	if len(r.Detached) > 0 {
		res.Fields["detached_pids"] = pids(r.Detached)
	}
	if r.Err != nil {
		return fail(res, r.Err)
	}
	return done(res)
}

// command builds the process to run for env: its environment (with the
// placeholder values), argv and working directory.
func (s *shellStep) command(env *engine.StepEnv) (process.Command, error) {
	scope := scopeOf(env)

	c := process.Command{Timeout: s.timeout, MaxOutput: s.maxOutput, Redactor: env.Redactor, Detach: s.detach, Track: env.TrackProcess, Policy: env.Sandbox, Live: env.Output}
	base := env.Env
	if base == nil {
		base = engine.ChildEnv(os.Environ(), nil, nil)
	}
	c.Env = base // shared with the run's other steps: Command does not change it
	if len(s.env) > 0 || s.script != nil && s.script.Placeholders() > 0 {
		c.Env = make([]string, 0, len(base)+len(s.env)+8)
		c.Env = append(c.Env, base...)
	}
	for _, e := range s.env {
		v, err := engine.Expand(e.tmpl, scope, nil)
		if err != nil {
			return process.Command{}, fmt.Errorf("env.%s: %w", e.name, err)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return process.Command{}, fmt.Errorf("env.%s: value contains a NUL byte, which cannot be passed to a process", e.name)
		}
		if where := s.envOptionAt(e.name); where != "" && !s.allowOpts {
			if err := shellcheck.CheckOptionValue(v, where); err != nil {
				return process.Command{}, fmt.Errorf("env.%s: %w", e.name, err)
			}
		}
		c.Env = append(c.Env, e.name+"="+v)
	}
	if s.script != nil {
		vars, err := s.script.Vars(scope, s.allowOpts)
		if err != nil {
			return process.Command{}, fmt.Errorf("command: %w", err)
		}
		c.Env = append(c.Env, vars...)
		c.Argv = []string{"/bin/sh", "-c", s.script.Text()}
	} else {
		c.Argv = make([]string, len(s.argv))
		for i, a := range s.argv {
			v, err := engine.Expand(a, scope, nil)
			if err != nil {
				return process.Command{}, fmt.Errorf("command[%d]: %w", i, err)
			}
			if strings.IndexByte(v, 0) >= 0 {
				return process.Command{}, fmt.Errorf("command[%d]: value contains a NUL byte, which cannot be passed to a process", i)
			}
			if s.argvOpt[i] != "" && !s.allowOpts {
				if err := shellcheck.CheckOptionValue(v, s.argvOpt[i]); err != nil {
					return process.Command{}, fmt.Errorf("command[%d]: %w", i, err)
				}
			}
			c.Argv[i] = v
		}
	}
	dir, err := s.dir(env.Workdir, scope)
	if err != nil {
		return process.Command{}, fmt.Errorf("workdir: %w", err)
	}
	c.Dir = dir
	// The git the script runs may not run what a repository configures
	// (GitEnv): after the step's env, which it outranks.
	c.Env = GitEnv(c.Env, env.Workdir, nil)
	return c, nil
}

// envOptionAt says where the value of the env variable name would begin
// an argument in the string form's script ("" if nowhere).
func (s *shellStep) envOptionAt(name string) string {
	if s.script == nil {
		return s.argvEnvOpt[name]
	}
	return s.script.EnvOptionAt[name]
}

// dir resolves the step's working directory inside the hook's: the
// expanded path must be local, and with symbolic links resolved it must
// still be inside the hook's workdir.
func (s *shellStep) dir(hookDir string, scope *engine.Scope) (string, error) {
	if s.workdir == "" {
		return hookDir, nil
	}
	rel, err := engine.Expand(s.workdir, scope, nil)
	if err != nil {
		return "", err
	}
	if err := checkLocal(rel); err != nil {
		return "", err
	}
	real, err := Confine(hookDir, nil, rel)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(real); err != nil {
		return "", err
	} else if !fi.IsDir() {
		return "", fmt.Errorf("%q is not a directory", rel)
	}
	return real, nil
}

// checkLocal refuses absolute paths and paths that climb out with "..".
func checkLocal(p string) error {
	if filepath.IsAbs(p) {
		return fmt.Errorf("must be relative to the hook's workdir (got %q)", p)
	}
	if p != "." && !filepath.IsLocal(p) {
		return fmt.Errorf("%q leaves the hook's workdir", p)
	}
	return nil
}

// quoteArgv renders argv as a shell would need it typed, for display.
func quoteArgv(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(shellQuote(a))
	}
	return b.String()
}

// shellQuote quotes s as one shell word when it needs quoting.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-{}", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// pids lists the processes' ids, for a step's fields.
func pids(ps []process.Process) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.PID
	}
	return out
}
