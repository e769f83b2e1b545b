package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestModelStageEndToEnd drives the real daemon: `hookd serve` with a
// model at a scripted chat-completions server and an MCP server over
// stdio, then `hookd fire --wait`. The model calls a built-in tool and an
// MCP tool, sees their results and answers; `hookd run` prints the
// transcript.
func TestModelStageEndToEnd(t *testing.T) {
	mcpBin := filepath.Join(t.TempDir(), "mcpserver")
	if out, err := exec.Command("go", "build", "-o", mcpBin, "../../mcp/testdata/server").CombinedOutput(); err != nil {
		t.Fatalf("build the MCP test server: %v\n%s", err, out)
	}
	model := llmtest.New(
		llmtest.Calls(
			llmtest.ToolCall{ID: "call_read", Name: "read_file", Args: `{"path":"notes.txt"}`},
			llmtest.ToolCall{ID: "call_echo", Name: "t__echo", Args: `{"text":"from the model"}`},
		),
		llmtest.Reply{Content: "Notes read; all is well.", Usage: &llmtest.Usage{Prompt: 40, Completion: 7, Cached: 8}},
	)
	defer model.Close()

	e := newEnv(t, `
llm:
  model: test-model
  base_url: `+model.BaseURL()+`
mcp_servers:
  t:
    command: [`+mcpBin+`]
    sandbox: {network: false}
`, map[string]string{
		"ask.yaml": `steps:
  - type: shell
    command: echo context
prompt: "Read the notes. {{step_0}}"
tools: [read_file, t.echo]
`,
	})
	e.write("notes.txt", "hello notes\n")
	d := e.serve()

	r := e.must(0, "fire", "ask", "--wait")
	id := runID(t, r)
	// fire --wait shows the model stage as it goes, then the answer.
	for _, want := range []string{"step_0 shell: ok in", "model call 1: 2 tool calls in", "tool read_file: ok in",
		"tool t.echo: ok in", "model call 2: answered in"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("fire --wait's progress lacks %q:\n%s", want, r)
		}
	}
	if !strings.HasSuffix(r.stdout, "\nNotes read; all is well.\n") {
		t.Errorf("fire --wait does not print the answer last on stdout:\n%s", r)
	}
	run := e.getRun(id)
	if run.Status != engine.StatusCompleted || run.Response != "Notes read; all is well." {
		t.Fatalf("run %s: %s %q %q\n%s", id, run.Status, run.Error, run.Response, d.log.String())
	}
	if want := (engine.Tokens{Prompt: 50, Completion: 12, Cached: 8, Known: true}); run.Tokens != want {
		t.Errorf("tokens %+v, want %+v", run.Tokens, want)
	}
	tr, err := agent.DecodeTranscript(run)
	if err != nil || tr == nil || len(tr.Rounds) != 2 {
		t.Fatalf("transcript %v: %s", err, run.ToolCalls)
	}
	calls := tr.Rounds[0].ToolCalls
	if len(calls) != 2 || calls[0].Result != "hello notes\n" || calls[1].Tool != "t.echo" || calls[1].Result != "echo: from the model" {
		t.Errorf("tool calls %+v", calls)
	}

	// The model got both results, answering the calls by their ids.
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	var offered []string
	for _, tl := range reqs[0].Chat.Tools {
		offered = append(offered, tl.Function.Name)
	}
	if strings.Join(offered, ",") != "read_file,t__echo" {
		t.Errorf("tools offered: %v", offered)
	}
	msgs := reqs[1].Chat.Messages
	if len(msgs) != 4 || msgs[0].Role != "user" || !strings.Contains(msgs[0].Content, "Read the notes.") || msgs[2].ToolCallID != "call_read" || msgs[3].ToolCallID != "call_echo" || msgs[3].Content != "echo: from the model" {
		b, _ := json.MarshalIndent(msgs, "", " ")
		t.Errorf("second request's messages:\n%s", b)
	}

	out := e.must(0, "run", id).stdout
	for _, want := range []string{
		"model test-model at " + model.BaseURL(),
		"tools:     read_file, t__echo",
		"model call 1, llmtest-model",
		"tool read_file, id call_read",
		`arguments: {"path":"notes.txt"}`,
		"result: hello notes",
		"tool t__echo (t.echo), id call_echo",
		"result: echo: from the model",
		"model call 2",
		"stopped:   answer after 2 model call(s)",
		"tokens:    50 prompt + 12 completion = 62 (8 cached)",
		"answer:\n    Notes read; all is well.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("`hookd run %s` lacks %q:\n%s", id, want, out)
		}
	}

	out = e.must(0, "tools").stdout
	for _, want := range []string{"  read_file\n", "  run_command\n", "MCP server t", "  t.echo  (the model calls it t__echo)", `"required":["path"]`} {
		if !strings.Contains(out, want) {
			t.Errorf("`hookd tools` lacks %q:\n%s", want, out)
		}
	}
}

// TestModelStageFailures: a model error fails the run with the server's
// message, and a hook listing an unknown tool, or a tool of an MCP server
// hookd.yaml does not declare, does not load: validate names its file and
// line, and the model is never called for it.
func TestModelStageFailures(t *testing.T) {
	model := llmtest.New(llmtest.Fail(400, "model 'nope' does not exist"))
	defer model.Close()
	e := newEnv(t, "llm: {model: nope, base_url: "+model.BaseURL()+"}\n", map[string]string{
		"bad-model.yaml": "prompt: hi\n",
		"bad-tool.yaml":  "prompt: hi\ntools: [read_fiel]\n",
		"bad-mcp.yaml":   "prompt: hi\ntools: [read_file, github.search_issues]\n",
	})
	r := e.must(1, "fire", "bad-model", "--wait")
	if run := e.getRun(runID(t, r)); run.Status != engine.StatusFailed || !strings.Contains(run.Error, "HTTP 400: model 'nope' does not exist") {
		t.Errorf("bad-model: %s %q", run.Status, run.Error)
	}
	r = e.must(1, "validate")
	for _, want := range []string{
		`hooks.d/bad-tool.yaml:2: tools[0]: unknown tool "read_fiel"; did you mean read_file?`,
		`hooks.d/bad-mcp.yaml:2: tools[1]: "github.search_issues" names a tool of MCP server "github", but hookd.yaml declares no mcp_servers`,
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("validate does not say %s:\n%s", want, r)
		}
	}
	for _, hook := range []string{"bad-tool", "bad-mcp"} {
		if r := e.run("fire", hook, "--wait"); r.code == 0 {
			t.Errorf("fire %s: a hook that did not load ran:\n%s", hook, r)
		}
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1", n)
	}
}
