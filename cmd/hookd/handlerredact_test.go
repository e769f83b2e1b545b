package main

import (
	"os"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestToolResultRedactedBeforeHandler performs a read of a file holding
// a hook's secret (its step wrote it there) while a tool:call:after command handler (an audit log,
// say) records every result: the handler, a program outside the run that
// was never given the secret, gets the result redacted, as a step:after
// handler gets a step's result; the model and the record too.
func TestToolResultRedactedBeforeHandler(t *testing.T) {
	const secret = "ntk-handler-6c2d91aa"
	model := llmtest.New(llmtest.Calls(
		llmtest.ToolCall{ID: "read", Name: "read_file", Args: `{"path":"notes.txt"}`},
	), llmtest.Answer("done"))
	defer model.Close()
	e := newEnv(t, "", map[string]string{
		"reader.yaml": "llm: {model: m, base_url: " + model.BaseURL() + "}\nprompt: read the notes\ntools: [read_file]\nsecrets: [NOTES_TOKEN]\n" + `steps:
  - type: shell
    command: |
      printf 'deploy token: %s\n' "$NOTES_TOKEN" > notes.txt
    secrets: [NOTES_TOKEN]
`,
		"audit.yaml": "on: tool:call:after\ncommand: [sh, -c, 'cat >> audit.jsonl']\n",
	})
	e.environ = append(e.environ, "NOTES_TOKEN="+secret)
	run := e.getRun(runID(t, e.must(0, "fire", "reader", "--wait")))
	if run.Status != engine.StatusCompleted {
		t.Fatalf("%s %q", run.Status, run.Error)
	}
	audit, err := os.ReadFile(e.path("audit.jsonl"))
	if err != nil {
		t.Fatalf("the handler did not run: %v", err)
	}
	if !strings.Contains(string(audit), "[REDACTED:NOTES_TOKEN]") {
		t.Errorf("the handler did not get the result redacted:\n%s", audit)
	}
	record := e.must(0, "run", run.ID, "--json").stdout
	sent := ""
	for _, r := range model.Requests() {
		sent += string(r.Raw)
	}
	for where, text := range map[string]string{"the handler's input": string(audit), "the record": record, "the model": sent} {
		if strings.Contains(text, secret) {
			t.Errorf("the secret reached %s", where)
		}
	}
}
