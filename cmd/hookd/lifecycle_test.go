package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
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
	tr, err := agent.DecodeTranscript(run)
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

// TestDaemonLifecyclePoints: daemon:start handlers run before the first
// trigger, hookd.started fires a hook that listens for it, a record:before
// command handler drops the prompt of a run record before it is stored,
// and on SIGTERM daemon:stop runs and a hook on hookd.stopping runs
// before the daemon stops.
func TestDaemonLifecyclePoints(t *testing.T) {
	e := newProcEnv(t, "", map[string]string{
		"start.yaml":   "on: daemon:start\ncommand: [sh, -c, \"cat > daemon-start.json\"]\n",
		"stop.yaml":    "on: daemon:stop\ncommand: [sh, -c, \"cat > daemon-stop.json\"]\n",
		"privacy.yaml": "on: record:before\ncommand: [sh, -c, \"cat > record.json; echo '{\\\"drop_fields\\\": [\\\"steps\\\"]}'\"]\n",
		"hello.yaml":   "trigger: {event: hookd.started}\nsteps: [{type: shell, command: [echo, \"started {{event.pid}}\"]}]\nskip_llm: true\n",
		"bye.yaml":     "trigger: {event: hookd.stopping}\nsteps: [{type: shell, command: [sh, -c, \"echo bye > bye.txt\"]}]\nskip_llm: true\n",
	})
	d := e.serve()
	var in map[string]any
	waitFor(t, "the daemon:start handler's input", func() bool {
		b, err := os.ReadFile(e.path("daemon-start.json"))
		return err == nil && json.Unmarshal(b, &in) == nil
	}, func() string { return fmt.Sprint(in) })
	if in["hook_event_name"] != "daemon:start" || in["daemon"].(map[string]any)["pid"] != float64(d.pid()) ||
		in["daemon"].(map[string]any)["hooks"] != 2.0 {
		t.Errorf("daemon:start input: %v", in)
	}
	var runs []*engine.Run
	waitFor(t, "the hookd.started hook to run", func() bool {
		runs = e.listRuns("hello")
		return len(runs) > 0
	}, func() string { return fmt.Sprint(len(runs)) })
	r := e.waitRun(runs[0].ID, engine.StatusCompleted)
	if r.EventType != engine.EventDaemonStarted || r.Steps[0].Output != "" {
		t.Errorf("hello run: %s, step output %q (record:before dropped steps)", r.EventType, r.Steps[0].Output)
	}
	if len(r.Notes) == 0 || !strings.Contains(r.Notes[len(r.Notes)-1], "record:before: privacy dropped steps") {
		t.Errorf("notes: %q", r.Notes)
	}
	var rec map[string]any
	if b, err := os.ReadFile(e.path("record.json")); err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("record:before input: %v %s", err, b)
	}
	if steps, _ := rec["record"].(map[string]any)["steps"].([]any); len(steps) != 1 ||
		!strings.HasPrefix(steps[0].(map[string]any)["output"].(string), "started ") {
		t.Errorf("record:before saw %v", rec["record"])
	}

	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Errorf("exit %d\n%s", code, d.log)
	}
	b, err := os.ReadFile(e.path("daemon-stop.json"))
	if err != nil || !strings.Contains(string(b), `"signal":"terminated"`) {
		t.Errorf("daemon:stop input: %v %s", err, b)
	}
	if b, err := os.ReadFile(e.path("bye.txt")); err != nil || string(b) != "bye\n" {
		t.Errorf("the hookd.stopping hook did not run before the stop: %v %q", err, b)
	}
}
