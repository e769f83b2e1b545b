package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/glob"
	"github.com/hookd/hookd/internal/suggest"
	"github.com/hookd/hookd/triggers"
	"gopkg.in/yaml.v3"
)

// Tools that trigger other hooks, which a hook lists with their targets:
//
//	tools:
//	  - read_file
//	  - fire_hook: {hooks: [deploy-check, report]}
//	  - emit_event: {types: [report.*]}
//
// and the tools that read run records, with the other hooks whose runs
// they may read (without it, the hook's own only):
//
//	tools:
//	  - search_runs: {hooks: [ci-triage]}   # or ["*"]: every hook
//
// and the tool that starts processes, with the hook's secrets they get
// (secrets.go; without it, none):
//
//	tools:
//	  - run_command: {secrets: [GITHUB_TOKEN]}
const (
	toolFireHook  = "fire_hook"
	toolEmitEvent = "emit_event"
	toolCommand   = "run_command"
)

// runTools read hookd's run records; the hooks listed with any of them
// (Hook.RunHooks) apply to all three, which read the same records.
var runTools = []string{"list_runs", "get_run", "search_runs"}

// powerfulTools are the built-in tools whose holder does not accept
// triggers made by another model's tool call unless it says
// accept_from_tools: true. Tools of MCP servers count too.
var powerfulTools = []string{"run_command", "write_file"}

// tools decodes the tools: list. An entry is a tool name (a glob, or an
// MCP SERVER.TOOL), or a mapping of one tool that triggers other hooks
// to its targets.
//
// Built-in tools are resolved here: a name must be registered
// (engine.RegisterTool) and a glob must match one. An MCP entry must name
// a server of mcp (when mcp is not nil); its tools are resolved when a
// run starts the server.
func (s *state) tools(n *yaml.Node, h *engine.Hook, mcp []string) {
	if n == nil {
		return
	}
	if n.Kind != yaml.SequenceNode {
		s.errorf(n, "tools", "expected a list, got %s", describe(n))
		return
	}
	for i, item := range n.Content {
		p := index("tools", i)
		item = resolve(item)
		switch {
		case item.Kind == yaml.ScalarNode && !isNull(item):
			name, ok := s.str(item, p)
			if !ok {
				continue
			}
			switch name {
			case "":
				s.errorf(item, p, "must not be empty")
			case toolFireHook:
				s.errorf(item, p, "fire_hook needs the hooks it may fire: write `- fire_hook: {hooks: [NAME, ...]}`")
			case toolEmitEvent:
				s.errorf(item, p, "emit_event needs the event types it may publish: write `- emit_event: {types: [PATTERN, ...]}`")
			default:
				if s.toolEntry(item, p, name, mcp) {
					h.Tools = append(h.Tools, name)
				}
			}
		case item.Kind == yaml.MappingNode:
			s.toolTargets(item, p, h)
		default:
			s.errorf(item, p, "expected a tool name, or a mapping like {fire_hook: {hooks: [NAME]}}, got %s", describe(item))
		}
	}
	if count := loadedToolCount(h.Tools); count > engine.MaxTools {
		s.errorf(n, "tools", "lists %d tools; a model takes at most %d (the OpenAI API's limit)", count, engine.MaxTools)
	}
}

// loadedToolCount counts the tools entries resolve to that are known when
// a hook is loaded: built-in tools (a glob's matches) and MCP tools named
// one by one. A pattern over an MCP server's tools is counted when a run
// resolves it (the agent refuses more than engine.MaxTools there).
func loadedToolCount(entries []string) int {
	seen := map[string]bool{}
	for _, e := range entries {
		switch {
		case strings.Contains(e, "."):
			if !engine.IsToolGlob(e) {
				seen[e] = true
			}
		case engine.IsToolGlob(e):
			for _, name := range engine.ToolNames() {
				if engine.GrantsTool(e, name) {
					seen[name] = true
				}
			}
		default:
			seen[e] = true
		}
	}
	return len(seen)
}

// toolEntry checks a tools: entry listed by name: a built-in tool, a
// glob matching at least one, or SERVER.PATTERN of a declared MCP
// server. It reports whether the entry is good.
func (s *state) toolEntry(n *yaml.Node, p, entry string, mcp []string) bool {
	if server, pat, ok := strings.Cut(entry, "."); ok {
		switch {
		case server == "" || pat == "":
			s.errorf(n, p, "%q: want SERVER.TOOL or SERVER.* for a tool of an MCP server", entry)
		case !validGlob(pat):
			s.errorf(n, p, "%q: %q is not a valid pattern", entry, pat)
		case mcp == nil || slices.Contains(mcp, server):
			return true
		case len(mcp) == 0:
			s.errorf(n, p, "%q names a tool of MCP server %q, but hookd.yaml declares no mcp_servers", entry, server)
		default:
			msg := fmt.Sprintf("%q names a tool of MCP server %q, which hookd.yaml does not declare", entry, server)
			if sug := suggest.Closest(server, mcp); sug != "" {
				msg += fmt.Sprintf("; did you mean %s?", sug)
			}
			s.errorf(n, p, "%s (mcp_servers: %s)", msg, strings.Join(mcp, ", "))
		}
		return false
	}
	if engine.IsToolGlob(entry) {
		if !validGlob(entry) {
			s.errorf(n, p, "%q is not a valid pattern", entry)
			return false
		}
		for _, name := range engine.ToolNames() {
			if engine.GrantsTool(entry, name) {
				return true
			}
		}
		s.errorf(n, p, "%q matches no built-in tool (built-in: %s)", entry, knownTools())
		return false
	}
	if _, ok := engine.LookupTool(entry); ok {
		return true
	}
	msg := fmt.Sprintf("unknown tool %q", entry)
	if sug := suggest.Closest(entry, engine.ToolNames()); sug != "" {
		msg += fmt.Sprintf("; did you mean %s?", sug)
	}
	s.errorf(n, p, "%s (built-in: %s; MCP tools are listed as SERVER.TOOL)", msg, knownTools())
	return false
}

func knownTools() string {
	t := engine.ToolNames()
	if len(t) == 0 {
		return "none registered"
	}
	return strings.Join(t, ", ")
}

// validGlob reports whether pat is a good tool pattern (glob.Dot).
func validGlob(pat string) bool {
	_, err := glob.Compile(pat, glob.Dot)
	return err == nil
}

// toolChoice checks the hook's llm.tool_choice against its tools: a mode
// needs a tool to apply to, and a tool's name must be one the hook lists
// (a built-in by name or glob, SERVER.TOOL of an MCP entry, or a name the
// model knows an MCP tool by, which only the running server can confirm).
func (s *state) toolChoice(llm *yaml.Node, path string, h *engine.Hook) {
	choice := h.LLM.ToolChoice
	if choice == "" {
		return
	}
	at := resolve(llm)
	for i := 0; i+1 < len(at.Content); i += 2 {
		if at.Content[i].Value == "tool_choice" {
			at = at.Content[i+1]
			break
		}
	}
	p := join(path, "tool_choice")
	switch choice {
	case "auto", "none", "required":
		if len(h.Tools) == 0 && s.count() == 0 {
			s.errorf(at, p, "is %s, but the hook lists no tools", choice)
		}
		return
	}
	for _, t := range h.Tools {
		server, _, mcp := strings.Cut(t, ".")
		switch {
		case !mcp && t == choice:
			return
		case !mcp && engine.GrantsTool(t, choice):
			if _, ok := engine.LookupTool(choice); ok {
				return
			}
		case mcp && strings.Contains(choice, "__"):
			return // SERVER__TOOL, as the model calls it
		case mcp:
			if cs, _, ok := strings.Cut(choice, "."); ok && cs == server && engine.GrantsTool(t, choice) {
				return
			}
		}
	}
	if s.count() == 0 {
		s.errorf(at, p, "%q is not one of the hook's tools (%s)", choice, strings.Join(h.Tools, ", "))
	}
}

// toolTargets decodes `fire_hook: {hooks: [...]}` or
// `emit_event: {types: [...]}`.
func (s *state) toolTargets(n *yaml.Node, path string, h *engine.Hook) {
	keys := append([]string{toolFireHook, toolEmitEvent, toolCommand}, runTools...)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		switch {
		case k.Kind != yaml.ScalarNode || slices.Contains(keys, k.Value):
		case strings.Contains(k.Value, "."):
			s.errorf(k, join(path, k.Value), "a tool of an MCP server takes no settings here, and no secret of the hook reaches "+
				"its server: the server's environment is its env: in hookd.yaml's mcp_servers; list %s as a plain name", k.Value)
			return
		default:
			s.errorf(k, join(path, k.Value), "only fire_hook, emit_event, list_runs, get_run, search_runs and run_command "+
				"take settings; list %s as a plain name", k.Value)
			return
		}
	}
	f := s.fields(n, path, keys, nil)
	if len(f.keys) != 1 {
		if len(f.keys) > 1 {
			s.errorf(n, path, "one tool per list entry")
		}
		return
	}
	if v := f.get(toolFireHook); v != nil {
		p := join(path, toolFireHook)
		var hooks []string
		if tf := s.fields(v, p, []string{"hooks"}, nil); s.targetList(tf, "hooks", &hooks) {
			for i, name := range hooks {
				if !hookName.MatchString(name) {
					s.errorf(tf.get("hooks").Content[i], index(join(p, "hooks"), i), "%q is not a valid hook name", name)
				}
			}
			h.FireHooks = append(h.FireHooks, hooks...)
		}
		h.Tools = append(h.Tools, toolFireHook)
		return
	}
	if v := f.get(toolCommand); v != nil {
		s.toolSecrets(v, join(path, toolCommand), toolCommand, h)
		h.Tools = append(h.Tools, toolCommand)
		return
	}
	if v := f.get(toolEmitEvent); v != nil {
		p := join(path, toolEmitEvent)
		var types []string
		if tf := s.fields(v, p, []string{"types"}, nil); s.targetList(tf, "types", &types) {
			for i, pat := range types {
				if err := triggers.ValidatePattern(pat); err != nil {
					s.errorf(tf.get("types").Content[i], index(join(p, "types"), i), "%s", err)
				}
			}
			h.EmitTypes = append(h.EmitTypes, types...)
		}
		h.Tools = append(h.Tools, toolEmitEvent)
		return
	}
	for _, tool := range runTools {
		v := f.get(tool)
		if v == nil {
			continue
		}
		p := join(path, tool)
		var hooks []string
		if tf := s.fields(v, p, []string{"hooks"}, nil); s.targetList(tf, "hooks", &hooks) {
			for i, name := range hooks {
				if name != engine.AllRunHooks && !hookName.MatchString(name) {
					s.errorf(tf.get("hooks").Content[i], index(join(p, "hooks"), i), "%q is not a valid hook name (or \"*\" for every hook)", name)
				}
			}
			h.RunHooks = append(h.RunHooks, hooks...)
		}
		h.Tools = append(h.Tools, tool)
		return
	}
	for _, pr := range f.keys {
		s.errorf(pr.v, join(path, pr.key), "expected the %s settings, got %s", pr.key, describe(pr.v))
	}
}

// targetList decodes the non-empty list of non-empty strings at key.
func (s *state) targetList(f *fields, key string, dst *[]string) bool {
	n, ok := f.decode(key, dst)
	if n == nil {
		s.add(f.keyLine(key), join(f.path, key), "required: a non-empty list")
		return false
	}
	if !ok {
		return false
	}
	if len(*dst) == 0 {
		s.errorf(n, join(f.path, key), "must not be empty (leave the tool out instead)")
		return false
	}
	for i, v := range *dst {
		if v == "" {
			s.errorf(n.Content[i], index(join(f.path, key), i), "must not be empty")
			return false
		}
	}
	return true
}

// holdsPowerfulTools reports whether tools lists run_command, write_file
// (by name or glob) or a tool of an MCP server.
func holdsPowerfulTools(tools []string) bool {
	for _, t := range tools {
		if strings.Contains(t, ".") {
			return true
		}
		for _, p := range powerfulTools {
			if engine.GrantsTool(t, p) {
				return true
			}
		}
	}
	return false
}
