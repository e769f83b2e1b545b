package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/agenttest"
	"github.com/hookd/hookd/llm/llmtest"
)

// Servers that are stricter than OpenAI's about what comes back to them,
// as issue 14 met them in llama.cpp's llama-server (--jinja).

// llamaCppError is llama-server's answer to a history it cannot render,
// byte for byte.
func llamaCppError(msg string) llmtest.Reply {
	return llmtest.Reply{Status: 500, Body: `{"error":{"code":500,"message":"` + msg + `","type":"server_error"}}`}
}

// strictHistory is what llama-server checks of the tool calls in the
// history it is sent: each has "arguments", and they parse as JSON.
func strictHistory(req llmtest.Request) (llmtest.Reply, bool) {
	msgs, _ := req.Fields["messages"].([]any)
	for _, m := range msgs {
		calls, _ := m.(map[string]any)["tool_calls"].([]any)
		for _, c := range calls {
			fn, _ := c.(map[string]any)["function"].(map[string]any)
			args, ok := fn["arguments"].(string)
			if !ok {
				return llamaCppError("[json.exception.out_of_range.403] key 'arguments' not found"), false
			}
			if !json.Valid([]byte(args)) {
				return llamaCppError("Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error at line 1, column 15: syntax error while parsing object - unexpected end of input; expected '}'"), false
			}
		}
	}
	return llmtest.Reply{}, true
}

// TestMalformedArgumentsReplayedAsEmptyObject: the model sends
// arguments that are not JSON. The tool gets an error back; the next
// request's history carries {} in their place, which llama-server
// accepts; the transcript keeps what the model sent.
func TestMalformedArgumentsReplayedAsEmptyObject(t *testing.T) {
	const malformed = `{"text": "unterminated`
	n := 0
	srv := llmtest.NewFunc(func(req llmtest.Request) llmtest.Reply {
		if rep, ok := strictHistory(req); !ok {
			return rep
		}
		n++
		if n == 1 {
			return llmtest.Calls(llmtest.ToolCall{ID: "call_1", Name: "test_echo", Args: malformed})
		}
		return llmtest.Answer("done")
	})
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo"} })
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2 (no 500 from the server)", len(reqs))
	}
	if !strings.Contains(string(reqs[1].Raw), `"tool_calls":[{"id":"call_1","type":"function","function":{"name":"test_echo","arguments":"{}"}}]`) {
		t.Errorf("the history sent: %s", reqs[1].Raw)
	}
	c := tr.Rounds[0].ToolCalls[0]
	if c.Arguments != malformed || c.Outcome != engine.ToolError || c.Error == "" {
		t.Errorf("recorded call %+v; want the original arguments and an error", c)
	}
	if tool := reqs[1].Chat.Messages[2]; !strings.HasPrefix(tool.Content, "error: ") {
		t.Errorf("the model was told %q", tool.Content)
	}
}

// TestMissingArgumentsDefaulted: a tool call with no "arguments" at all
// (llama-server's own answer, quoted) runs with {} and is sent back with
// "arguments":"{}".
func TestMissingArgumentsDefaulted(t *testing.T) {
	const noArguments = `{"id":"chatcmpl-9","object":"chat.completion","created":1732540000,"model":"qwen2.5-7b-instruct",` +
		`"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,` +
		`"tool_calls":[{"type":"function","function":{"name":"test_secret"}}]}}],` +
		`"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}}`
	n := 0
	srv := llmtest.NewFunc(func(req llmtest.Request) llmtest.Reply {
		if rep, ok := strictHistory(req); !ok {
			return rep
		}
		n++
		if n == 1 {
			return llmtest.Reply{Body: noArguments}
		}
		return llmtest.Answer("done")
	})
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_secret"} })
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2 (no 500 from the server)", len(reqs))
	}
	c := tr.Rounds[0].ToolCalls[0]
	if c.Outcome != engine.ToolOK || !c.IDGenerated {
		t.Errorf("recorded call %+v", c)
	}
	if !strings.Contains(string(reqs[1].Raw), `"function":{"name":"test_secret","arguments":"{}"}`) {
		t.Errorf("the history sent: %s", reqs[1].Raw)
	}
}

// obeyingServer forces a tool call whenever tool_choice says to, as a
// server that obeys it does, and answers otherwise.
func obeyingServer() *llmtest.Server {
	return llmtest.NewFunc(func(req llmtest.Request) llmtest.Reply {
		switch tc := req.Fields["tool_choice"].(type) {
		case string:
			if tc == "required" {
				return llmtest.Calls(llmtest.ToolCall{ID: "c", Name: "test_echo", Args: `{"text":"forced"}`})
			}
		case map[string]any:
			return llmtest.Calls(llmtest.ToolCall{ID: "c", Name: "test_echo", Args: `{"text":"named"}`})
		}
		return llmtest.Answer("answered")
	})
}

// TestForcingToolChoiceFirstRoundOnly: tool_choice required (or a
// tool's name) goes with the first model call only, so a model that
// obeys it can answer once its tool ran.
func TestForcingToolChoiceFirstRoundOnly(t *testing.T) {
	for _, choice := range []string{"required", "test_echo"} {
		srv := obeyingServer()
		run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo"}; h.LLM.ToolChoice = choice })
		agenttest.WantStatus(t, run, engine.StatusCompleted, "")
		reqs := srv.Requests()
		if len(reqs) != 2 || run.Response != "answered" {
			t.Fatalf("%s: %d requests, response %q", choice, len(reqs), run.Response)
		}
		if _, sent := reqs[0].Fields["tool_choice"]; !sent {
			t.Errorf("%s: not sent with the first call: %s", choice, reqs[0].Raw)
		}
		if _, sent := reqs[1].Fields["tool_choice"]; sent {
			t.Errorf("%s: sent again with the second call: %s", choice, reqs[1].Raw)
		}
		if tr.Rounds[0].Call.ToolChoice != choice || tr.Rounds[1].Call.ToolChoice != "" {
			t.Errorf("%s: recorded tool_choice %q, %q", choice, tr.Rounds[0].Call.ToolChoice, tr.Rounds[1].Call.ToolChoice)
		}
	}

	// auto is not forcing: it goes with every call.
	srv := llmtest.New(llmtest.Calls(llmtest.ToolCall{ID: "c", Name: "test_echo", Args: `{"text":"x"}`}), llmtest.Answer("ok"))
	run, _, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo"}; h.LLM.ToolChoice = "auto" })
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	for i, r := range srv.Requests() {
		if r.Fields["tool_choice"] != "auto" {
			t.Errorf("auto, call %d: %s", i+1, r.Raw)
		}
	}
}

// TestToolChoiceRoundsAll: with tool_choice_rounds: all the forcing
// choice goes with every call, and a model that obeys it ends at
// max_rounds, as the hook asked.
func TestToolChoiceRoundsAll(t *testing.T) {
	srv := obeyingServer()
	run, _, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) {
		h.Tools = []string{"test_echo"}
		h.LLM.ToolChoice, h.LLM.ToolChoiceRounds, h.LLM.MaxRounds = "required", engine.ToolChoiceAll, 3
	})
	agenttest.WantStatus(t, run, engine.StatusFailed, "max_rounds")
	for i, r := range srv.Requests() {
		if r.Fields["tool_choice"] != "required" {
			t.Errorf("call %d: %s", i+1, r.Raw)
		}
	}
}

// TestFinishReasonPerRound: each model call keeps the finish_reason the
// server gave it.
func TestFinishReasonPerRound(t *testing.T) {
	srv := llmtest.New(
		llmtest.Calls(llmtest.ToolCall{ID: "c", Name: "test_echo", Args: `{"text":"x"}`}),
		llmtest.Reply{Content: "partial", FinishReason: "length"},
	)
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo"} })
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	if len(tr.Rounds) != 2 || tr.Rounds[0].Call.FinishReason != "tool_calls" || tr.Rounds[1].Call.FinishReason != "length" || !run.Truncated {
		t.Errorf("rounds %+v %+v, truncated %v", tr.Rounds[0].Call, tr.Rounds[1].Call, run.Truncated)
	}
}

// TestBudgetStopListsUnrunCalls: a budget stop after an answer that
// called tools lists those calls as not run, as max_rounds does.
func TestBudgetStopListsUnrunCalls(t *testing.T) {
	srv := llmtest.New(llmtest.Reply{
		ToolCalls: []llmtest.ToolCall{{ID: "a", Name: "test_echo", Args: `{"text":"one"}`}, {ID: "b", Name: "test_echo", Args: `{"text":"two"}`}},
		Usage:     &llmtest.Usage{Prompt: 60, Completion: 30},
	})
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo"}; h.Budget.MaxTokensPerRun = 80 })
	agenttest.WantStatus(t, run, engine.StatusFailed, "budget: the run used 90 tokens, over its max_tokens_per_run of 80")
	calls := tr.Rounds[0].ToolCalls
	if len(calls) != 2 || len(run.Tools) != 2 {
		t.Fatalf("recorded calls %+v, run tools %+v", calls, run.Tools)
	}
	for i, c := range calls {
		if c.Outcome != engine.ToolNotRun || c.Error != "not run: max_tokens_per_run reached" || c.Tool != "test_echo" {
			t.Errorf("call %d: %+v", i, c)
		}
	}
}
