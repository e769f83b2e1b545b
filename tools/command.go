package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/process"
	"github.com/hookd/hookd/steps"
)

// Limits of run_command.
const (
	commandTimeout    = 60 * time.Second
	commandMaxTimeout = 10 * time.Minute
	commandMaxOutput  = 16 << 10 // bytes of stdout, and of stderr, kept
)

// runCommandName is run_command's name, which also keys the hook's
// secrets its processes get (engine.Hook.ToolSecrets).
const runCommandName = "run_command"

func init() {
	register(runCommandName,
		"Run a program in the hook's working directory and return its exit code, stdout and stderr. "+
			"argv is the program and its arguments, run without a shell (no pipes, globs or $VARS). "+
			"The command is killed after timeout_seconds (default 60, at most 600).",
		`{"type":"object","properties":{
			"argv":{"type":"array","items":{"type":"string"},"minItems":1,"description":"program and arguments, e.g. [\"go\",\"test\",\"./...\"]"},
			"dir":{"type":"string","description":"working directory, relative to the hook's (default .)"},
			"timeout_seconds":{"type":"integer","minimum":1,"maximum":600},
			"stdin":{"type":"string","description":"text fed to the command's standard input"}
		},"required":["argv"],"additionalProperties":false}`,
		runCommand)
}

type commandArgs struct {
	Argv           []string `json:"argv"`
	Dir            string   `json:"dir"`
	TimeoutSeconds int      `json:"timeout_seconds"`
	Stdin          string   `json:"stdin"`
}

func runCommand(ctx context.Context, env *engine.ToolEnv, a *commandArgs) (string, error) {
	if len(a.Argv) == 0 || a.Argv[0] == "" {
		return "", fmt.Errorf("argv needs a program")
	}
	r, err := roots(env)
	if err != nil {
		return "", err
	}
	dir := r.Workdir()
	if a.Dir != "" {
		if dir, err = r.Resolve(a.Dir); err != nil {
			return "", err
		}
	}
	timeout := commandTimeout
	if a.TimeoutSeconds > 0 {
		timeout = min(time.Duration(a.TimeoutSeconds)*time.Second, commandMaxTimeout)
	}
	// git, run directly or by what the model runs, may not run what a
	// repository configures (steps.GitEnv).
	environ, err := steps.GitCommandEnv(ctx, a.Argv, dir, r.Workdir(), env.ToolEnviron(runCommandName), env.Redactor)
	if err != nil {
		return "", err
	}
	cmd := &process.Command{Argv: a.Argv, Dir: dir, Env: environ, Timeout: timeout, MaxOutput: commandMaxOutput,
		Redactor: env.Redactor, Track: env.TrackProcess, Policy: env.Sandbox}
	if a.Stdin != "" {
		cmd.Stdin = strings.NewReader(a.Stdin)
	}
	res := cmd.Run(ctx)
	if res.Err != nil && !res.TimedOut && res.ExitCode == -1 {
		return "", res.Err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "exit code: %d", res.ExitCode)
	if res.TimedOut {
		fmt.Fprintf(&b, " (timed out after %s; killed)", timeout)
	}
	fmt.Fprintf(&b, "\nduration: %s\n", res.Duration.Round(time.Millisecond))
	section := func(name, text string) {
		if strings.TrimSpace(text) == "" {
			fmt.Fprintf(&b, "%s: (empty)\n", name)
			return
		}
		fmt.Fprintf(&b, "%s:\n%s", name, text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteByte('\n')
		}
	}
	section("stdout", res.Stdout)
	section("stderr", res.Stderr)
	return b.String(), nil
}
