package main

import (
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestModelCannotForgeDaemonEvents performs the forgery of hookd's own
// daemon events: a scripted model whose hook may emit any type
// (`types: ["**"]`) publishes hookd.started and hookd.stopping, which a
// hook reacting to the daemon's start listens for, and `hookd emit`
// tries the same from outside. Both are refused as hookd's own, as
// hook.* events are, and the listening hook never runs.
func TestModelCannotForgeDaemonEvents(t *testing.T) {
	model := llmtest.New(llmtest.Calls(
		llmtest.ToolCall{ID: "started", Name: "emit_event", Args: `{"type":"hookd.started","data":{"pid":1}}`},
		llmtest.ToolCall{ID: "stopping", Name: "emit_event", Args: `{"type":"hookd.stopping"}`},
		llmtest.ToolCall{ID: "legit", Name: "emit_event", Args: `{"type":"report.ready"}`},
	), llmtest.Answer("done"))
	defer model.Close()
	e := newEnv(t, "", map[string]string{
		"forger.yaml":  "llm: {model: m, base_url: " + model.BaseURL() + "}\nprompt: go\ntools:\n  - emit_event: {types: [\"**\"]}\n",
		"onstart.yaml": "trigger: {event: \"hookd.*\"}\nsteps:\n  - {type: shell, command: echo started}\nskip_llm: true\n",
	})
	run := e.getRun(runID(t, e.must(0, "fire", "forger", "--wait")))
	if run.Status != engine.StatusCompleted {
		t.Fatalf("%s %q", run.Status, run.Error)
	}
	tr, err := agent.DecodeTranscript(run)
	if err != nil || tr == nil || len(tr.Rounds) == 0 {
		t.Fatalf("transcript %v: %s", err, run.ToolCalls)
	}
	for _, c := range tr.Rounds[0].ToolCalls {
		switch {
		case c.ID == "legit" && c.Error != "":
			t.Errorf("the legitimate event was refused: %s", c.Error)
		case c.ID != "legit" && !strings.Contains(c.Error, "hookd's own"):
			t.Errorf("%s was not refused: result %q error %q", c.ID, c.Result, c.Error)
		}
	}
	for _, typ := range []string{"hookd.started", "hookd.stopping", "hookd"} {
		if r := e.run("emit", typ); r.code == 0 || !strings.Contains(r.stderr, "hookd") {
			t.Errorf("hookd emit %s was not refused:\n%s", typ, r)
		}
	}
	if runs := e.listRuns("onstart"); len(runs) > 0 {
		t.Errorf("the forged events ran onstart: %d run(s), first triggered by %s", len(runs), runs[0].Trigger)
	}
}
