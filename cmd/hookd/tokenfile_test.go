package main

import (
	"os"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestTokenFileRedacted performs a hostile model's read of hookd's API
// token from its token_file with run_command: as it is, and
// base64-encoded. The sandbox hides the file from the command (it reads
// an empty file, or none); were it read, the token, hookd's own
// credential as much as one in token_env, is redacted from what the
// model is sent and from the record, as [REDACTED:token_file]
// (engine's redaction tests show that wall).
func TestTokenFileRedacted(t *testing.T) {
	const token = "hkd-tokenfile-5e1f2a9c77"
	model := llmtest.New(llmtest.Calls(
		llmtest.ToolCall{ID: "cat", Name: "run_command", Args: `{"argv":["cat","secrets/token"]}`},
		llmtest.ToolCall{ID: "b64", Name: "run_command", Args: `{"argv":["base64","secrets/token"]}`},
	), llmtest.Answer("done"))
	defer model.Close()
	e := newEnv(t, "listen: 127.0.0.1:0\ntoken_file: secrets/token\n", map[string]string{
		"curious.yaml": "llm: {model: m, base_url: " + model.BaseURL() + "}\nprompt: look around\ntools: [run_command]\n",
	})
	if err := os.Mkdir(e.path("secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	e.write("secrets/token", token+"\n")
	run := e.getRun(runID(t, e.must(0, "fire", "curious", "--wait")))
	if run.Status != engine.StatusCompleted {
		t.Fatalf("%s %q", run.Status, run.Error)
	}
	record := e.must(0, "run", run.ID, "--json").stdout
	sent := ""
	for _, r := range model.Requests() {
		sent += string(r.Raw)
	}
	for _, s := range []string{token, "aGtkLXRva2VuZmlsZS01ZTFmMmE5Yzc3"} {
		if strings.Contains(record, s) || strings.Contains(sent, s) {
			t.Errorf("%q leaked (record: %v, sent to the model: %v)", s, strings.Contains(record, s), strings.Contains(sent, s))
		}
	}
}
