package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/llm"
	"github.com/hookd/hookd/llm/llmtest"
	"github.com/hookd/hookd/store"
)

// TestExampleGuardDeniesRunCommand runs a hook against the scripted
// model with the guard shipped in hooks.d: the model's `rm -rf` goes back
// to it as a tool error, the transcript records who denied it, and a
// hook.tool.denied event is stored. `hookd handlers` lists the guard.
func TestExampleGuardDeniesRunCommand(t *testing.T) {
	guard, err := os.ReadFile("../../hooks.d/allow-commands.yaml")
	if err != nil {
		t.Fatal(err)
	}
	model := llmtest.New(
		llmtest.Calls(
			llmtest.ToolCall{ID: "call_rm", Name: "run_command", Args: `{"argv":["rm","-rf","/"]}`},
			llmtest.ToolCall{ID: "call_echo", Name: "run_command", Args: `{"argv":["echo","safe"]}`},
		),
		llmtest.Answer("Understood; I will not delete anything."),
	)
	defer model.Close()
	e := newEnv(t, "llm: {model: test-model, base_url: "+model.BaseURL()+"}\n", map[string]string{
		"allow-commands.yaml": string(guard),
		"cleanup.yaml":        "prompt: clean up\ntools: [run_command]\n",
	})
	e.environ = []string{withHookdOnPath()}

	out := e.must(0, "handlers").stdout
	if !strings.Contains(out, "tool:call:before") || !strings.Contains(out, "allow-commands") || !strings.Contains(out, "fail_closed") {
		t.Errorf("`hookd handlers`:\n%s", out)
	}

	r := e.must(0, "fire", "cleanup", "--wait")
	run := e.getRun(runID(t, r))
	if run.Status != engine.StatusCompleted {
		t.Fatalf("run %s %q", run.Status, run.Error)
	}
	tr, err := llm.DecodeTranscript(run)
	if err != nil || tr == nil || len(tr.Rounds) != 2 || len(tr.Rounds[0].ToolCalls) != 2 {
		t.Fatalf("transcript %v: %s", err, run.ToolCalls)
	}
	denied, allowed := tr.Rounds[0].ToolCalls[0], tr.Rounds[0].ToolCalls[1]
	if denied.DeniedBy != "allow-commands" || !strings.Contains(denied.Error, "denied by allow-commands: command not allowed: rm -rf /; the allowed commands are: go build ./...;") {
		t.Errorf("denied call %+v", denied)
	}
	if allowed.DeniedBy != "" || allowed.Error != "" || !strings.Contains(allowed.Result, "safe") {
		t.Errorf("allowed call %+v", allowed)
	}
	if out := e.must(0, "run", run.ID).stdout; !strings.Contains(out, "denied by handler allow-commands") {
		t.Errorf("hookd run does not say who denied the call:\n%s", out)
	}
	msgs := model.Requests()[1].Chat.Messages
	if len(msgs) != 4 || !strings.HasPrefix(msgs[2].Content, "error: denied by allow-commands") {
		t.Errorf("the model did not get the denial as the tool's error: %+v", msgs)
	}

	db, err := store.Open(e.path(".hookd/hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	evs, err := db.ListEvents(context.Background(), engine.EventToolDenied, 10)
	if err != nil || len(evs) != 1 {
		t.Fatalf("%d hook.tool.denied events (err %v)", len(evs), err)
	}
	d := evs[0].Data
	if d["hook"] != "cleanup" || d["run_id"] != run.ID || d["tool"] != "run_command" || d["handler"] != "allow-commands" ||
		!strings.Contains(d["reason"].(string), "command not allowed: rm -rf /") {
		t.Errorf("event data %v", d)
	}
}
