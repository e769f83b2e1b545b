package steps

import (
	"context"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/process"
)

// DefaultTestTimeout bounds a run_tests step whose definition sets no
// timeout.
const DefaultTestTimeout = 10 * time.Minute

func init() {
	engine.RegisterStep("run_tests", engine.DeclaredKind{Build: newRunTests, Fields: []string{
		"passed", "failures", "failure_count", "test_count", "passed_count", "skipped_count", "framework",
		"exit_code", "timed_out", "truncated", "duration_ms", "command", "stdout", "stderr", "containment"}, Starts: engine.ProcessesDeclared})
}

type runTestsConfig struct {
	Shell       shellConfig `yaml:",inline"`
	Framework   string      `yaml:"framework"`
	MaxFailures int         `yaml:"max_failures"`
	// Workspace is agent-queue's name for workdir.
	Workspace string `yaml:"workspace"`
}

// runTestsStep runs a test command like the shell step does and reads
// its output as the named framework's (or whichever it recognises).
type runTestsStep struct {
	shell       *shellStep
	framework   string
	maxFailures int
}

func newRunTests(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
	var c runTestsConfig
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	if c.Workspace != "" {
		if c.Shell.Workdir != "" {
			return nil, fieldErr(cfg, "workspace", "give workdir or workspace (agent-queue's name for it), not both")
		}
		c.Shell.Workdir = c.Workspace
	}
	sh, err := buildShell(def, cfg, &c.Shell)
	if err != nil {
		return nil, err
	}
	if def.Timeout <= 0 {
		sh.timeout = DefaultTestTimeout
	}
	s := &runTestsStep{shell: sh, framework: c.Framework, maxFailures: c.MaxFailures}
	switch s.framework {
	case "":
		s.framework = FrameworkAuto
	case "vitest":
		s.framework = FrameworkJest
	case FrameworkAuto, FrameworkGo, FrameworkPytest, FrameworkJest, FrameworkCargo:
	default:
		return nil, fieldErr(cfg, "framework", "unknown framework %q (want auto, go, pytest, jest, vitest or cargo)", c.Framework)
	}
	if c.MaxFailures < 0 {
		return nil, fieldErr(cfg, "max_failures", "must be > 0 (got %d)", c.MaxFailures)
	}
	if s.maxFailures == 0 {
		s.maxFailures = DefaultMaxFailures
	}
	return s, nil
}

// Templates returns the strings of the step that may hold placeholders.
func (s *runTestsStep) Templates() []string { return s.shell.Templates() }

// Run runs the tests. Failing tests and a non-zero exit are results; a
// command that cannot start, an unresolved placeholder and a timeout are
// errors (the output read until then is still reported).
func (s *runTestsStep) Run(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
	res := newResult(s.shell.def, map[string]any{
		"output": "", "passed": false, "failures": []any{}, "failure_count": 0, "test_count": 0,
		"passed_count": 0, "skipped_count": 0, "framework": "", "command": s.shell.written,
		"stdout": "", "stderr": "", // agent-queue's names: stdout is output, stderr is merged into it
		"containment": "",
	})
	res.ExitCode = new(-1)
	c, err := s.shell.command(env)
	if err != nil {
		return fail(res, err)
	}
	parser := newTestParser(s.framework)
	lines := process.NewSplitWriter('\n', parser.line)
	c.MergeOutput = true
	c.Tee = lines
	r := c.Run(ctx)
	lines.Flush()
	rep := parser.report(s.maxFailures)

	failures := make([]any, len(rep.Failures))
	for i, f := range rep.Failures {
		failures[i] = f
	}
	res.Output = r.Stdout
	res.Fields["output"] = r.Stdout
	res.Fields["stdout"] = r.Stdout
	res.Fields["containment"] = process.Containment(c.Policy, r)
	res.Fields["passed"] = r.Err == nil && r.ExitCode == 0 && rep.Failed == 0
	res.Fields["failures"] = failures
	res.Fields["failure_count"] = rep.Failed
	res.Fields["test_count"] = rep.Tests
	res.Fields["passed_count"] = rep.Passed
	res.Fields["skipped_count"] = rep.Skipped
	res.Fields["framework"] = rep.Framework
	if rep.Framework == "" {
		res.Fields["framework"] = "unknown"
	}
	res.ExitCode, res.TimedOut, res.Truncated = new(r.ExitCode), r.TimedOut, r.Truncated
	if r.Err != nil {
		return fail(res, r.Err)
	}
	return done(res)
}
