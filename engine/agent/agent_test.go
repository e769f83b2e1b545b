package agent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/agenttest"
	"github.com/hookd/hookd/llm/llmtest"
)

func TestPlainAnswer(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "All good.", Usage: &llmtest.Usage{Prompt: 12, Completion: 3, Cached: 4}})
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.System = "Be brief." })
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	if run.Response != "All good." {
		t.Errorf("response %q", run.Response)
	}
	if want := (engine.Tokens{Prompt: 12, Completion: 3, Cached: 4, Known: true}); run.Tokens != want {
		t.Errorf("tokens %+v, want %+v", run.Tokens, want)
	}
	if tr.Stop != "answer" || len(tr.Rounds) != 1 || tr.Answer != "All good." || tr.Model != "test-model" {
		t.Errorf("transcript %+v", tr)
	}
	c := tr.Rounds[0].Call
	if c.FinishReason != "stop" || c.Model != "llmtest-model" || c.Usage == nil || c.Usage.Cached != 4 || c.Latency <= 0 {
		t.Errorf("model call %+v", c)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	msgs := reqs[0].Chat.Messages
	if len(msgs) != 2 || msgs[0].Role != "system" || msgs[0].Content != "Be brief." || msgs[1].Role != "user" || msgs[1].Content != "What now?" {
		t.Errorf("messages %+v", msgs)
	}
	for _, k := range []string{"tools", "tool_choice", "parallel_tool_calls"} {
		if _, ok := reqs[0].Fields[k]; ok {
			t.Errorf("request has %s, but the hook sets none: %s", k, reqs[0].Raw)
		}
	}
	if reqs[0].Chat.Model != "test-model" {
		t.Errorf("model %q", reqs[0].Chat.Model)
	}
}

func TestToolCallThenAnswer(t *testing.T) {
	srv := llmtest.New(
		llmtest.Calls(llmtest.ToolCall{ID: "call_1", Name: "test_echo", Args: `{"text":"hi"}`}),
		llmtest.Answer("done"),
	)
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo"} })
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	if run.Response != "done" || len(tr.Rounds) != 2 {
		t.Fatalf("response %q, %d rounds", run.Response, len(tr.Rounds))
	}
	if want := (engine.Tokens{Prompt: 20, Completion: 10, Known: true}); run.Tokens != want {
		t.Errorf("tokens %+v, want %+v", run.Tokens, want)
	}
	calls := tr.Rounds[0].ToolCalls
	if len(calls) != 1 {
		t.Fatalf("tool calls %+v", calls)
	}
	c := calls[0]
	if c.ID != "call_1" || c.Name != "test_echo" || c.Tool != "test_echo" || c.Arguments != `{"text":"hi"}` ||
		c.Result != "echo: hi" || c.Error != "" || c.IDGenerated {
		t.Errorf("tool call %+v", c)
	}
	if tr.Rounds[0].Call.FinishReason != "tool_calls" {
		t.Errorf("finish reason %q", tr.Rounds[0].Call.FinishReason)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	// The model was offered exactly the allowlist, with its schema.
	tools := reqs[0].Chat.Tools
	if len(tools) != 1 || tools[0].Function.Name != "test_echo" || !strings.Contains(string(reqs[0].Raw), `"required":["text"]`) {
		t.Errorf("tools offered: %s", reqs[0].Raw)
	}
	msgs := reqs[1].Chat.Messages
	if len(msgs) != 3 {
		t.Fatalf("second request messages %+v", msgs)
	}
	if a := msgs[1]; a.Role != "assistant" || len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != "call_1" {
		t.Errorf("assistant message %+v", a)
	}
	if m := msgs[2]; m.Role != "tool" || m.ToolCallID != "call_1" || m.Content != "echo: hi" {
		t.Errorf("tool message %+v", m)
	}
}

func TestParallelToolCalls(t *testing.T) {
	srv := llmtest.New(
		llmtest.Calls(
			llmtest.ToolCall{ID: "a", Name: "test_echo", Args: `{"text":"one"}`},
			llmtest.ToolCall{ID: "b", Name: "test_echo", Args: `{"text":"two"}`},
		),
		llmtest.Answer("both done"),
	)
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_*"} })
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	calls := tr.Rounds[0].ToolCalls
	if len(calls) != 2 || calls[0].ID != "a" || calls[0].Result != "echo: one" || calls[1].ID != "b" || calls[1].Result != "echo: two" {
		t.Fatalf("tool calls %+v", calls)
	}
	msgs := srv.Requests()[1].Chat.Messages
	if len(msgs) != 4 || msgs[2].ToolCallID != "a" || msgs[2].Content != "echo: one" || msgs[3].ToolCallID != "b" || msgs[3].Content != "echo: two" {
		t.Errorf("tool messages %+v", msgs)
	}
	// A glob in the allowlist offers every tool it matches.
	if got := strings.Join(tr.Tools, ","); got != "test_echo,test_fail,test_secret" {
		t.Errorf("tools offered %s", got)
	}
}

func TestUnknownToolGoesBackToTheModel(t *testing.T) {
	srv := llmtest.New(
		llmtest.Calls(llmtest.ToolCall{ID: "x", Name: "rm_rf", Args: `{}`}),
		llmtest.Answer("sorry"),
	)
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo"} })
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	c := tr.Rounds[0].ToolCalls[0]
	if !strings.Contains(c.Error, `unknown tool "rm_rf"; the tools are: test_echo`) {
		t.Errorf("record %+v", c)
	}
	m := srv.Requests()[1].Chat.Messages[2]
	if m.ToolCallID != "x" || !strings.HasPrefix(m.Content, "error: unknown tool") {
		t.Errorf("tool message %+v", m)
	}
}

func TestInvalidArguments(t *testing.T) {
	srv := llmtest.New(
		llmtest.Calls(
			llmtest.ToolCall{ID: "1", Name: "test_echo", Args: `{"text": "unterminated`},
			llmtest.ToolCall{ID: "2", Name: "test_echo", Args: `{"txt":"hi"}`},
			llmtest.ToolCall{ID: "3", Name: "test_echo", Args: `{"text":"hi","n":1.5}`},
			llmtest.ToolCall{ID: "4", Name: "test_echo", Args: `[1]`},
			llmtest.ToolCall{ID: "5", Name: "test_fail", Args: ``},
		),
		llmtest.Answer("ok"),
	)
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo", "test_fail"} })
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	want := []string{
		"arguments are not valid JSON",
		`arguments do not match the tool's schema: unknown field "txt" (the schema allows no others)`,
		`arguments do not match the tool's schema: n: must be an integer (got 1.5)`,
		"arguments: want an object, got a list",
		"tool test_fail panicked: boom",
	}
	calls := tr.Rounds[0].ToolCalls
	msgs := srv.Requests()[1].Chat.Messages[2:]
	for i, w := range want {
		if !strings.Contains(calls[i].Error, w) {
			t.Errorf("call %d: error %q, want %q", i+1, calls[i].Error, w)
		}
		if !strings.HasPrefix(msgs[i].Content, "error: ") || !strings.Contains(msgs[i].Content, w) {
			t.Errorf("call %d: tool message %q", i+1, msgs[i].Content)
		}
	}
}

// stallTimeout is the run timeout of a stalled call: the time the test
// waits, long enough for a loaded machine to send the request in.
const stallTimeout = 2 * time.Second

func TestStallPastTheRunTimeout(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Stall: true})
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Timeout = stallTimeout })
	agenttest.WantStatus(t, run, engine.StatusFailed, "timeout: the run exceeded its 2s timeout")
	if run.Reason != "timeout" || tr.Stop != "timeout" || len(tr.Rounds) != 1 {
		t.Errorf("reason %q, transcript %+v", run.Reason, tr)
	}
}

func TestToolCallIDMissing(t *testing.T) {
	srv := llmtest.New(
		llmtest.Calls(
			llmtest.ToolCall{Name: "test_echo", Args: `{"text":"a"}`},
			llmtest.ToolCall{Name: "test_echo", Args: `{"text":"b"}`},
		),
		llmtest.Answer("ok"),
	)
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo"} })
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	calls := tr.Rounds[0].ToolCalls
	if !calls[0].IDGenerated || !strings.HasPrefix(calls[0].ID, "call_") || calls[0].ID == calls[1].ID {
		t.Fatalf("ids %+v", calls)
	}
	msgs := srv.Requests()[1].Chat.Messages
	a := msgs[1]
	for i := range 2 {
		if a.ToolCalls[i].ID != calls[i].ID || msgs[2+i].ToolCallID != calls[i].ID {
			t.Errorf("call %d: assistant id %q, tool message id %q, record %q", i, a.ToolCalls[i].ID, msgs[2+i].ToolCallID, calls[i].ID)
		}
	}
}

func TestMaxRounds(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "again", Name: "test_echo", Args: `{"text":"more"}`}}, Repeat: true})
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo"}; h.LLM.MaxRounds = 3 })
	agenttest.WantStatus(t, run, engine.StatusFailed, "max_rounds: the model was still calling tools after 3 model calls (llm.max_rounds is 3)")
	if len(srv.Requests()) != 3 || len(tr.Rounds) != 3 || tr.Stop != "max_rounds" {
		t.Fatalf("%d requests, %d rounds, stop %q", len(srv.Requests()), len(tr.Rounds), tr.Stop)
	}
	if last := tr.Rounds[2].ToolCalls; len(last) != 1 || last[0].Error != "not run: max_rounds reached" {
		t.Errorf("last round %+v", last)
	}
	if want := (engine.Tokens{Prompt: 30, Completion: 15, Known: true}); run.Tokens != want {
		t.Errorf("tokens %+v", run.Tokens)
	}
}

func TestMaxRoundsDefault(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "x", Name: "test_echo", Args: `{"text":"more"}`}}, Repeat: true})
	run, _, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo"} })
	agenttest.WantStatus(t, run, engine.StatusFailed, "after 10 model calls")
}

func TestTokenBudget(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{
		ToolCalls: []llmtest.ToolCall{{ID: "x", Name: "test_echo", Args: `{"text":"more"}`}},
		Usage:     &llmtest.Usage{Prompt: 30, Completion: 20}, Repeat: true,
	})
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo"}; h.Budget.MaxTokensPerRun = 80 })
	agenttest.WantStatus(t, run, engine.StatusFailed, "budget: the run used 100 tokens, over its max_tokens_per_run of 80")
	if len(srv.Requests()) != 2 || tr.Stop != "budget" {
		t.Errorf("%d requests, stop %q", len(srv.Requests()), tr.Stop)
	}
	if want := (engine.Tokens{Prompt: 60, Completion: 40, Known: true}); run.Tokens != want {
		t.Errorf("tokens %+v", run.Tokens)
	}
}

// TestTokenBudgetAnswerKept: an answer whose call took the run past
// max_tokens_per_run is whole; the run completes with it, cause
// over_budget and a note, and a command waiting for it exits 0.
func TestTokenBudgetAnswerKept(t *testing.T) {
	use := &llmtest.Usage{Prompt: 30, Completion: 20}
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "x", Name: "test_echo", Args: `{"text":"more"}`}}, Usage: use},
		llmtest.Reply{Content: "the whole answer", Usage: use},
	)
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo"}; h.Budget.MaxTokensPerRun = 80 })
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	const note = "budget: the run used 100 tokens, over its max_tokens_per_run of 80, on model call 2, which answered; the answer is kept"
	if run.Response != "the whole answer" || run.Cause != engine.CauseOverBudget || tr.Stop != "answer" ||
		len(run.Notes) != 1 || run.Notes[0] != note || len(tr.Notes) != 1 || tr.Notes[0] != note {
		t.Errorf("response %q, cause %q, stop %q, notes %q / %q", run.Response, run.Cause, tr.Stop, run.Notes, tr.Notes)
	}
	if h, code := run.Headline(), engine.ExitOf(run); h != "completed, over budget" || code != engine.ExitOK {
		t.Errorf("headline %q, exit %d", h, code)
	}
}

// TestUnparsedToolCallNoted: a server without the model's tool-call
// parser (llama.cpp without --jinja) sends the model's call as the
// answer's text; the run completes with that text, and a note says why
// no tool ran.
func TestUnparsedToolCallNoted(t *testing.T) {
	const text = "<tool_call>\n{\"name\": \"test_echo\", \"arguments\": {\"text\": \"hi\"}}\n</tool_call>"
	srv := llmtest.New(llmtest.Answer(text))
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo"} })
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	const note = "model call 1: the answer is a <tool_call> block the server did not parse as a tool call, so no tool ran; " +
		"the server needs the model's tool-call parser (llama.cpp: --jinja; vLLM: --enable-auto-tool-choice --tool-call-parser NAME)"
	if run.Response != text || len(run.Notes) != 1 || run.Notes[0] != note || len(tr.Notes) != 1 || tr.Notes[0] != note {
		t.Errorf("response %q, notes %q / %q", run.Response, run.Notes, tr.Notes)
	}

	srv = llmtest.New(llmtest.Answer("Use <tool_call> tags to call tools."))
	if run, _, _ := agenttest.FireOne(t, srv); len(run.Notes) != 0 {
		t.Errorf("an answer that only names the tag got notes %q", run.Notes)
	}
}

func TestSecretsRedactedFromModelAndRecord(t *testing.T) {
	srv := llmtest.New(
		llmtest.Calls(llmtest.ToolCall{ID: "1", Name: "test_secret", Args: `{}`}),
		llmtest.Answer("I saw "+agenttest.SecretValue),
	)
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_secret"} })
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	toModel := srv.Requests()[1].Chat.Messages[2].Content
	if toModel != "the secret is [REDACTED:SECRET]" {
		t.Errorf("the model got %q", toModel)
	}
	if strings.Contains(string(run.ToolCalls), agenttest.SecretValue) || strings.Contains(run.Response, agenttest.SecretValue) {
		t.Errorf("secret in the record:\n%s\n%s", run.ToolCalls, run.Response)
	}
	if len(run.Tools) != 1 || run.Tools[0].Result != "the secret is [REDACTED:SECRET]" {
		t.Errorf("the recorded tool call: %+v", run.Tools)
	}
	if tr.Answer != "I saw [REDACTED:SECRET]" {
		t.Errorf("answer %q", tr.Answer)
	}
}

func TestToolChoiceAndParallelSentWhenSet(t *testing.T) {
	srv := llmtest.New(llmtest.Answer("ok"))
	no := false
	run, _, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) {
		h.Tools = []string{"test_echo"}
		h.LLM.ToolChoice = "test_echo"
		h.LLM.ParallelToolCalls = &no
	})
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	raw := string(srv.Requests()[0].Raw)
	if !strings.Contains(raw, `"tool_choice":{"type":"function","function":{"name":"test_echo"}}`) || !strings.Contains(raw, `"parallel_tool_calls":false`) {
		t.Errorf("request %s", raw)
	}
}

func TestUnknownToolInAllowlist(t *testing.T) {
	srv := llmtest.New(llmtest.Answer("never"))
	run, _, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo", "raed_file"} })
	agenttest.WantStatus(t, run, engine.StatusFailed, `tools[1]: unknown tool "raed_file"`)
	if len(srv.Requests()) != 0 {
		t.Errorf("the model was called")
	}
	run, _, _ = agenttest.FireOne(t, llmtest.New(), func(h *engine.Hook) { h.Tools = []string{"github.*"} })
	agenttest.WantStatus(t, run, engine.StatusFailed, `tools[0]: "github.*" names a tool of MCP server "github", but hookd.yaml declares no mcp_servers`)
}

func TestTruncatedAnswerIsNoted(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "The first half of", FinishReason: "length"})
	run, tr, _ := agenttest.FireOne(t, srv)
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	if !run.Truncated || len(run.Notes) != 1 || !strings.Contains(run.Notes[0], "finish_reason length") ||
		run.Response != "The first half of" || run.Headline() != "completed, answer truncated" {
		t.Errorf("truncated answer: truncated %v notes %q response %q headline %q", run.Truncated, run.Notes, run.Response, run.Headline())
	}
	if len(tr.Notes) != 1 {
		t.Errorf("transcript notes %q", tr.Notes)
	}
}

func TestTruncatedAnswerFailsWhenTheHookSaysSo(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{Content: "The first half of", FinishReason: "length"})
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.LLM.OnTruncated = engine.TruncatedFail })
	agenttest.WantStatus(t, run, engine.StatusFailed, "truncated: the model's answer was cut")
	if run.Cause != engine.CauseTruncated || !run.Truncated || tr.Stop != "truncated" {
		t.Errorf("cause %q truncated %v stop %q", run.Cause, run.Truncated, tr.Stop)
	}
}
