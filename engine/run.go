package engine

import (
	"encoding/json"
	"time"
)

// Status is the state of a run record.
type Status string

// Run statuses. queued and running are live; the others are final.
const (
	StatusQueued      Status = "queued"      // waiting for a concurrency slot or for its hook's run in flight
	StatusRunning     Status = "running"     //
	StatusCompleted   Status = "completed"   //
	StatusFailed      Status = "failed"      //
	StatusSkipped     Status = "skipped"     // a gate or a short-circuit stopped it; Reason says which
	StatusDropped     Status = "dropped"     // the global queue was full
	StatusCancelled   Status = "cancelled"   // cancelled by shutdown, cancel_previous or a handler
	StatusInterrupted Status = "interrupted" // hookd died while it was running
)

// Final reports whether the status can no longer change.
func (s Status) Final() bool { return s != StatusQueued && s != StatusRunning }

// Run is the record of one trigger of a hook: a run that executed, or one a
// gate stopped, with the reason why.
type Run struct {
	ID          string          `json:"id"`
	Hook        string          `json:"hook"`
	Trigger     string          `json:"trigger"`               // what fired it: schedule, catchup, event, manual
	Slot        time.Time       `json:"slot,omitzero"`         // the schedule slot it fires for (zero when not periodic)
	Status      Status          `json:"status"`                //
	Reason      string          `json:"reason,omitempty"`      // why it was skipped, dropped, cancelled or failed: "in_flight: ...", "cooldown: ..."
	Event       json.RawMessage `json:"event,omitempty"`       // event payload (JSON object), if any
	EventType   string          `json:"event_type,omitempty"`  // type of the event that fired it, if any
	Steps       []*StepResult   `json:"steps,omitempty"`       //
	Prompt      string          `json:"prompt,omitempty"`      //
	Response    string          `json:"response,omitempty"`    //
	ToolCalls   json.RawMessage `json:"transcript,omitempty"`  // model calls and tool calls (JSON), filled by the LLM stage
	Tokens      Tokens          `json:"tokens"`                //
	Error       string          `json:"error,omitempty"`       //
	Fingerprint string          `json:"fingerprint,omitempty"` // hash of the gathered context, for skip_llm_if_unchanged
	QueuedAt    time.Time       `json:"queued_at,omitzero"`    //
	StartedAt   time.Time       `json:"started_at,omitzero"`   //
	FinishedAt  time.Time       `json:"finished_at,omitzero"`  //
	Depth       int             `json:"depth,omitempty"`       // event chain depth that led to this run
}

// Tokens counts model usage as the server reported it. Known is false when
// the server did not report usage.
type Tokens struct {
	Prompt     int64 `json:"prompt"`
	Completion int64 `json:"completion"`
	Cached     int64 `json:"cached"`
	Known      bool  `json:"known"`
}

// Duration is how long the run took, or zero while it runs.
func (r *Run) Duration() time.Duration {
	if r.StartedAt.IsZero() || r.FinishedAt.IsZero() {
		return 0
	}
	return r.FinishedAt.Sub(r.StartedAt)
}

// StepResult is what one step gathered.
type StepResult struct {
	Index    int            `json:"index"`
	Name     string         `json:"name,omitempty"`
	Type     string         `json:"type"`
	Output   string         `json:"output"`           // primary output ({{step_N}})
	Fields   map[string]any `json:"fields,omitempty"` // kind-specific fields ({{step_N.field}})
	Error    string         `json:"error,omitempty"`
	Started  time.Time      `json:"started"`
	Duration time.Duration  `json:"duration_ns"`
}

// Field returns a named field of the result. "output" and "error" are
// always present.
func (r *StepResult) Field(name string) (any, bool) {
	switch name {
	case "output":
		return r.Output, true
	case "error":
		return r.Error, true
	case "name":
		return r.Name, true
	case "type":
		return r.Type, true
	}
	v, ok := r.Fields[name]
	return v, ok
}

// RunFilter selects run records. Zero fields select everything.
type RunFilter struct {
	Hook   string
	Status Status
	Limit  int // 0 means 50
	Before string
}
