package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/redact"
)

// gitSafeArgs come first in every git command hookd runs. They turn off
// what a repository's own configuration could make git execute or fetch:
// a file-system monitor, hooks, a pager, credential helpers, transports
// (and so ssh commands, proxies and upload-pack), and signature checks.
// Command-line configuration outranks the repository's .git/config and
// the files it includes. External diff drivers and textconv are turned
// off per command with --no-ext-diff and --no-textconv (gitDiffArgs), and
// filter drivers, whose names a repository chooses, by gitSession
// (gitDrivers); what every git hookd starts gets, whoever asks for it,
// is GitEnv's.
var gitSafeArgs = []string{
	"--no-pager", "--literal-pathspecs",
	"-c", "core.fsmonitor=false",
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.pager=cat",
	"-c", "core.askPass=",
	"-c", "core.sshCommand=",
	"-c", "core.gitProxy=",
	"-c", "credential.helper=",
	"-c", "protocol.allow=never",
	"-c", "log.showSignature=false",
	"-c", "core.quotePath=false",
	"-c", "color.ui=false",
}

// gitDiffArgs go into every git command that may show or compare file
// contents (diff, log): no external diff program and no textconv filter.
var gitDiffArgs = []string{"--no-ext-diff", "--no-textconv"}

// gitGuard is the configuration every git process hookd starts for a
// hook runs with — its own git steps, the model's run_command, shell
// steps — given as command-line configuration (GIT_CONFIG_COUNT), which
// outranks the repository's own files and is the only place git reads
// safe.bareRepository from: a bare repository git would find on its own
// (a directory of plain files: HEAD, objects/, refs/ and a config that
// sets core.worktree and core.fsmonitor) is refused unless named with
// GIT_DIR or --git-dir; no file-system monitor and no hook runs.
var gitGuard = [][2]string{
	{"safe.bareRepository", "explicit"},
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"},
}

// GitEnv returns env with what every git process hookd starts for a hook
// whose workdir is workdir must run with, added in one place: the
// configuration of gitGuard, then drivers (gitDrivers), after any
// GIT_CONFIG_COUNT pairs env already holds (which they outrank), and
// GIT_CEILING_DIRECTORIES holding the workdir's parent, so that git
// looks for a repository in the workdir and below, never above it. env
// is not changed; nil stands for what Command gives a nil Env.
func GitEnv(env []string, workdir string, drivers [][2]string) []string {
	if env == nil {
		env = engine.ChildEnv(os.Environ(), nil, nil)
	}
	out := make([]string, 0, len(env)+2+2*(len(gitGuard)+len(drivers)))
	vals := map[string]string{}
	ceiling := ""
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "GIT_CONFIG_COUNT" || strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_"):
			vals[k] = v
		case k == "GIT_CEILING_DIRECTORIES":
			ceiling = v
		default:
			out = append(out, kv)
		}
	}
	var pairs [][2]string
	if n, err := strconv.Atoi(vals["GIT_CONFIG_COUNT"]); err == nil {
		for i := range min(n, 1000) {
			k, ok := vals["GIT_CONFIG_KEY_"+strconv.Itoa(i)]
			if !ok {
				break // git refuses a count its pairs do not fill
			}
			pairs = append(pairs, [2]string{k, vals["GIT_CONFIG_VALUE_"+strconv.Itoa(i)]})
		}
	}
	pairs = append(append(pairs, gitGuard...), drivers...)
	if workdir != "" {
		dir, err := filepath.Abs(workdir)
		if err != nil {
			dir = filepath.Clean(workdir)
		}
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		if parent := filepath.Dir(dir); parent != dir {
			if ceiling != "" {
				parent = ceiling + string(filepath.ListSeparator) + parent
			}
			ceiling = parent
		}
	}
	if ceiling != "" {
		out = append(out, "GIT_CEILING_DIRECTORIES="+ceiling)
	}
	out = append(out, "GIT_CONFIG_COUNT="+strconv.Itoa(len(pairs)))
	for i, kv := range pairs {
		n := strconv.Itoa(i)
		out = append(out, "GIT_CONFIG_KEY_"+n+"="+kv[0], "GIT_CONFIG_VALUE_"+n+"="+kv[1])
	}
	return out
}

// gitSafeEnv is the environment hookd's own git steps run git in: base
// without any GIT_* variable (GIT_DIR, GIT_EXTERNAL_DIFF, GIT_CONFIG_* and
// the like could point git elsewhere or make it run a program), without
// the system and global configuration files, with GitEnv's additions
// for workdir and the drivers, and with GIT_DIR set to gitDir when the
// step names its repository (git_dir:).
func gitSafeEnv(base []string, workdir, gitDir string, drivers [][2]string) []string {
	if base == nil {
		base = engine.ChildEnv(os.Environ(), nil, nil)
	}
	env := make([]string, 0, len(base)+8)
	for _, kv := range base {
		if !strings.HasPrefix(strings.ToUpper(kv), "GIT_") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_PAGER=cat", "LC_ALL=C")
	if gitDir != "" {
		env = append(env, "GIT_DIR="+gitDir)
	}
	return GitEnv(env, workdir, drivers)
}

// gitDriverKeys is the git config command that lists the names of the
// filter and diff keys a repository's configuration sets (running none
// of them): what gitDrivers turns off.
var gitDriverKeys = []string{"config", "--null", "--name-only", "--get-regexp", `^(filter|diff)\.`}

// gitDrivers turns off each filter, textconv and external diff driver
// keys names (the output of gitDriverKeys): a filter runs no clean,
// smudge or long-running process command and is not required, so git
// reads files as they are; a textconv becomes cat, so a diff shows the
// file as it is; an external diff program (diff.external, or a
// driver's command, which --no-ext-diff skips) becomes false, so a git
// diff that would run one fails, naming it, rather than run it or show
// an empty diff.
func gitDrivers(keys []string) [][2]string {
	var out [][2]string
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		if k == "diff.external" {
			out = append(out, [2]string{k, "false"})
			continue
		}
		section, rest, ok := strings.Cut(k, ".")
		i := strings.LastIndexByte(rest, '.')
		if !ok || i <= 0 {
			continue
		}
		name, key := rest[:i], rest[i+1:]
		switch {
		case section == "filter" && !seen["filter."+name]:
			seen["filter."+name] = true
			for _, v := range [][2]string{{"clean", ""}, {"smudge", ""}, {"process", ""}, {"required", "false"}} {
				out = append(out, [2]string{"filter." + name + "." + v[0], v[1]})
			}
		case section == "diff" && key == "textconv":
			out = append(out, [2]string{k, "cat"})
		case section == "diff" && key == "command":
			out = append(out, [2]string{k, "false"})
		}
	}
	return out
}

// gitGlobalOptions are the options before a git subcommand that choose
// the repository or the configuration, each with whether it takes a
// value (as the next argument, or after "=" for a long one).
var gitGlobalOptions = map[string]bool{
	"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true,
	"--config-env": true, "--bare": false,
}

// gitGlobals returns the options of git's argv (argv[0] is git) that
// choose the repository or the configuration, up to the subcommand.
func gitGlobals(argv []string) []string {
	var out []string
	for i := 1; i < len(argv) && strings.HasPrefix(argv[i], "-"); i++ {
		name, _, inline := strings.Cut(argv[i], "=")
		value, ok := gitGlobalOptions[name]
		switch {
		case !ok:
		case value && !inline && i+1 < len(argv):
			out = append(out, argv[i], argv[i+1])
			i++
		default:
			out = append(out, argv[i])
		}
	}
	return out
}

// GitCommandEnv returns the environment of argv, a program the model asks
// run_command to run in dir for a hook whose workdir is workdir: env with
// GitEnv's additions and, when argv runs git, the overrides that turn
// off each filter, textconv and external diff driver of the repository
// that git reaches (gitDrivers), read beforehand with git config in the
// same directory and environment, with argv's options that choose the
// repository or the configuration. A git config that fails (not a
// repository is not a failure) is an error: the command would fail the
// same way.
func GitCommandEnv(ctx context.Context, argv []string, dir, workdir string, env []string, red *redact.Redactor) ([]string, error) {
	guarded := GitEnv(env, workdir, nil)
	if len(argv) == 0 || filepath.Base(argv[0]) != "git" {
		return guarded, nil
	}
	s := &gitSession{repo: &gitRepo{timeout: DefaultGitTimeout, maxOutput: 4 << 10}, dir: dir, env: guarded, red: red}
	var keys []string
	if _, err := s.run(ctx, gitCmd{
		globals: gitGlobals(argv),
		args:    gitDriverKeys,
		okCodes: []int{1}, // none, or not in a repository
		nul:     true,
		tee:     func(k string) { keys = append(keys, k) },
	}); err != nil {
		return nil, fmt.Errorf("read the repository's drivers: %w", err)
	}
	if len(keys) == 0 {
		return guarded, nil
	}
	return GitEnv(env, workdir, gitDrivers(keys)), nil
}
