package main

import (
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestEmitToolSaysFates drives the real daemon with a scripted model
// whose emit_event matches two hooks: one accepts the model's event and
// starts, the other holds run_command and refuses it (from_tool gate).
// The tool's result, as the model receives it in its next request, names
// both: the run started, and the refusal with the gate's reason and the
// record it left. Before, it said only "it triggered 1 run(s)": the
// model was not told that the other hook did not run.
func TestEmitToolSaysFates(t *testing.T) {
	model := llmtest.NewFunc(func(r llmtest.Request) llmtest.Reply {
		msgs := r.Chat.Messages
		if msgs[len(msgs)-1].Role == "tool" {
			return llmtest.Answer("done")
		}
		return llmtest.Calls(llmtest.ToolCall{ID: "c1", Name: "emit_event", Args: `{"type":"report.ready","data":{"n":1}}`})
	})
	defer model.Close()
	e := newEnv(t, "llm:\n  model: m\n  base_url: "+model.BaseURL()+"\n", map[string]string{
		"intake.yaml": "trigger: {event: ticket.opened}\nprompt: \"Triage {{event.text}}\"\ntools:\n  - emit_event: {types: [report.*]}\n",
		"notes.yaml":  "trigger: {event: report.*}\nskip_llm: true\nsteps:\n  - type: shell\n    command: \"true\"\n",
		"deploy.yaml": "trigger: {event: report.*}\nprompt: 'Do as asked: {{event}}'\ntools: [run_command]\n",
	})
	d := e.serve()
	e.must(0, "emit", "ticket.opened", "text=hello")

	waitFor(t, "intake to finish, notes to run and deploy to be refused", func() bool {
		in, notes := e.listRuns("intake"), e.listRuns("notes")
		return len(in) == 1 && in[0].Status.Final() && len(notes) == 1 && len(e.listRuns("deploy")) == 1
	}, func() string { return d.log.String() })
	notes, deploy := e.listRuns("notes")[0], e.listRuns("deploy")[0]
	if deploy.Status != engine.StatusSkipped || deploy.Gate != engine.GateFromTool {
		t.Fatalf("deploy: %s gate %q; want skipped by from_tool", deploy.Status, deploy.Gate)
	}

	tr, err := agent.DecodeTranscript(e.getRun(e.listRuns("intake")[0].ID))
	if err != nil || tr == nil || len(tr.Rounds) == 0 || len(tr.Rounds[0].ToolCalls) != 1 {
		t.Fatalf("intake transcript: %v %+v", err, tr)
	}
	call := tr.Rounds[0].ToolCalls[0]
	for _, want := range []string{
		"event report.ready published; for the hooks it matched: 1 run(s), 1 refused by a gate",
		"\n" + notes.ID + " notes (running)",
		"\n" + deploy.ID + " deploy refused: from_tool: the model of hook intake asked for this run with a tool call",
		"accept_from_tools: true",
	} {
		if !strings.Contains(call.Result, want) {
			t.Errorf("emit_event's result lacks %q:\n%s", want, call.Result)
		}
	}
	// What the model was sent is that result.
	var told string
	for _, r := range model.Requests() {
		for _, m := range r.Chat.Messages {
			if m.Role == "tool" {
				told = m.Content
			}
		}
	}
	if !strings.Contains(told, deploy.ID+" deploy refused: from_tool:") || !strings.Contains(told, notes.ID+" notes") {
		t.Errorf("the model was told:\n%s", told)
	}
}

// TestEmitStepSaysFates: an emit step's output and its refused field name
// what became of each hook its event matched: the first time the capped
// hook starts, the second its rate gate refuses it, and the step says so
// with the gate's reason and the record the refusal left.
func TestEmitStepSaysFates(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"relay.yaml":  "skip_llm: true\nsteps:\n  - type: emit\n    event_type: audit.done\n    data: {n: 1}\n",
		"capped.yaml": "trigger: {event: audit.*}\nskip_llm: true\nrate: 1/1h\nsteps:\n  - type: shell\n    command: \"true\"\n",
	})
	d := e.serve()
	fire := func() *engine.Run {
		t.Helper()
		r := e.must(0, "fire", "relay", "--wait")
		runs := e.listRuns("relay")
		if len(runs) == 0 {
			t.Fatalf("no relay run:\n%s", r)
		}
		return e.getRun(runs[0].ID)
	}
	first := fire()
	// Its run ends before the second emit, so that only the rate gate,
	// not the run in flight, can refuse the second.
	waitFor(t, "capped's run to end", func() bool {
		runs := e.listRuns("capped")
		return len(runs) == 1 && runs[0].Status.Final()
	}, func() string { return d.log.String() })
	started := e.listRuns("capped")[0]
	if out := first.Steps[0].Output; out != "emitted audit.done: 1 run(s)\n"+started.ID+" capped (running)" {
		t.Errorf("first emit step's output:\n%s", out)
	}

	second := fire()
	var refused *engine.Run
	for _, r := range e.listRuns("capped") {
		if r.Status == engine.StatusSkipped {
			refused = r
		}
	}
	if refused == nil || refused.Gate != engine.GateRate {
		t.Fatalf("capped's second trigger was not refused by its rate: %+v", e.listRuns("capped"))
	}
	step := second.Steps[0]
	want := "emitted audit.done: 0 run(s), 1 refused by a gate\n" + refused.ID + " capped refused: rate: 1 start in the last 1h (rate: 1/1h); the next is allowed in "
	if !strings.HasPrefix(step.Output, want) {
		t.Errorf("second emit step's output:\n%s\nwant it to begin\n%s", step.Output, want)
	}
	ref, _ := step.Fields["refused"].([]any)
	if len(ref) != 1 {
		t.Fatalf("refused field: %#v", step.Fields["refused"])
	}
	if m, _ := ref[0].(map[string]any); m["hook"] != "capped" || m["run_id"] != refused.ID || m["gate"] != engine.GateRate ||
		!strings.HasPrefix(m["reason"].(string), "rate: 1 start in the last 1h") {
		t.Errorf("refused field: %#v", ref[0])
	}
}
