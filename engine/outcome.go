package engine

import "time"

// ToolOutcome is how one tool call of the model stage ended.
type ToolOutcome string

// Tool call outcomes, also the outcome label of hookd_tool_calls_total.
const (
	ToolOK      ToolOutcome = "ok"      // the tool ran and its result went to the model
	ToolError   ToolOutcome = "error"   // the arguments did not fit, or the tool failed
	ToolDenied  ToolOutcome = "denied"  // a tool:call:before handler denied it: the tool did not run
	ToolBlocked ToolOutcome = "blocked" // a tool:call:after handler withheld its result
	ToolUnknown ToolOutcome = "unknown" // the model called a tool the hook does not offer
	ToolNotRun  ToolOutcome = "not_run" // a limit stopped it: max_rounds, too many calls in one answer
	// ToolNotRecorded is a replay's call that the recorded run has no
	// result for: the model got a tool error, the tool did not run.
	ToolNotRecorded ToolOutcome = "not_recorded"
)

// ToolUse is one tool call of a run's model stage, as the model stage
// recorded it: the run's Tools, the metrics, the notifications and the
// hook.run.* payload all read this one value.
type ToolUse struct {
	Round       int           `json:"round"`                  // the model call (from 1) that asked for it
	ID          string        `json:"id"`                     // the call's id
	IDGenerated bool          `json:"id_generated,omitempty"` // the server sent none; hookd made this one
	Name        string        `json:"name"`                   // as the model called it
	Tool        string        `json:"tool,omitempty"`         // as hooks list it: read_file, github.search_issues ("" when unknown)
	Server      string        `json:"server,omitempty"`       // the MCP server that serves it ("" for a built-in tool)
	Outcome     ToolOutcome   `json:"outcome"`                //
	Arguments   string        `json:"arguments"`              // as the model sent them
	Result      string        `json:"result,omitempty"`       // what the model got back, capped
	ResultBytes int           `json:"result_bytes,omitempty"` // its full size before capping
	Truncated   bool          `json:"truncated,omitempty"`    //
	Error       string        `json:"error,omitempty"`        // sent to the model as the result
	Started     time.Time     `json:"started,omitzero"`       // when it began (a trace's tool span)
	Duration    time.Duration `json:"duration_ns"`            //
	// DeniedBy names the tool:call:before handler that denied the call
	// (the tool did not run; Error says why).
	DeniedBy string `json:"denied_by,omitempty"`
	// InputAmendedBy names the tool:call:before handler that replaced the
	// arguments with AmendedArguments, which the tool ran with.
	InputAmendedBy   string `json:"input_amended_by,omitempty"`
	AmendedArguments string `json:"amended_arguments,omitempty"`
	// ResultAmendedBy names the tool:call:after handler that replaced
	// the result, or withheld it (ToolBlocked).
	ResultAmendedBy string `json:"result_amended_by,omitempty"`
}

// Label names the tool for people and metrics: as hooks list it, or as
// the model called it when the hook does not offer it.
func (u *ToolUse) Label() string {
	if u.Tool != "" {
		return u.Tool
	}
	return u.Name
}

// RunOutcome is what a hook.run.* event tells the subscribers in the
// process (metrics, notifications), as typed values: they read it instead
// of the event's Data, which is its JSON form for the store, the API and
// the hooks that react to it.
type RunOutcome struct {
	// Run is a snapshot of the run record as stored (redacted): final for
	// every event but hook.run.started.
	Run *Run
	// Lateness is, on hook.run.started of a scheduled run, how long after
	// its jittered slot it started; Scheduled says it applies.
	Lateness  time.Duration
	Scheduled bool
	// Intermediate is set on the final event of a run that a retry
	// follows when the hook's retry.notify is final (the default):
	// notifications wait for the last attempt.
	Intermediate bool
}
