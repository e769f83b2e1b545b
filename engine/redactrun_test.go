package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookd/hookd/redact"
)

// TestRedactRun checks that a run record leaves redactRun with no
// secret in its event or its steps' outputs and fields.
func TestRedactRun(t *testing.T) {
	t.Parallel()
	red := redact.New([]string{"K"}, []string{"K=s3cr3t-value"})
	run := &Run{Event: json.RawMessage(`{"t":"s3cr3t-value"}`), Steps: []*StepResult{{Output: "s3cr3t-value",
		Fields: map[string]any{"stdout": "s3cr3t-value"}}}}
	redactRun(red, run)
	b, _ := json.Marshal(run)
	if strings.Contains(string(b), "s3cr3t") {
		t.Errorf("redactRun left the secret: %s", b)
	}
}
