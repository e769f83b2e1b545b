package engine

import (
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"weak"
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
// and h's env on top. Every run of h asks for it, with the engine's
// environ: it is built once and kept for h, and built again whenever
// environ, h's secrets, env_passthrough or env differ from what it was
// built from (compared by content, so that a changed Hook or environ
// cannot get a stale one). What is kept for h goes when h is collected
// (a reload builds new hooks). The slice returned is shared: callers
// copy it before they add to it, as they do for any environment they
// did not make.
func (h *Hook) ChildEnv(environ []string) []string {
	key := weak.Make(h)
	if v, ok := childEnvs.Load(key); ok {
		if m := v.(*childEnvMemo); m.from(h, environ) {
			return m.env
		}
	}
	pass := make([]string, 0, len(h.Secrets)+len(h.EnvPassthrough))
	pass = append(append(pass, h.Secrets...), h.EnvPassthrough...)
	m := &childEnvMemo{environ: slices.Clone(environ), secrets: slices.Clone(h.Secrets),
		passthrough: slices.Clone(h.EnvPassthrough), set: maps.Clone(h.Env),
		env: slices.Clip(ChildEnv(environ, pass, h.Env))}
	if _, loaded := childEnvs.Swap(key, m); !loaded {
		runtime.AddCleanup(h, func(k weak.Pointer[Hook]) { childEnvs.Delete(k) }, key)
	}
	return m.env
}

// childEnvs holds the environment Hook.ChildEnv built for each hook
// (weak.Pointer[Hook] -> *childEnvMemo).
var childEnvs sync.Map

// childEnvMemo is an environment Hook.ChildEnv built, with copies of what
// it built it from.
type childEnvMemo struct {
	environ, secrets, passthrough []string
	set                           map[string]string
	env                           []string
}

// from reports whether m was built from environ and h's variables as
// they are now.
func (m *childEnvMemo) from(h *Hook, environ []string) bool {
	return slices.Equal(m.environ, environ) && slices.Equal(m.secrets, h.Secrets) &&
		slices.Equal(m.passthrough, h.EnvPassthrough) && maps.Equal(m.set, h.Env)
}
