package agent_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/agenttest"
	"github.com/hookd/hookd/llm/llmtest"
)

// The model stage publishes hook.llm.round per model call and
// hook.tool.called per tool call, as they end, for watchers.
func TestModelStageProgressEvents(t *testing.T) {
	srv := llmtest.New(
		llmtest.Calls(
			llmtest.ToolCall{ID: "call_1", Name: "test_echo", Args: `{"text":"hi"}`},
			llmtest.ToolCall{ID: "call_2", Name: "test_fail", Args: `{}`},
		),
		llmtest.Answer("done"),
	)
	f := agenttest.Start(t, srv, agenttest.NewHook(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo", "test_fail"} }))
	var (
		mu  sync.Mutex
		evs []*engine.Event
	)
	f.Eng.Subscribe(func(ev *engine.Event) {
		if engine.ProgressEventType(ev.Type) {
			mu.Lock()
			evs = append(evs, ev)
			mu.Unlock()
		}
	})
	run, _ := f.Fire()
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	mu.Lock()
	defer mu.Unlock()

	var got []string
	for _, ev := range evs {
		if ev.Data["run_id"] != run.ID || ev.Data["hook"] != "ask" {
			t.Errorf("%s names run %v hook %v", ev.Type, ev.Data["run_id"], ev.Data["hook"])
		}
		switch ev.Type {
		case engine.EventLLMRound:
			got = append(got, fmt.Sprintf("round %v tools=%v finish=%v", ev.Data["round"], ev.Data["tool_calls"], ev.Data["finish_reason"]))
			if _, ok := ev.Data["duration_ms"].(int64); !ok {
				t.Errorf("round without duration_ms: %v", ev.Data)
			}
			if tok, ok := ev.Data["tokens"].(map[string]any); !ok || tok["prompt"] == nil {
				t.Errorf("round without tokens: %v", ev.Data)
			}
		case engine.EventToolCalled:
			got = append(got, fmt.Sprintf("tool %v %v round %v", ev.Data["tool"], ev.Data["outcome"], ev.Data["round"]))
		}
	}
	// Parallel tool calls may end in either order.
	joined := strings.Join(got, "; ")
	for _, want := range []string{
		"round 1 tools=2 finish=tool_calls", "tool test_echo ok round 1", "tool test_fail error round 1",
		"round 2 tools=0 finish=stop",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("no %q in %s", want, joined)
		}
	}
	if len(got) != 4 || !strings.HasPrefix(got[0], "round 1") || !strings.HasPrefix(got[3], "round 2") {
		t.Errorf("progress events in order: %s", joined)
	}
}

// A secret in what the model sent (here the name of a tool it called,
// quoted in the error) is redacted in the progress events.
func TestModelStageProgressRedacted(t *testing.T) {
	srv := llmtest.New(
		llmtest.Calls(llmtest.ToolCall{ID: "c", Name: agenttest.SecretValue, Args: `{}`}),
		llmtest.Answer("ok"),
	)
	f := agenttest.Start(t, srv, agenttest.NewHook(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo"} }))
	var (
		mu   sync.Mutex
		seen []string
	)
	f.Eng.Subscribe(func(ev *engine.Event) {
		if engine.ProgressEventType(ev.Type) {
			mu.Lock()
			seen = append(seen, fmt.Sprint(ev.Data))
			mu.Unlock()
		}
	})
	run, _ := f.Fire()
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || !strings.Contains(seen[1], "unknown tool") {
		t.Fatalf("progress events: %v", seen)
	}
	for _, s := range seen {
		if strings.Contains(s, agenttest.SecretValue) {
			t.Errorf("secret in a progress event: %s", s)
		}
	}
}
