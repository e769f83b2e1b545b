package steps

import (
	"os"
	"strconv"
	"strings"

	"github.com/hookd/hookd/engine"
)

// gitSafeArgs come first in every git command hookd runs. They turn off
// what a repository's own configuration could make git execute or fetch:
// a file-system monitor, hooks, a pager, credential helpers, transports
// (and so ssh commands, proxies and upload-pack), and signature checks.
// Command-line configuration outranks the repository's .git/config and
// the files it includes. External diff drivers and textconv are turned
// off per command with --no-ext-diff and --no-textconv (gitDiffArgs), and
// filter drivers, whose names a repository chooses, by gitSession.
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

// gitSafeEnv is the environment git runs in: base without any GIT_*
// variable (GIT_DIR, GIT_EXTERNAL_DIFF, GIT_CONFIG_* and the like could
// point git elsewhere or make it run a program), without the system and
// global configuration files, and with overrides, the KEY=VALUE pairs of
// command-line configuration passed as GIT_CONFIG_COUNT/KEY/VALUE (which
// has no quoting problem with a driver name holding '=' or '.').
func gitSafeEnv(base []string, overrides [][2]string) []string {
	if base == nil {
		base = engine.ChildEnv(os.Environ(), nil, nil)
	}
	env := make([]string, 0, len(base)+8+2*len(overrides))
	for _, kv := range base {
		if !strings.HasPrefix(strings.ToUpper(kv), "GIT_") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_PAGER=cat", "LC_ALL=C",
		"GIT_CONFIG_COUNT="+strconv.Itoa(len(overrides)))
	for i, kv := range overrides {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+kv[0], "GIT_CONFIG_VALUE_"+n+"="+kv[1])
	}
	return env
}

// filterOverrides turns off each filter driver a repository configures
// (the names of its filter.*.* keys): no clean, smudge or long-running
// process command, and not required, so git reads files as they are.
func filterOverrides(keys []string) [][2]string {
	var out [][2]string
	seen := map[string]bool{}
	for _, k := range keys {
		rest, ok := strings.CutPrefix(k, "filter.")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, '.')
		if i <= 0 || seen[rest[:i]] {
			continue
		}
		name := rest[:i]
		seen[name] = true
		for _, v := range [][2]string{{"clean", ""}, {"smudge", ""}, {"process", ""}, {"required", "false"}} {
			out = append(out, [2]string{"filter." + name + "." + v[0], v[1]})
		}
	}
	return out
}
