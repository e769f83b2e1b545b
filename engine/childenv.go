package engine

import (
	"slices"
	"sort"
	"strings"
)

// ChildEnvAllowlist names the variables of hookd's own environment that
// every process hookd starts inherits; LC_* (every locale variable) is
// allowed too. Nothing else of hookd's environment reaches a child unless
// it is asked for: hookd's own credentials (the API token, the model's
// key, notify URLs, MCP header variables) stay in hookd.
var ChildEnvAllowlist = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM",
}

// ChildEnv builds the environment of a process hookd starts, as
// KEY=VALUE sorted by key: from environ (hookd's own), the allowlisted
// variables (ChildEnvAllowlist and LC_*) and those named in pass; then
// set on top. Every place that starts a process builds its environment
// here.
func ChildEnv(environ []string, pass []string, set map[string]string) []string {
	want := make(map[string]bool, len(ChildEnvAllowlist)+len(pass))
	for _, n := range ChildEnvAllowlist {
		want[n] = true
	}
	for _, n := range pass {
		want[n] = true
	}
	vals := make(map[string]string, len(want)+len(set))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && (want[k] || strings.HasPrefix(k, "LC_")) {
			vals[k] = v // the last of a repeated key wins, as in exec
		}
	}
	for k, v := range set {
		vals[k] = v
	}
	out := make([]string, 0, len(vals))
	for k, v := range vals {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// ChildEnv builds the environment of the processes h's steps and tools
// start: the allowlist, h's secrets and env_passthrough from environ,
// and h's env on top. The engine builds it once per loaded hook and its
// runs share it (hookShared): the slice has no room to append in place,
// and callers copy it before they add to it, as they do for any
// environment they did not make.
func (h *Hook) ChildEnv(environ []string) []string {
	pass := make([]string, 0, len(h.Secrets)+len(h.EnvPassthrough))
	pass = append(append(pass, h.Secrets...), h.EnvPassthrough...)
	return slices.Clip(ChildEnv(environ, pass, h.Env))
}
