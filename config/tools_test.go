package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	_ "github.com/hookd/hookd/tools" // the built-in tools hooks list
)

// TestToolTargets: fire_hook and emit_event are listed with the hooks and
// event types they may reach; accept_from_tools defaults to false for a
// hook that holds run_command, write_file or MCP tools.
func TestToolTargets(t *testing.T) {
	t.Parallel()
	src := `prompt: hi
tools:
  - read_file
  - fire_hook: {hooks: [deploy-check, report]}
  - emit_event:
      types: [report.*, audit.done]
`
	h, err := ParseHook(strings.NewReader(src), "x.yaml", Options{DefaultName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Tools, []string{"read_file", "fire_hook", "emit_event"}) ||
		!slices.Equal(h.FireHooks, []string{"deploy-check", "report"}) ||
		!slices.Equal(h.EmitTypes, []string{"report.*", "audit.done"}) {
		t.Errorf("tools %v, fire %v, emit %v", h.Tools, h.FireHooks, h.EmitTypes)
	}
	if !h.AcceptFromTools {
		t.Error("a hook without run_command or write_file refuses tool triggers by default")
	}

	// The run-record tools read the hook's own runs, and those of the
	// hooks listed with any of them.
	h, err = ParseHook(strings.NewReader("prompt: hi\ntools:\n  - get_run\n  - search_runs: {hooks: [ci, '*']}\n  - list_runs: {hooks: [b]}\n"), "x.yaml", Options{DefaultName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Tools, []string{"get_run", "search_runs", "list_runs"}) || !slices.Equal(h.RunHooks, []string{"ci", "*", "b"}) {
		t.Errorf("tools %v, run hooks %v", h.Tools, h.RunHooks)
	}

	for _, tc := range []struct {
		tools  string
		extra  string
		accept bool
	}{
		{"[run_command]", "", false},
		{"[write_file, read_file]", "", false},
		{"['*']", "", false},
		{"['run_*']", "", false},
		{"['run_comman?']", "", false},
		{"['[r]un_command']", "", false},
		{"['run\\_command']", "", false}, // a name before, unknown
		{"[github.search]", "", false},
		{"[read_file, http_get]", "", true},
		{"[run_command]", "accept_from_tools: true\n", true},
		{"[read_file]", "accept_from_tools: false\n", false},
	} {
		h, err := ParseHook(strings.NewReader("prompt: hi\nwrite_roots: []\ntools: "+tc.tools+"\n"+tc.extra), "x.yaml", Options{DefaultName: "x"})
		if err != nil {
			t.Fatalf("%s: %v", tc.tools, err)
		}
		if h.AcceptFromTools != tc.accept {
			t.Errorf("tools %s %s: accept_from_tools %v; want %v", tc.tools, tc.extra, h.AcceptFromTools, tc.accept)
		}
	}
}

func TestToolTargetErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ tools, want string }{
		{"[fire_hook]", "x.yaml:2: tools[0]: fire_hook needs the hooks it may fire: write `- fire_hook: {hooks: [NAME, ...]}`"},
		{"[read_file, emit_event]", "x.yaml:2: tools[1]: emit_event needs the event types it may publish"},
		{"\n  - fire_hook: {}", "x.yaml:3: tools[0].fire_hook.hooks: required: a non-empty list"},
		{"\n  - fire_hook: {hooks: []}", "x.yaml:3: tools[0].fire_hook.hooks: must not be empty"},
		{"\n  - fire_hook: {hook: [a]}", "x.yaml:3: tools[0].fire_hook.hook: unknown field; did you mean hooks?"},
		{"\n  - fire_hook: {hooks: [a b]}", `x.yaml:3: tools[0].fire_hook.hooks[0]: "a b" is not a valid hook name`},
		{"\n  - emit_event: {types: [report.x*]}", "x.yaml:3: tools[0].emit_event.types[0]: event pattern"},
		{"\n  - emit_event: {types: report.*}", "x.yaml:3: tools[0].emit_event.types: expected a list"},
		{"\n  - emit_event:", "x.yaml:3: tools[0].emit_event: expected the emit_event settings"},
		{"\n  - read_file: {x: 1}", "x.yaml:3: tools[0].read_file: only fire_hook, emit_event, list_runs, get_run, search_runs and run_command take settings; list read_file as a plain name"},
		{"\n  - search_runs: {hooks: [a b]}", `x.yaml:3: tools[0].search_runs.hooks[0]: "a b" is not a valid hook name (or "*" for every hook)`},
		{"\n  - get_run: {hooks: []}", "x.yaml:3: tools[0].get_run.hooks: must not be empty"},
		{"\n  - list_runs:", "x.yaml:3: tools[0].list_runs: expected the list_runs settings"},
		{"\n  - {fire_hook: {hooks: [a]}, emit_event: {types: [b]}}", "x.yaml:3: tools[0]: one tool per list entry"},
		{"[[read_file]]", "x.yaml:2: tools[0]: expected a tool name, or a mapping"},
		{"read_file", "x.yaml:2: tools: expected a list"},
		{"['']", "x.yaml:2: tools[0]: must not be empty"},
	} {
		_, err := ParseHook(strings.NewReader("prompt: hi\ntools: "+tc.tools+"\naccept_from_tools: maybe\n"), "x.yaml", Options{DefaultName: "x"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("tools: %s\n got: %v\nwant: %s", tc.tools, err, tc.want)
		}
		if err == nil || !strings.Contains(err.Error(), "accept_from_tools") {
			t.Errorf("tools: %s: a bad accept_from_tools is not reported: %v", tc.tools, err)
		}
	}
}

// TestToolsResolvedAtLoad: a built-in tool's name or glob is resolved when
// the hook loads, and a SERVER.TOOL entry must name a server of
// hookd.yaml's mcp_servers (its tools are listed only when a run starts
// the server). Without hookd.yaml (MCPServers nil) the server is not
// checked.
func TestToolsResolvedAtLoad(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tools string
		mcp   []string
		want  string // "" for none
	}{
		{`[read_file, "*_files", "list_*"]`, []string{}, ""},
		{`[github.search_issues]`, nil, ""},
		{`[github.search_issues, "github.*", "jira.get_*"]`, []string{"github", "jira"}, ""},
		{`[read_fiel]`, nil, `x.yaml:2: tools[0]: unknown tool "read_fiel"; did you mean read_file?`},
		{`[read_file, "gh_*"]`, nil, `x.yaml:2: tools[1]: "gh_*" matches no built-in tool (built-in: `},
		{`["[read"]`, nil, `x.yaml:2: tools[0]: "[read" is not a valid pattern`},
		{`[github.search_issues]`, []string{}, `x.yaml:2: tools[0]: "github.search_issues" names a tool of MCP server "github", but hookd.yaml declares no mcp_servers`},
		{`["gihub.*"]`, []string{"github", "jira"}, `x.yaml:2: tools[0]: "gihub.*" names a tool of MCP server "gihub", which hookd.yaml does not declare; did you mean github? (mcp_servers: github, jira)`},
		{`[github.]`, []string{"github"}, `x.yaml:2: tools[0]: "github.": want SERVER.TOOL or SERVER.*`},
		{`["github.[x"]`, []string{"github"}, `x.yaml:2: tools[0]: "github.[x": "[x" is not a valid pattern`},
	}
	for _, c := range cases {
		h, err := ParseHook(strings.NewReader("prompt: hi\ntools: "+c.tools+"\n"), "x.yaml", Options{DefaultName: "x", MCPServers: c.mcp})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("tools %s, mcp_servers %q: %v", c.tools, c.mcp, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("tools %s, mcp_servers %q: got %v, want %s", c.tools, c.mcp, err, c.want)
		case c.want == "" && len(h.Tools) == 0:
			t.Errorf("tools %s: none kept", c.tools)
		}
	}
}

// TestToolsCappedAtLoad: a hook whose tools: resolve, as far as they are
// known at load (built-in tools, MCP tools named one by one), to more
// than engine.MaxTools is a load error naming the file, line and field;
// 128 loads, and an MCP pattern counts for nothing until a run resolves it.
func TestToolsCappedAtLoad(t *testing.T) {
	t.Parallel()
	names := func(n int) string {
		var b strings.Builder
		b.WriteString("[\"*\"")
		for i := range n {
			fmt.Fprintf(&b, ", gh.tool_%d", i)
		}
		return b.String() + ", \"gh.**\"]"
	}
	builtin := len(engine.ToolNames())
	for _, c := range []struct {
		tools string
		want  string
	}{
		{names(engine.MaxTools - builtin), ""},
		{names(engine.MaxTools - builtin + 1), fmt.Sprintf("x.yaml:2: tools: lists %d tools; a model takes at most 128 (the OpenAI API's limit)", engine.MaxTools+1)},
	} {
		_, err := ParseHook(strings.NewReader("prompt: hi\ntools: "+c.tools+"\nwrite_roots: []\n"), "x.yaml", Options{DefaultName: "x", MCPServers: []string{"gh"}})
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%d tools: got %v, want %q", strings.Count(c.tools, ",")+1, err, c.want)
		}
	}
}

// TestToolChoiceCheckedAtLoad: a hook's llm.tool_choice names one of its
// tools, or a mode with tools to apply to, when the hook loads.
func TestToolChoiceCheckedAtLoad(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tools, choice string
		want          string // "" for none
	}{
		{`[read_file]`, `read_file`, ""},
		{`["*_file"]`, `write_file`, ""},
		{`[read_file]`, `required`, ""},
		{`[github.search_issues]`, `github.search_issues`, ""},
		{`["github.*"]`, `github__search_issues`, ""},
		{`[read_file, list_files]`, `write_file`, `x.yaml:3: llm.tool_choice: "write_file" is not one of the hook's tools (read_file, list_files)`},
		{`["*_file"]`, `some_file`, `x.yaml:3: llm.tool_choice: "some_file" is not one of the hook's tools (*_file)`},
		{`[github.search_issues]`, `github.create_issue`, `x.yaml:3: llm.tool_choice: "github.create_issue" is not one of the hook's tools`},
		{`[]`, `auto`, `x.yaml:3: llm.tool_choice: is auto, but the hook lists no tools`},
	}
	for _, c := range cases {
		src := "prompt: hi\ntools: " + c.tools + "\nllm: {tool_choice: " + c.choice + "}\nwrite_roots: [out]\n"
		_, err := ParseHook(strings.NewReader(src), "x.yaml", Options{DefaultName: "x"})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("tools %s, tool_choice %s: %v", c.tools, c.choice, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("tools %s, tool_choice %s: got %v, want %s", c.tools, c.choice, err, c.want)
		}
	}
}
