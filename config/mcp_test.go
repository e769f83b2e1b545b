package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

func TestLoadDaemonMCPServers(t *testing.T) {
	t.Parallel()
	src := `
mcp_servers:
  github:
    command: [github-mcp-server, stdio]
    env: {GITHUB_PERSONAL_ACCESS_TOKEN: "${GITHUB_TOKEN}"}
  files:
    command: mcp-files
    args: [--root, /srv]
    dir: tools
    call_timeout: 10s
  search:
    url: https://mcp.example/mcp
    headers: {Authorization: "Bearer ${SEARCH_KEY}"}
    start_timeout: 5s
`
	d, err := LoadDaemon(strings.NewReader(src), "/srv/hookd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []MCPServer{
		{Name: "github", Line: 3, Command: []string{"github-mcp-server", "stdio"}, Dir: "/srv",
			Env:          map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"},
			StartTimeout: DefaultMCPStartTimeout, CallTimeout: DefaultMCPCallTimeout},
		{Name: "files", Line: 6, Command: []string{"mcp-files", "--root", "/srv"}, Dir: "/srv/tools",
			StartTimeout: DefaultMCPStartTimeout, CallTimeout: 10 * time.Second},
		{Name: "search", Line: 11, URL: "https://mcp.example/mcp", Dir: "/srv",
			Headers:      map[string]string{"Authorization": "Bearer ${SEARCH_KEY}"},
			StartTimeout: 5 * time.Second, CallTimeout: DefaultMCPCallTimeout},
	}
	if !reflect.DeepEqual(d.MCPServers, want) {
		t.Errorf("\n got %+v\nwant %+v", d.MCPServers, want)
	}
	// Hooks load knowing the servers' names, to check their tools: entries.
	var names []string
	for _, m := range want {
		names = append(names, m.Name)
	}
	if got := d.HookOptions().MCPServers; !reflect.DeepEqual(got, names) {
		t.Errorf("HookOptions().MCPServers %q, want %q", got, names)
	}
}

func TestLoadDaemonMCPServerErrors(t *testing.T) {
	t.Parallel()
	src := `mcp_servers:
  a.b: {command: x}
  empty:
  both: {command: x, url: "http://h/mcp"}
  neither: {dir: x}
  badurl: {url: "ftp://h"}
  hdr: {command: x, headers: {A: b}}
  typo: {comand: x}
`
	_, err := LoadDaemon(strings.NewReader(src), "hookd.yaml")
	want := `hookd.yaml:2: mcp_servers.a.b: "a.b" is not a valid server name (use up to 32 letters, digits and '-')
hookd.yaml:3: mcp_servers.empty: needs command (a stdio server) or url (a streamable-HTTP server)
hookd.yaml:4: mcp_servers.both.url: give command (a stdio server) or url (a streamable-HTTP server), not both
hookd.yaml:5: mcp_servers.neither: needs command (a stdio server) or url (a streamable-HTTP server)
hookd.yaml:6: mcp_servers.badurl.url: "ftp://h" is not an http(s) URL
hookd.yaml:7: mcp_servers.hdr.headers: headers apply to url servers, not to command
hookd.yaml:8: mcp_servers.typo.comand: unknown field; did you mean command?
hookd.yaml:8: mcp_servers.typo: needs command (a stdio server) or url (a streamable-HTTP server)`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}

func TestParseHookLLMToolSettings(t *testing.T) {
	t.Parallel()
	src := `name: x
prompt: hi
llm: {model: 4, tool_choice: required, tool_choice_rounds: all, parallel_tool_calls: false}
tools: [read_file]
`
	h, err := ParseHook(strings.NewReader(src), "x.yaml", Options{Root: "/srv"})
	if err != nil {
		t.Fatal(err)
	}
	if h.LLM.Model != "4" || h.LLM.ToolChoice != "required" || h.LLM.ToolChoiceRounds != engine.ToolChoiceAll || h.LLM.ParallelToolCalls == nil || *h.LLM.ParallelToolCalls {
		t.Errorf("got %+v", h.LLM)
	}
	h, err = ParseHook(strings.NewReader("name: x\nprompt: hi\n"), "x.yaml", Options{Root: "/srv"})
	if err != nil {
		t.Fatal(err)
	}
	if h.LLM.ToolChoice != "" || h.LLM.ParallelToolCalls != nil {
		t.Errorf("unset fields must stay unset: %+v", h.LLM)
	}
	_, err = ParseHook(strings.NewReader("name: x\nprompt: hi\nllm: {tool_choice: required, tool_choice_rounds: every}\n"), "x.yaml", Options{})
	if err == nil || !strings.Contains(err.Error(), `x.yaml:3: llm.tool_choice_rounds: must be first or all (got "every")`) {
		t.Errorf("got %v", err)
	}
	_, err = ParseHook(strings.NewReader("name: x\nprompt: hi\nllm: {tool_choice: \"a b\"}\n"), "x.yaml", Options{})
	if err == nil || !strings.Contains(err.Error(), `x.yaml:3: llm.tool_choice: must be auto, none, required or a tool name (got "a b")`) {
		t.Errorf("got %v", err)
	}
}
