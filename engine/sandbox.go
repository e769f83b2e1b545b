package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hookd/hookd/sandbox"
)

// UntrustedInput reports whether h starts processes from input its
// author does not write: an event's or a watched folder's data, or a
// model's tool calls (run_command, MCP tools). Such a hook gets no
// network by default, and does not run where containment is missing.
func (h *Hook) UntrustedInput() bool {
	switch h.Trigger.Kind {
	case TriggerEvent, TriggerWatch:
		return true
	}
	return h.modelStartsProcesses()
}

// modelStartsProcesses reports whether h's tools may start processes:
// run_command, MCP tools, or any glob (IsToolGlob), which may grant
// either or a tool registered later.
func (h *Hook) modelStartsProcesses() bool {
	for _, t := range h.Tools {
		if t == "run_command" || IsToolGlob(t) || strings.Contains(t, ".") || strings.HasPrefix(t, "mcp") {
			return true
		}
	}
	return false
}

// StartsProcesses reports whether a run of h starts processes: a step of
// a kind that does (KindProcesses), or a model with tools that do.
func (h *Hook) StartsProcesses() bool {
	for _, d := range h.Steps {
		if KindProcesses(d.Type) != ProcessesNone {
			return true
		}
	}
	return h.modelStartsProcesses()
}

// NeedsContainment reports whether h may only run where processes can be
// contained: it starts processes from untrusted input. Where files or the
// network cannot be confined (sandbox.Status.Contained), and hookd.yaml
// does not set sandbox: off, its triggers are refused
// (GateSandboxUnavailable).
func (h *Hook) NeedsContainment() bool { return h.UntrustedInput() && h.StartsProcesses() }

// SandboxPolicy is the policy of h's processes: its workdir and writes:
// writable, reads narrowed as reads: says, hookd's own files (HooksDir,
// Protected) hidden, the network as network: says or else as the trigger
// decides (none for untrusted input, all otherwise), its limits:, its
// cache directory under CacheDir. Steps and tools narrow or widen it with
// what they declare (StepPolicy, sandbox.Policy.With).
func (e *Engine) SandboxPolicy(h *Hook) *sandbox.Policy {
	p := &sandbox.Policy{
		Workdir: h.Workdir,
		Writes:  h.Writes,
		Reads:   h.Reads,
		Limits:  h.Limits,
		Key:     h.Name,
		Hidden:  e.hookdPaths(),
	}
	switch {
	case h.Network != nil:
		p.Network = *h.Network
	case !h.UntrustedInput():
		p.Network = sandbox.Network{All: true}
	}
	if e.cfg.CacheDir != "" {
		p.Cache = filepath.Join(e.cfg.CacheDir, h.Name)
	}
	return p
}

// StepPolicy is the policy of the processes of step def of a hook whose
// policy is hook: the hook's, with what the step declares (writes:,
// network:).
func StepPolicy(hook *sandbox.Policy, def *StepDef) *sandbox.Policy {
	if hook == nil || len(def.Writes) == 0 && def.Network == nil {
		return hook
	}
	return hook.With(def.Writes, def.Network)
}

// SandboxStatus is which containment the hooks' processes get
// (Config.Sandbox).
func (e *Engine) SandboxStatus() sandbox.Status { return *e.cfg.Sandbox }

// sandboxGate refuses h's triggers where its processes need containment
// (NeedsContainment) that this machine cannot give; nil when h may run.
func (e *Engine) sandboxGate(h *Hook) *GateError {
	st := e.cfg.Sandbox
	if st.Off || st.Contained() || !h.NeedsContainment() {
		return nil
	}
	var missing []string
	if !st.FilesOK {
		missing = append(missing, "files ("+st.Files+")")
	}
	if !st.NetworkOK {
		missing = append(missing, "network ("+st.Network+")")
	}
	return &GateError{Gate: GateSandboxUnavailable, Hook: h.Name,
		Detail: fmt.Sprintf("hook %s starts processes from untrusted input, and hookd cannot confine their %s here; "+
			"see hookd status, or set sandbox: off in hookd.yaml to run such hooks unconfined", h.Name, strings.Join(missing, " nor "))}
}

// SandboxProblem says what the sandbox cannot give h here: "refused:
// …" when its triggers are refused (GateSandboxUnavailable), "limits: …
// not enforced here: …" when its limits: are not; "" when neither.
func (e *Engine) SandboxProblem(h *Hook) string {
	if g := e.sandboxGate(h); g != nil {
		return "refused: " + g.reason()
	}
	return e.limitsNote(h)
}

// LimitsUnenforced says why h's limits: cannot be enforced here, or ""
// when they can (or h sets none).
func (e *Engine) LimitsUnenforced(h *Hook) string {
	st := e.cfg.Sandbox
	switch {
	case h.Limits.IsZero() || st.LimitsOK && !st.Off:
		return ""
	case st.Off:
		return "sandbox: off in hookd.yaml"
	}
	return st.Limits
}

// limitsNote is the note a run of h gets when its limits: are not
// enforced, or "".
func (e *Engine) limitsNote(h *Hook) string {
	why := e.LimitsUnenforced(h)
	if why == "" {
		return ""
	}
	return "limits: " + h.Limits.String() + " not enforced here: " + why
}

// hookdPaths are the paths no process of a hook may read or write.
func (e *Engine) hookdPaths() []string {
	paths := make([]string, 0, len(e.cfg.Protected)+1)
	if e.cfg.HooksDir != "" {
		paths = append(paths, e.cfg.HooksDir)
	}
	for _, p := range e.cfg.Protected {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths
}

// defaultCacheDir is where hooks' cache directories live by default: the
// user's cache directory, hookd/hooks.
func defaultCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "hookd", "hooks")
}

// ToolPolicy is the policy of the processes the model's run_command
// starts for h: it reads what the hook's processes read, writes only the
// hook's write_roots and its private TMPDIR, and has no network.
func (e *Engine) ToolPolicy(h *Hook) *sandbox.Policy {
	p := e.SandboxPolicy(h)
	p.ReadOnlyWorkdir = true
	p.Writes = nil
	for _, w := range h.WriteRoots {
		if !filepath.IsAbs(w) {
			w = filepath.Join(h.Workdir, w)
		}
		p.Writes = append(p.Writes, filepath.Clean(w))
	}
	p.Network = sandbox.Network{}
	return p
}
