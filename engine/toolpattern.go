package engine

import "github.com/hookd/hookd/internal/glob"

// IsToolGlob reports whether an entry of a hook's tools: is a glob rather
// than a tool's name: it holds '*', '?', '[' or '\' (glob.IsPattern). A
// glob may grant several tools or none; a name grants the one tool of
// that name. Every decision about what a tools: entry grants (the loader,
// the agent, MCP servers, accept_from_tools, containment) asks this.
func IsToolGlob(entry string) bool { return glob.IsPattern(entry) }

// GrantsTool reports whether the tools: entry grants the tool hooks list
// as name (a built-in's name, or SERVER.TOOL for a tool of an MCP
// server): the entry is that name, or a glob matching it, '.' separating
// segments (glob.Dot). A malformed glob grants nothing.
func GrantsTool(entry, name string) bool {
	if !IsToolGlob(entry) {
		return entry == name
	}
	ok, _ := glob.Match(entry, name, glob.Dot)
	return ok
}
