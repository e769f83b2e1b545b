package engine

import (
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
	for _, t := range h.Tools {
		if t == "run_command" || strings.Contains(t, "*") || strings.Contains(t, ".") || strings.HasPrefix(t, "mcp") {
			return true
		}
	}
	return false
}

// SandboxPolicy is the policy of h's processes: its workdir writable,
// hookd's own files (HooksDir, Protected) hidden, the network as the
// trigger decides (none for untrusted input, all otherwise), its cache
// directory under CacheDir. Steps and tools narrow or widen it with what
// they declare (sandbox.Policy.With).
func (e *Engine) SandboxPolicy(h *Hook) *sandbox.Policy {
	p := &sandbox.Policy{
		Workdir: h.Workdir,
		Key:     h.Name,
		Hidden:  e.hookdPaths(),
	}
	if !h.UntrustedInput() {
		p.Network = sandbox.Network{All: true}
	}
	if e.cfg.CacheDir != "" {
		p.Cache = filepath.Join(e.cfg.CacheDir, h.Name)
	}
	return p
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
