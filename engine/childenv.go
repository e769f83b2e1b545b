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

// ChildEnv builds the environment of a process one of h's steps or tools
// starts: the allowlist, the variables named in secrets (those of h's
// secrets the step or tool names) and h's env_passthrough from environ,
// and h's env on top. The slice has no room to append in place: callers
// copy it before they add to it, as they do for any environment they did
// not make.
func (h *Hook) ChildEnv(environ []string, secrets []string) []string {
	pass := make([]string, 0, len(secrets)+len(h.EnvPassthrough))
	pass = append(append(pass, secrets...), h.EnvPassthrough...)
	return slices.Clip(ChildEnv(environ, pass, h.Env))
}

// ChildEnvs are the environments of the processes a hook's steps and
// tools start (Hook.ChildEnv): a secret of the hook reaches only the
// steps and tools that name it (StepDef.Secrets, Hook.ToolSecrets). The
// engine builds them once per loaded hook and its runs share them: they
// are only read.
type ChildEnvs struct {
	base  []string            // for a step or tool that names no secret
	steps map[int][]string    // by StepDef.Index, for steps that name secrets
	tools map[string][]string // by tool name, for tools that name secrets
	// trace is TRACEPARENT=... of one run's processes (ForRun), "" in
	// the hook's shared ChildEnvs; ownTrace, that the hook's env: sets
	// TRACEPARENT itself, which then stays.
	trace    string
	ownTrace bool
}

// ChildEnvs builds the environments of h's steps and tools from environ
// (hookd's own). A name a step or tool gives that is not one of h's
// secrets (the loader refuses it) passes nothing: it would not be
// redacted.
func (h *Hook) ChildEnvs(environ []string) *ChildEnvs {
	c := &ChildEnvs{base: h.ChildEnv(environ, nil)}
	_, c.ownTrace = h.Env[TraceParentEnv]
	for _, d := range h.Steps {
		if names := h.ownSecrets(d.Secrets); len(names) > 0 {
			if c.steps == nil {
				c.steps = make(map[int][]string)
			}
			c.steps[d.Index] = h.ChildEnv(environ, names)
		}
	}
	for tool, names := range h.ToolSecrets {
		if names = h.ownSecrets(names); len(names) > 0 {
			if c.tools == nil {
				c.tools = make(map[string][]string, len(h.ToolSecrets))
			}
			c.tools[tool] = h.ChildEnv(environ, names)
		}
	}
	return c
}

// ownSecrets returns the names among names that are h's secrets.
func (h *Hook) ownSecrets(names []string) []string {
	var out []string
	for _, n := range names {
		if slices.Contains(h.Secrets, n) {
			out = append(out, n)
		}
	}
	return out
}

// TraceParentEnv is the variable that gives a run's processes the run's
// span (Run.Span) as a W3C traceparent, which `hookd emit` and `hookd
// fire` (and OpenTelemetry's SDKs) read: what they start continues the
// run's trace.
const TraceParentEnv = "TRACEPARENT"

// ForRun returns the environments of run's processes: c's, with
// TRACEPARENT set to run's span, unless the hook's env: sets it.
func (c *ChildEnvs) ForRun(run *Run) *ChildEnvs {
	cp := *c
	if !c.ownTrace {
		cp.trace = TraceParentEnv + "=" + string(run.Span())
	}
	return &cp
}

// Base is the environment of a process whose step or tool names no
// secret.
func (c *ChildEnvs) Base() []string { return c.withTrace(c.base) }

// Step is the environment of the processes of the step at index i: the
// base, with the secrets the step names.
func (c *ChildEnvs) Step(i int) []string {
	if env, ok := c.steps[i]; ok {
		return c.withTrace(env)
	}
	return c.Base()
}

// Tool is the environment of the processes the model's tool name starts:
// the base, with the secrets the hook's tools: entry of that tool names.
func (c *ChildEnvs) Tool(name string) []string {
	if env, ok := c.tools[name]; ok {
		return c.withTrace(env)
	}
	return c.Base()
}

// withTrace is env with c's TRACEPARENT in place of hookd's own (a new
// slice: env is shared), or env itself in the hook's shared ChildEnvs.
func (c *ChildEnvs) withTrace(env []string) []string {
	if c.trace == "" {
		return env
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, TraceParentEnv+"=") {
			out = append(out, kv)
		}
	}
	return append(out, c.trace)
}
