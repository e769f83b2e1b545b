package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/daemon"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/mcp"

	_ "github.com/hookd/hookd/tools" // registers the built-in tools
)

// toolInfo describes one tool for `hookd tools`.
type toolInfo struct {
	Name        string          `json:"name"`       // as hooks list it
	ModelName   string          `json:"model_name"` // as the model calls it
	Source      string          `json:"source"`     // builtin, or mcp:SERVER
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

// serverError is an MCP server `hookd tools` could not list.
type serverError struct {
	Server string `json:"server"`
	Error  string `json:"error"`
}

func cmdTools(c *cli, args []string) int {
	fs := c.flags()
	asJSON := fs.Bool("json", false, "print JSON")
	builtin := fs.Bool("builtin", false, "only the built-in tools: do not start MCP servers")
	_, d, code, ok := c.setup(fs, args, 0, 0)
	if !ok {
		return code
	}
	var infos []toolInfo
	for _, t := range engine.Tools() {
		infos = append(infos, toolInfo{Name: t.Name(), ModelName: t.Name(), Source: "builtin", Description: t.Description(), Schema: t.Schema()})
	}
	var failed []serverError
	if !*builtin && len(d.MCPServers) > 0 {
		mgr, err := mcp.NewManager(daemon.MCPConfigs(d), mcp.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return c.errorf("%v", err)
		}
		defer mgr.Close()
		for _, name := range mgr.Names() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			tools, err := mgr.Tools(ctx, name)
			cancel()
			if err != nil {
				failed = append(failed, serverError{name, err.Error()})
				continue
			}
			for _, t := range tools {
				infos = append(infos, toolInfo{Name: t.Qualified(), ModelName: t.Name(), Source: "mcp:" + name, Description: t.Description(), Schema: t.Schema()})
			}
		}
	}
	if *asJSON {
		code := c.printJSON(struct {
			Tools  []toolInfo    `json:"tools"`
			Failed []serverError `json:"failed,omitempty"`
		}{infos, failed})
		if len(failed) > 0 && code == exitOK {
			return exitError
		}
		return code
	}
	w := c.stdout
	source := ""
	for _, t := range infos {
		if t.Source != source {
			source = t.Source
			if source == "builtin" {
				fmt.Fprintln(w, "Built-in tools (list them by name in a hook's tools:)")
			} else {
				srv := strings.TrimPrefix(source, "mcp:")
				fmt.Fprintf(w, "\nMCP server %s (list its tools as %s.TOOL or %s.*)\n", srv, srv, srv)
			}
		}
		fmt.Fprintf(w, "\n  %s", t.Name)
		if t.ModelName != t.Name {
			fmt.Fprintf(w, "  (the model calls it %s)", t.ModelName)
		}
		fmt.Fprintln(w)
		if t.Description != "" {
			for _, line := range wrap(t.Description, 76) {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
		if a := argSummary(t.Schema); a != "" {
			fmt.Fprintf(w, "    arguments: %s\n", a)
		}
		var buf bytes.Buffer
		if json.Compact(&buf, t.Schema) == nil {
			fmt.Fprintf(w, "    schema: %s\n", buf.String())
		}
	}
	for _, f := range failed {
		fmt.Fprintf(w, "\nMCP server %s: not available: %s\n", f.Server, f.Error)
	}
	if len(d.MCPServers) == 0 && !*builtin {
		fmt.Fprintf(w, "\nNo MCP servers: declare them under mcp_servers: in %s.\n", settingsName(d))
	}
	if len(failed) > 0 {
		return exitError
	}
	return exitOK
}

func settingsName(d *config.Daemon) string {
	if d.File != "" {
		return d.File
	}
	return "hookd.yaml"
}

// argSummary lists a schema's properties: "path (string, required), offset (integer)".
func argSummary(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type any   `json:"type"`
			Enum []any `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return ""
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if req[names[i]] != req[names[j]] {
			return req[names[i]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		p := s.Properties[n]
		var attrs []string
		switch t := p.Type.(type) {
		case string:
			attrs = append(attrs, t)
		case []any:
			var ts []string
			for _, x := range t {
				ts = append(ts, fmt.Sprint(x))
			}
			attrs = append(attrs, strings.Join(ts, "|"))
		}
		if len(p.Enum) > 0 {
			var es []string
			for _, e := range p.Enum {
				es = append(es, fmt.Sprint(e))
			}
			attrs = append(attrs, "one of "+strings.Join(es, "|"))
		}
		if req[n] {
			attrs = append(attrs, "required")
		}
		parts[i] = n
		if len(attrs) > 0 {
			parts[i] += " (" + strings.Join(attrs, ", ") + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// wrap breaks text into lines of at most width characters.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
