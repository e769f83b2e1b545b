package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/agenttest"
	"github.com/hookd/hookd/llm/llmtest"
	"github.com/hookd/hookd/metrics"
	dto "github.com/prometheus/client_model/go"
)

// TestToolOutcomesCounted drives a scripted model that calls a tool that
// runs, one a lifecycle handler denies, one the hook does not offer and
// one with arguments that do not fit: the run records each call's
// outcome, and hookd_tool_calls_total counts each under its own outcome
// (denied and unknown included).
func TestToolOutcomesCounted(t *testing.T) {
	srv := llmtest.New(
		llmtest.Calls(
			llmtest.ToolCall{ID: "c1", Name: "test_echo", Args: `{"text":"hi"}`},
			llmtest.ToolCall{ID: "c2", Name: "test_fail", Args: `{}`},
			llmtest.ToolCall{ID: "c3", Name: "delete_everything", Args: `{}`},
			llmtest.ToolCall{ID: "c4", Name: "test_echo", Args: `{"text":5}`},
		),
		llmtest.Answer("done"),
	)
	f := agenttest.Start(t, srv, agenttest.NewHook(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo", "test_fail"} }))
	f.Eng.Lifecycle().On(engine.PointToolCallBefore, func(_ context.Context, p *engine.Payload) (engine.Decision, error) {
		if p.ToolName == "test_fail" {
			return engine.Decision{Cancel: true, Reason: "not in this house"}, nil
		}
		return engine.Decision{}, nil
	}, engine.HandlerOptions{Label: "guard"})
	m := metrics.New(f.Eng, time.Minute, 0)
	done := make(chan struct{})
	f.Eng.Subscribe(func(ev *engine.Event) {
		m.Observe(ev)
		if ev.Type == engine.EventRunCompleted {
			close(done)
		}
	})

	run, tr := f.Fire()
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	want := []struct {
		label   string
		outcome engine.ToolOutcome
	}{{"test_echo", engine.ToolOK}, {"test_fail", engine.ToolDenied}, {"delete_everything", engine.ToolUnknown}, {"test_echo", engine.ToolError}}
	if len(run.Tools) != len(want) || len(tr.Rounds) != 2 || len(tr.Rounds[0].ToolCalls) != len(want) {
		t.Fatalf("tools %+v", run.Tools)
	}
	for i, w := range want {
		u := run.Tools[i]
		if u.Label() != w.label || u.Outcome != w.outcome || u.Round != 1 {
			t.Errorf("tool call %d: %s %s round %d, want %s %s round 1", i, u.Label(), u.Outcome, u.Round, w.label, w.outcome)
		}
	}
	if u := run.Tools[1]; u.DeniedBy != "guard" || u.Result != "" {
		t.Errorf("denied call: by %q result %q", u.DeniedBy, u.Result)
	}

	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no hook.run.completed event")
	}
	fams, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[[2]string]float64{}
	for _, fam := range fams {
		if fam.GetName() != "hookd_tool_calls_total" {
			continue
		}
		for _, mt := range fam.GetMetric() {
			got[[2]string{label(mt, "tool"), label(mt, "outcome")}] = mt.GetCounter().GetValue()
		}
	}
	for _, w := range want {
		if n := got[[2]string{w.label, string(w.outcome)}]; n != 1 {
			t.Errorf("hookd_tool_calls_total{tool=%q,outcome=%q} = %v, want 1 (all: %v)", w.label, w.outcome, n, got)
		}
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
