package store

import (
	"encoding/json"
	"fmt"

	"github.com/hookd/hookd/engine"
)

// sqlRunOutcome adds the column that holds how a run ended, beyond its
// status: the gate, the cause, the model stage's tool calls and notes.
const sqlRunOutcome = `ALTER TABLE runs ADD COLUMN outcome TEXT;`

// outcome is the runs.outcome column: the typed fields of a run's end,
// as one JSON object (NULL when there is nothing to say).
type outcome struct {
	Gate      string           `json:"gate,omitempty"`
	Cause     engine.Cause     `json:"cause,omitempty"`
	Truncated bool             `json:"truncated,omitempty"`
	Notes     []string         `json:"notes,omitempty"`
	Tools     []engine.ToolUse `json:"tools,omitempty"`
	// A run of a hook with retry: (retries.go).
	Attempt  int               `json:"attempt,omitempty"`
	Attempts int               `json:"attempts,omitempty"`
	RetryOf  string            `json:"retry_of,omitempty"`
	Retry    *engine.RetryPlan `json:"retry,omitempty"`
	// Trace is the caller's trace the run continues (Run.TraceParent).
	Trace engine.TraceParent `json:"trace,omitempty"`
}

// outcomeArg encodes r's outcome for the outcome column.
func outcomeArg(r *engine.Run) (any, error) {
	o := outcome{Gate: r.Gate, Cause: r.Cause, Truncated: r.Truncated, Notes: r.Notes, Tools: r.Tools,
		Attempt: r.Attempt, Attempts: r.Attempts, RetryOf: r.RetryOf, Retry: r.Retry, Trace: r.TraceParent}
	if o.Gate == "" && o.Cause == "" && !o.Truncated && len(o.Notes) == 0 && len(o.Tools) == 0 && o.Attempt == 0 && o.Retry == nil && o.Trace == "" {
		return nil, nil
	}
	b, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("encode outcome: %w", err)
	}
	return string(b), nil
}

// decodeOutcome fills r's outcome fields from the outcome column.
func decodeOutcome(r *engine.Run, col string) error {
	if col == "" {
		return nil
	}
	var o outcome
	if err := json.Unmarshal([]byte(col), &o); err != nil {
		return fmt.Errorf("decode outcome of run %s: %w", r.ID, err)
	}
	r.Gate, r.Cause, r.Truncated, r.Notes, r.Tools = o.Gate, o.Cause, o.Truncated, o.Notes, o.Tools
	r.Attempt, r.Attempts, r.RetryOf, r.Retry, r.TraceParent = o.Attempt, o.Attempts, o.RetryOf, o.Retry, o.Trace
	return nil
}

// appendNote returns the outcome column col of run id with note added to
// its notes.
func appendNote(id, col, note string) (any, error) {
	r := &engine.Run{ID: id}
	if err := decodeOutcome(r, col); err != nil {
		return nil, err
	}
	r.Notes = append(r.Notes, note)
	return outcomeArg(r)
}
