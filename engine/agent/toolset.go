package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/hookd/hookd/engine"
)

// ToolServers resolves the tools of external (MCP) servers that a hook
// lists as SERVER.TOOL or SERVER.* in its tools.
type ToolServers interface {
	// Resolve returns the tools matching entry, "SERVER.PATTERN" where
	// PATTERN is a tool name or a glob, starting the server if it is not
	// running. An unknown server, a server that does not start, or a
	// plain name that matches no tool is an error. Each tool's Name is
	// what the model calls it; a tool that also has a Qualified() string
	// method is recorded under that name (SERVER.TOOL).
	Resolve(ctx context.Context, entry string) ([]engine.Tool, error)
}

// serverError is a hook's MCP server that did not start, or did not
// list its tools, or has not the tool the hook names: the run fails with
// engine.CauseMCPServer, before any model call.
type serverError struct{ err error }

func (e *serverError) Error() string { return e.err.Error() }
func (e *serverError) Unwrap() error { return e.err }

// boundTool is one tool offered to the model in a run.
type boundTool struct {
	tool      engine.Tool
	qualified string // as hooks list it
	server    string // the MCP server that serves it, "" for a built-in tool
	schema    *Schema
}

// qualified names the tool the model called by name as hooks list it, or
// "" when the hook does not offer it.
func (ts *toolset) qualified(name string) string {
	if bt := ts.byName[name]; bt != nil {
		return bt.qualified
	}
	return ""
}

// toolset is what one run's model may call, by the names it sees.
type toolset struct {
	byName map[string]*boundTool
	defs   []ToolDef
	names  []string
}

// schemas caches compiled schemas by their text.
var schemas sync.Map // string -> *Schema

func compiled(raw json.RawMessage) (*Schema, error) {
	if s, ok := schemas.Load(string(raw)); ok {
		return s.(*Schema), nil
	}
	s, err := CompileSchema(raw)
	if err != nil {
		return nil, err
	}
	schemas.Store(string(raw), s)
	return s, nil
}

// qualifiedName is how hooks list t.
func qualifiedName(t engine.Tool) string {
	if q, ok := t.(interface{ Qualified() string }); ok {
		return q.Qualified()
	}
	return t.Name()
}

// resolveTools builds the toolset of a hook from its allowlist: exactly
// the tools it names, none when it names none.
// More than engine.MaxTools is an error naming the hook's file and the
// entry that went past it, found before the model is called.
func (a *Agent) resolveTools(ctx context.Context, h *engine.Hook) (*toolset, error) {
	allow := h.Tools
	ts := &toolset{byName: map[string]*boundTool{}}
	if len(allow) == 0 {
		return ts, nil
	}
	add := func(entry, server string, t engine.Tool) error {
		name := t.Name()
		if !engine.ToolNamePattern.MatchString(name) {
			return fmt.Errorf("tools: %s: tool name %q is not valid for the chat-completions API", entry, name)
		}
		if prev, dup := ts.byName[name]; dup {
			if prev.tool == t || prev.qualified == qualifiedName(t) {
				return nil // listed twice, or matched by two patterns
			}
			return fmt.Errorf("tools: %s: two tools are named %q for the model (%s and %s)", entry, name, prev.qualified, qualifiedName(t))
		}
		if len(ts.names) == engine.MaxTools {
			where := "tools"
			if h.Source.File != "" {
				where = h.Source.File + ": tools"
			}
			return fmt.Errorf("%s: %s brings the hook's tools past %d, the most a model takes (the OpenAI API's limit); "+
				"name the tools the hook needs instead of a pattern", where, entry, engine.MaxTools)
		}
		raw := t.Schema()
		s, err := compiled(raw)
		if err != nil {
			return fmt.Errorf("tools: %s: %s: %w", entry, qualifiedName(t), err)
		}
		if len(raw) == 0 {
			raw = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		bt := &boundTool{tool: t, qualified: qualifiedName(t), server: server, schema: s}
		ts.byName[name] = bt
		ts.names = append(ts.names, name)
		ts.defs = append(ts.defs, ToolDef{Name: name, Description: t.Description(), Parameters: raw})
		return nil
	}
	for i, entry := range allow {
		if server, _, ok := strings.Cut(entry, "."); ok {
			if a.opts.Servers == nil {
				return nil, fmt.Errorf("tools[%d]: %q names a tool of MCP server %q, but hookd.yaml declares no mcp_servers", i, entry, server)
			}
			found, err := a.opts.Servers.Resolve(ctx, entry)
			if err != nil {
				return nil, &serverError{fmt.Errorf("tools[%d]: %s: %w", i, entry, err)}
			}
			for _, t := range found {
				if err := add(entry, server, t); err != nil {
					return nil, err
				}
			}
			continue
		}
		if engine.IsToolGlob(entry) {
			n := 0
			for _, t := range engine.Tools() {
				if engine.GrantsTool(entry, t.Name()) {
					n++
					if err := add(entry, "", t); err != nil {
						return nil, err
					}
				}
			}
			if n == 0 {
				return nil, fmt.Errorf("tools[%d]: %q matches no built-in tool (built-in: %s)", i, entry, strings.Join(engine.ToolNames(), ", "))
			}
			continue
		}
		t, ok := engine.LookupTool(entry)
		if !ok {
			return nil, fmt.Errorf("tools[%d]: unknown tool %q (built-in: %s; MCP tools are listed as SERVER.TOOL)", i, entry, strings.Join(engine.ToolNames(), ", "))
		}
		if err := add(entry, "", t); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

// toolChoice turns the hook's tool_choice into a request's: a mode
// (auto, none, required), or the name the model knows the tool it must
// call by.
func (ts *toolset) toolChoice(choice string) (mode, force string, err error) {
	switch choice {
	case "":
		return "", "", nil
	case "auto", "none", "required":
		if len(ts.defs) == 0 {
			return "", "", fmt.Errorf("llm.tool_choice is %s, but the hook lists no tools", choice)
		}
		return choice, "", nil
	}
	if _, ok := ts.byName[choice]; ok {
		return "", choice, nil
	}
	for name, bt := range ts.byName {
		if bt.qualified == choice {
			return "", name, nil
		}
	}
	return "", "", fmt.Errorf("llm.tool_choice %q is not one of the hook's tools (%s)", choice, strings.Join(ts.names, ", "))
}
