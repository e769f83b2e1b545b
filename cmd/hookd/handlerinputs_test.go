package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestHandlerInputs: command handlers read what the seed systems passed
// theirs: llm:call:before the model and the round, llm:call:after the
// call's token usage (Thinkroid's tokensUsed, Ethos' usage),
// tool:call:before and after the tool call's id and, after, how long the
// tool ran, run:after the final run record — status, answer, tokens, tool
// names, duration and steps — with its outputs capped at 64 KiB and a
// field saying what was cut.
func TestHandlerInputs(t *testing.T) {
	model := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call-7", Name: "read_file", Args: `{"path":"notes.txt"}`}},
			Usage: &llmtest.Usage{Prompt: 120, Completion: 30, Cached: 100}},
		llmtest.Reply{Content: "the notes say hi", Usage: &llmtest.Usage{Prompt: 200, Completion: 12}})
	defer model.Close()
	handler := "command: [sh, -c, 'cat > \"in-$(echo $HOOKD_POINT | tr : _).json\"']\n"
	hooks := map[string]string{
		"look.yaml": "steps:\n  - name: big\n    type: shell\n    command: head -c 70000 /dev/zero | tr '\\0' a\n" +
			"prompt: read notes.txt\ntools: [read_file]\n",
	}
	for _, p := range []engine.Point{engine.PointLLMCallBefore, engine.PointLLMCallAfter, engine.PointToolCallBefore,
		engine.PointToolCallAfter, engine.PointRunAfter} {
		hooks[strings.ReplaceAll(string(p), ":", "-")+".yaml"] = "on: " + string(p) + "\n" + handler
	}
	e := newEnv(t, "llm: {model: test-model, base_url: "+model.BaseURL()+"}\n", hooks)
	e.write("notes.txt", "hi")
	e.serve()
	run := e.getRun(runID(t, e.must(0, "fire", "look", "--wait")))
	if run.Status != engine.StatusCompleted {
		t.Fatalf("run %s %q", run.Status, run.Error)
	}
	read := func(p engine.Point, v any) string {
		t.Helper()
		file := "in-" + strings.ReplaceAll(string(p), ":", "_") + ".json"
		var b []byte
		waitFor(t, "the "+string(p)+" handler", func() bool {
			b, _ = os.ReadFile(e.path(file))
			return json.Valid(b)
		}, nil)
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return string(b)
	}

	var before struct {
		Model string `json:"model"`
		Round int    `json:"round"`
	}
	// The last call's input is what the file holds: round 2.
	if raw := read(engine.PointLLMCallBefore, &before); before.Model != "test-model" || before.Round != 2 {
		t.Errorf("llm:call:before: %s", raw)
	}
	var after struct {
		Model string        `json:"model"`
		Round int           `json:"round"`
		Usage engine.Tokens `json:"usage"`
	}
	if raw := read(engine.PointLLMCallAfter, &after); after.Round != 2 || after.Model == "" ||
		after.Usage != (engine.Tokens{Prompt: 200, Completion: 12, Known: true}) {
		t.Errorf("llm:call:after: %s", raw)
	}
	var toolBefore struct {
		ID   string `json:"tool_call_id"`
		Name string `json:"tool_name"`
	}
	if raw := read(engine.PointToolCallBefore, &toolBefore); toolBefore.ID != "call-7" || toolBefore.Name != "read_file" {
		t.Errorf("tool:call:before: %s", raw)
	}
	var toolAfter struct {
		ID       string  `json:"tool_call_id"`
		Duration *int64  `json:"duration_ms"`
		Result   *string `json:"tool_result"`
	}
	if raw := read(engine.PointToolCallAfter, &toolAfter); toolAfter.ID != "call-7" || toolAfter.Duration == nil ||
		toolAfter.Result == nil || !strings.Contains(*toolAfter.Result, "hi") {
		t.Errorf("tool:call:after: %s", raw)
	}
	var final struct {
		Run struct {
			Status   string        `json:"status"`
			Answer   string        `json:"answer"`
			Tokens   engine.Tokens `json:"tokens"`
			Tools    []string      `json:"tools"`
			Duration *int64        `json:"duration_ms"`
			Steps    []struct {
				Name   string `json:"name"`
				Output string `json:"output"`
			} `json:"steps"`
			Cut []string `json:"cut"`
		} `json:"run"`
	}
	raw := read(engine.PointRunAfter, &final)
	r := final.Run
	if r.Status != "completed" || r.Answer != "the notes say hi" || r.Tokens != (engine.Tokens{Prompt: 320, Completion: 42, Cached: 100, Known: true}) ||
		fmt.Sprint(r.Tools) != "[read_file]" || r.Duration == nil {
		t.Errorf("run:after: %.600s", raw)
	}
	// The step keeps 64 KiB and a note of its own; with the answer, that
	// is more than the handler's 64 KiB of outputs.
	kept := 64<<10 - len("the notes say hi")
	if len(r.Steps) != 1 {
		t.Fatalf("run:after: %d steps, want 1", len(r.Steps))
	}
	if r.Steps[0].Name != "big" || len(r.Steps[0].Output) != kept ||
		fmt.Sprint(r.Cut) != fmt.Sprintf("[steps[0].output: %d bytes, %d kept]", len(run.Steps[0].Output), kept) {
		t.Errorf("run:after: step %q output %d bytes, cut %q", r.Steps[0].Name, len(r.Steps[0].Output), r.Cut)
	}
}
