package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// Progress events say what a run in flight is doing, as it happens: each
// step as it starts and finishes, and in the model stage each model call
// and each tool call. They go where every engine event goes — to the
// subscribers (metrics, the live stream: hookd watch, GET /v1/stream,
// hookd fire --wait) and to the event log — but they are never dispatched
// to hooks: a hook whose trigger could only match them is a load error
// (triggers.ProgressOnly), and one with a wider pattern (hook.**, **) is
// not fired by them. A hook reacting to every step of every run, its own
// included, would start (or record a skip of) a run per step; react to a
// run's outcome with hook.run.* instead.
const (
	// EventStepStarted: {hook, run_id, index, name, kind, started_at}.
	EventStepStarted = "hook.step.started"
	// EventStepFinished: EventStepStarted's fields and duration_ms,
	// outcome (StepOutcome), exit_code (commands), status_code (an http
	// answer of 4xx or 5xx), error, fails_run.
	EventStepFinished = "hook.step.finished"
	// EventLLMRound: one model call ended: {hook, run_id, round,
	// duration_ms, attempts, tool_calls, finish_reason, tokens,
	// answered_by, error}; duration_ms is the whole call, its retries and
	// the waits between them included, and attempts (only when above 1)
	// counts its requests.
	EventLLMRound = "hook.llm.round"
	// EventToolCalled: one tool call ended: {hook, run_id, round, tool,
	// outcome (ToolOutcome), duration_ms, error}.
	EventToolCalled = "hook.tool.called"
)

// ProgressEventType reports whether typ is a progress event: streamed and
// logged, never dispatched to hooks.
func ProgressEventType(typ string) bool {
	switch typ {
	case EventStepStarted, EventStepFinished, EventLLMRound, EventToolCalled:
		return true
	}
	return false
}

// StepOutcome is how a finished step ended.
type StepOutcome string

// Step outcomes.
const (
	StepOK     StepOutcome = "ok"     // it ran; a command exited 0, a server answered 1xx-3xx
	StepExit   StepOutcome = "exit"   // a command exited non-zero (exit_code says how)
	StepHTTP   StepOutcome = "http"   // a server answered 4xx or 5xx (status_code says which)
	StepFailed StepOutcome = "failed" // it could not run or gather what it should (error says why)
)

// OutcomeOfStep says how a step's result ended: the one place that reads
// an exit code or an HTTP status as a failure (stepFailure decides, from
// this, whether it fails the run).
func OutcomeOfStep(r *StepResult) StepOutcome {
	switch {
	case r.Error != "":
		return StepFailed
	case r.ExitCode != nil && *r.ExitCode != 0:
		return StepExit
	case r.StatusCode >= 400:
		return StepHTTP
	}
	return StepOK
}

// OutcomeText says how a finished step ended as the CLI writes it: "ok",
// "exit 2", "http 503", "failed".
func (p *StepProgress) OutcomeText() string {
	switch {
	case p.Outcome == StepExit && p.ExitCode != nil:
		return fmt.Sprintf("exit %d", *p.ExitCode)
	case p.Outcome == StepHTTP && p.StatusCode != 0:
		return fmt.Sprintf("http %d", p.StatusCode)
	}
	return string(p.Outcome)
}

// StepProgress is one step of a run in flight, as its progress events
// and Engine.Progress report it. Outcome is empty while it runs.
type StepProgress struct {
	Index    int           `json:"index"`
	Name     string        `json:"name,omitempty"`
	Kind     string        `json:"kind"`
	Started  time.Time     `json:"started_at"`
	Duration time.Duration `json:"-"` // duration_ms in JSON
	Outcome  StepOutcome   `json:"outcome,omitempty"`
	ExitCode *int          `json:"exit_code,omitempty"`
	// StatusCode is an http answer's status, when the outcome is StepHTTP.
	StatusCode int    `json:"status_code,omitempty"`
	Error      string `json:"error,omitempty"` // redacted
	FailsRun   bool   `json:"fails_run,omitempty"`
}

// Label names the step as Run.Steps and the CLI do: "step_0 (tests)".
func (p *StepProgress) Label() string {
	d := StepDef{Index: p.Index, Name: p.Name}
	return d.Label()
}

type stepProgressJSON StepProgress

// MarshalJSON writes the duration in milliseconds, as the events do.
func (p StepProgress) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		stepProgressJSON
		DurationMS int64 `json:"duration_ms"`
	}{stepProgressJSON(p), p.Duration.Milliseconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (p *StepProgress) UnmarshalJSON(b []byte) error {
	var v struct {
		stepProgressJSON
		DurationMS int64 `json:"duration_ms"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = StepProgress(v.stepProgressJSON)
	p.Duration = time.Duration(v.DurationMS) * time.Millisecond
	return nil
}

// data is the step's event payload.
func (p *StepProgress) data(run *Run) map[string]any {
	n := 6 // sized for what it holds: a map that grows past 8 is built twice
	if p.Outcome != "" {
		n = 12
	}
	d := make(map[string]any, n)
	d["hook"], d["run_id"], d["index"], d["name"], d["kind"] = run.Hook, run.ID, p.Index, p.Name, p.Kind
	d["started_at"] = p.Started.UTC().Format(time.RFC3339Nano)
	if p.Outcome == "" {
		return d
	}
	d["duration_ms"] = p.Duration.Milliseconds()
	d["outcome"] = string(p.Outcome)
	if p.ExitCode != nil {
		d["exit_code"] = *p.ExitCode
	}
	if p.StatusCode != 0 {
		d["status_code"] = p.StatusCode
	}
	if p.Error != "" {
		d["error"] = p.Error
	}
	if p.FailsRun {
		d["fails_run"] = true
	}
	return d
}

// RunProgress is what a run in flight has done so far: the steps that
// finished, the one running, and in the model stage how many model and
// tool calls it made. The loop keeps it from the progress events.
type RunProgress struct {
	RunID     string         `json:"run_id"`
	Hook      string         `json:"hook"`
	Trigger   string         `json:"trigger"`
	StartedAt time.Time      `json:"started_at"`
	Steps     []StepProgress `json:"steps"`             // finished, in order
	Current   *StepProgress  `json:"current,omitempty"` // the step running now
	// Since is when the current phase began: the current step's start,
	// else the end of the last step or model call.
	Since     time.Time `json:"since"`
	Rounds    int       `json:"rounds,omitempty"`     // model calls ended
	ToolCalls int       `json:"tool_calls,omitempty"` // tool calls ended
}

// Elapsed is how long the run has been running at now.
func (p *RunProgress) Elapsed(now time.Time) time.Duration { return max(now.Sub(p.StartedAt), 0) }

// apply updates p with one of its run's progress events.
func (p *RunProgress) apply(ev *Event) {
	switch ev.Type {
	case EventStepStarted:
		if ev.Step != nil {
			cp := *ev.Step
			p.Current, p.Since = &cp, cp.Started
		}
	case EventStepFinished:
		if ev.Step != nil {
			p.Steps = append(p.Steps, *ev.Step)
			p.Current, p.Since = nil, ev.Time
		}
	case EventLLMRound:
		p.Rounds++
		p.Since = ev.Time
	case EventToolCalled:
		p.ToolCalls++
	}
}

// clone is a copy of p for a caller off the loop.
func (p *RunProgress) clone() RunProgress {
	cp := *p
	cp.Steps = append([]StepProgress(nil), p.Steps...)
	if p.Current != nil {
		c := *p.Current
		cp.Current = &c
	}
	return cp
}

// stepEvent holds a step's progress event in its run's outbox.
func (e *Engine) stepEvent(out *outbox, typ string, run *Run, p StepProgress) {
	ev := &Event{ID: NewID(), Type: typ, Data: p.data(run), Source: "engine", Depth: run.Depth + 1, Step: &p}
	e.hold(out, ev)
}

// stepStarted and stepFinished hold a step's progress events in its run's
// outbox; a preview publishes none.
func (e *Engine) stepStarted(out *outbox, run *Run, def *StepDef, start time.Time) {
	e.stepEvent(out, EventStepStarted, run, StepProgress{Index: def.Index, Name: def.Name, Kind: def.Type, Started: start})
}

func (e *Engine) stepFinished(out *outbox, run *Run, def *StepDef, res *StepResult, failsRun bool) {
	p := StepProgress{
		Index: def.Index, Name: def.Name, Kind: def.Type, Started: res.Started, Duration: res.Duration,
		Outcome: OutcomeOfStep(res), Error: res.Error, FailsRun: failsRun,
	}
	if res.ExitCode != nil {
		code := *res.ExitCode
		p.ExitCode = &code
	}
	if p.Outcome == StepHTTP {
		p.StatusCode = res.StatusCode
	}
	e.stepEvent(out, EventStepFinished, run, p)
}

// Progress returns what the run in flight with this id has done so far,
// or false when no such run is in flight.
func (e *Engine) Progress(ctx context.Context, runID string) (RunProgress, bool, error) {
	var (
		out RunProgress
		ok  bool
	)
	err := e.do(ctx, func(s *state) {
		if ent := s.live[runID]; ent != nil && ent.active != nil && ent.active.run.ID == runID && ent.active.progress != nil {
			out, ok = ent.active.progress.clone(), true
		}
	})
	return out, ok, err
}

// InFlight returns the progress of every run in flight, oldest first.
func (e *Engine) InFlight(ctx context.Context) ([]RunProgress, error) {
	out := []RunProgress{}
	err := e.do(ctx, func(s *state) {
		for _, m := range []map[string]*entry{s.hooks, s.retired} {
			for _, ent := range m {
				if act := ent.active; act != nil && act.progress != nil {
					out = append(out, act.progress.clone())
				}
			}
		}
	})
	sort.Slice(out, func(i, j int) bool {
		if !out[i].StartedAt.Equal(out[j].StartedAt) {
			return out[i].StartedAt.Before(out[j].StartedAt)
		}
		return out[i].RunID < out[j].RunID
	})
	return out, err
}

// track applies a progress event to its run's progress, on the loop.
func (s *state) track(ev *Event) {
	id, _ := ev.Data["run_id"].(string)
	ent := s.live[id]
	if ent == nil || ent.active == nil || ent.active.run.ID != id || ent.active.progress == nil {
		return
	}
	ent.active.progress.apply(ev)
}
