package engine

import (
	"encoding/json"
	"fmt"
	"strings"
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
	StatusSkipped     Status = "skipped"     // a gate refused the trigger; Gate and Reason say which
	StatusDropped     Status = "dropped"     // the global queue was full
	StatusCancelled   Status = "cancelled"   // cancelled by shutdown, cancel_previous or a handler
	StatusInterrupted Status = "interrupted" // hookd died while it was running
)

// Statuses lists every run status, live ones first.
var Statuses = []Status{
	StatusQueued, StatusRunning, StatusCompleted, StatusFailed,
	StatusSkipped, StatusDropped, StatusCancelled, StatusInterrupted,
}

// Cause says what made a run end the way it did, where its status alone
// does not: why a failed run failed, why a cancelled one was cancelled,
// and that a completed run needed no model (short_circuit).
type Cause string

// Causes.
const (
	CauseShortCircuit   Cause = "short_circuit"   // completed: a step's skip_llm_if_* condition held; the model was not needed
	CauseStepFailed     Cause = "step_failed"     // failed: a step exited non-zero or errored, and that fails this hook
	CauseTruncated      Cause = "truncated"       // failed: the model's answer was cut (finish_reason length) and llm.on_truncated is fail
	CauseTimeout        Cause = "timeout"         // failed: the run exceeded its timeout
	CauseCancelPrevious Cause = "cancel_previous" // cancelled: a newer trigger of the hook superseded it
	CauseShutdown       Cause = "shutdown"        // cancelled: hookd stopped
	CauseHandler        Cause = "handler"         // cancelled: a lifecycle handler cancelled it
	CauseBudget         Cause = "budget"          // failed: budget.max_tokens_per_run was reached
	CauseOverBudget     Cause = "over_budget"     // completed: the model answered, but its answering call took the run past budget.max_tokens_per_run
	CauseMaxRounds      Cause = "max_rounds"      // failed: llm.max_rounds was reached
	CauseModelError     Cause = "model_error"     // failed: the model stage failed (the server, the settings, the tools)
	CauseMCPServer      Cause = "mcp_server"      // failed: an MCP server the hook's tools name did not start or has no such tool; no model was called
	CausePrompt         Cause = "prompt"          // failed: the prompt did not render
	CauseNoModel        Cause = "no_model"        // failed: the hook needs a model and hookd has no client
	CauseInternal       Cause = "internal"        // failed: hookd could not record or decode the run
)

// Final reports whether the status can no longer change.
func (s Status) Final() bool { return s != StatusQueued && s != StatusRunning }

// Run is the record of one trigger of a hook: a run that executed, or one a
// gate stopped, with the reason why.
type Run struct {
	ID          string          `json:"id"`
	Hook        string          `json:"hook"`
	Project     string          `json:"project_id,omitempty"`  // the hook's project_id label (agent-queue), when it has one
	Trigger     string          `json:"trigger"`               // what fired it: schedule, catchup, event, manual, tool:HOOK (see FromTool)
	Slot        time.Time       `json:"slot,omitzero"`         // the schedule slot it fires for (zero when not periodic)
	Status      Status          `json:"status"`                //
	Reason      string          `json:"reason,omitempty"`      // why it was skipped, dropped, cancelled or failed: "in_flight: ...", "cooldown: ..."
	Gate        string          `json:"gate,omitempty"`        // the gate that refused the trigger (Gate* names), for skipped and dropped runs
	Cause       Cause           `json:"cause,omitempty"`       // what ended the run, where its status alone does not say
	Truncated   bool            `json:"truncated,omitempty"`   // the model's answer was cut by its output limit (finish_reason length)
	Notes       []string        `json:"notes,omitempty"`       // what a person should know about the run that is not a failure
	Procs       []ProcGroup     `json:"procs,omitempty"`       // process groups its steps started (filled when recovering an interrupted run)
	Event       json.RawMessage `json:"event,omitempty"`       // event payload (JSON object), if any
	EventType   string          `json:"event_type,omitempty"`  // type of the event that fired it, if any
	Steps       []*StepResult   `json:"steps,omitempty"`       //
	Prompt      string          `json:"prompt,omitempty"`      //
	Response    string          `json:"response,omitempty"`    //
	ToolCalls   json.RawMessage `json:"transcript,omitempty"`  // model calls and tool calls (JSON), filled by the LLM stage
	Tools       []ToolUse       `json:"tools,omitempty"`       // the model stage's tool calls, in order, filled by the LLM stage
	Tokens      Tokens          `json:"tokens"`                //
	Error       string          `json:"error,omitempty"`       //
	Fingerprint string          `json:"fingerprint,omitempty"` // hash of the gathered context, for skip_llm_if_unchanged
	QueuedAt    time.Time       `json:"queued_at,omitzero"`    //
	StartedAt   time.Time       `json:"started_at,omitzero"`   //
	FinishedAt  time.Time       `json:"finished_at,omitzero"`  //
	Depth       int             `json:"depth,omitempty"`       // event chain depth that led to this run
	TraceParent TraceParent     `json:"traceparent,omitempty"` // the caller's trace it continues (its event's, or its fire's)
	TraceLinks  TraceLinks      `json:"trace_links,omitzero"`  // the traces of the triggers coalesced into it (overlap: queue), which its trace links to
	// Repeats is how many identical records of a paused or disabled hook
	// this one stands for (0 or 1: itself only): the first was refused at
	// QueuedAt, the latest at FinishedAt, and Event and Slot are the
	// latest's.
	Repeats int `json:"repeats,omitempty"`
	// CheckFailed names the check step that did not pass (its name, or
	// step_N; check.go), "" when none did. It qualifies the run's status
	// whatever the model then did: a completed run with it is no success.
	CheckFailed string `json:"check_failed,omitempty"`

	// HookVersion is the hook's Source.Version when the run was triggered.
	// A cluster's nodes claim only runs of the version of the hook they
	// loaded (store/postgres); single-node stores need not keep it.
	HookVersion string `json:"-"`
	// PrevStart is when the hook's previous run started (zero: none), as
	// the node that started this one knew it: {{last_run_time}} and the
	// prompt's seconds since the last run. A cluster's store keeps it for
	// the node that executes the run; single-node stores need not.
	PrevStart time.Time `json:"-"`
	// EventSeq is the seq of the stored event, still pending, whose
	// dispatch triggered this run (0: none, or its start marks the event
	// dispatched itself). The store records the event's dispatch to
	// the run's hook (Store.DispatchedTo) with the run's first
	// record, in its transaction, so that a dispatch of the event again
	// after a crash or a failover passes the hook by. Not kept with the
	// run.
	EventSeq int64 `json:"-"`

	// A run of a hook with retry: is attempt Attempt of Attempts (1 for
	// the first); a retry names the first run of its chain in RetryOf.
	// Retry is the retry scheduled after this run, if any.
	Attempt  int        `json:"attempt,omitempty"`
	Attempts int        `json:"attempts,omitempty"`
	RetryOf  string     `json:"retry_of,omitempty"`
	Retry    *RetryPlan `json:"retry,omitempty"`
}

// Tokens counts model usage as the server reported it. Known is false when
// the server did not report usage.
type Tokens struct {
	Prompt     int64 `json:"prompt"`
	Completion int64 `json:"completion"`
	Cached     int64 `json:"cached"`
	Known      bool  `json:"known"`
}

// StepErrors counts the steps that errored (could not run) without
// failing the run.
func (r *Run) StepErrors() int {
	n := 0
	for _, s := range r.Steps {
		if s.Error != "" {
			n++
		}
	}
	return n
}

// AttemptText is "2 of 3" for a run of a hook with retry: that is a retry
// (attempt 2 on) or after which a retry is scheduled, else "": a first
// attempt that needs no retry is just a run.
func (r *Run) AttemptText() string {
	if r.Attempts <= 1 || r.Attempt <= 0 || r.Attempt == 1 && r.Retry == nil {
		return ""
	}
	return fmt.Sprintf("%d of %d", r.Attempt, r.Attempts)
}

// ExtraError is the run's error when it says more than its reason: ""
// when it is the reason (a step that failed is both).
func (r *Run) ExtraError() string {
	if r.Error == r.Reason {
		return ""
	}
	return r.Error
}

// Why is the run's reason and, when it says more, its error, on one line.
func (r *Run) Why() string {
	return strings.TrimSpace(r.Reason + " " + r.ExtraError())
}

// Headline is the run's status as a person reads it: the status, then
// what qualifies it — "completed, model not needed", "completed, 1 step
// error", "completed, answer truncated", "completed, check failed: tests",
// "failed (timeout)".
func (r *Run) Headline() string {
	s := string(r.Status)
	var more []string
	switch {
	case r.Cause == CauseShortCircuit:
		more = append(more, "model not needed")
	case r.Cause == CauseOverBudget:
		more = append(more, "over budget")
	case r.Cause != "" && r.Status != StatusCompleted:
		s += " (" + string(r.Cause) + ")"
	}
	if r.CheckFailed != "" {
		more = append(more, "check failed: "+r.CheckFailed)
	}
	if r.Truncated {
		more = append(more, "answer truncated")
	}
	if n := r.StepErrors(); n > 0 && r.Cause != CauseStepFailed {
		word := "step errors"
		if n == 1 {
			word = "step error"
		}
		more = append(more, fmt.Sprintf("%d %s", n, word))
	}
	if a := r.AttemptText(); a != "" {
		more = append(more, "attempt "+a)
	}
	if r.Retry != nil {
		more = append(more, "retry scheduled")
	}
	for _, m := range more {
		s += ", " + m
	}
	return s
}

// Duration is how long the run took, or zero while it runs.
func (r *Run) Duration() time.Duration {
	if r.StartedAt.IsZero() || r.FinishedAt.IsZero() {
		return 0
	}
	return r.FinishedAt.Sub(r.StartedAt)
}

// StepResult is what one step gathered. The facts that decide a run and
// that people read are typed fields; the rest of what a kind declares is
// in Fields, data for placeholders. Its JSON (the store, the API) writes
// both in one "fields" object (see MarshalJSON).
type StepResult struct {
	Index  int
	Name   string
	Type   string
	Output string // primary output ({{step_N}})

	ExitCode   *int // a command's exit code (shell, run_tests, git_diff, file_diff); nil for a step that runs none
	StatusCode int  // the HTTP status of the response (http); 0 when there was none
	Count      *int // how many items the step gathered (files, commits, rows, runs); nil for a kind that counts none
	TimedOut   bool // the step's command was stopped by its timeout
	Truncated  bool // what the step kept was cut at its limit
	Skipped    bool // the step's if: condition was false: it did not run

	Fields   map[string]any // the kind's other fields ({{step_N.field}}), never the typed ones above
	Error    string
	Started  time.Time     // on the engine's clock
	Duration time.Duration // on the engine's clock; the duration_ms field of the kinds that declare one
}

// RunFilter selects run records. Zero fields select everything.
type RunFilter struct {
	Hook   string
	Status Status
	Limit  int // 0 means 50
	Before string
	Since  time.Time // only runs queued at or after it
	Until  time.Time // only runs queued before it
}

// RunBrief is what a chart needs of a run: which hook, how it ended, and
// when.
type RunBrief struct {
	ID          string
	Hook        string
	Status      Status
	CheckFailed string // Run.CheckFailed
	QueuedAt    time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
}

// Duration is how long the run ran (0 when it did not start or has not
// finished).
func (b RunBrief) Duration() time.Duration {
	if b.StartedAt.IsZero() || b.FinishedAt.IsZero() {
		return 0
	}
	return b.FinishedAt.Sub(b.StartedAt)
}
