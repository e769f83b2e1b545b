package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/process"
	"github.com/hookd/hookd/sandbox"
)

// MaxOutput caps what a command handler's stdout and stderr each keep.
const MaxOutput = 64 << 10

// killGrace is the pause between SIGTERM and SIGKILL for a command that
// ran past its timeout.
const killGrace = 500 * time.Millisecond

// Input is the JSON a command handler reads on stdin. Which fields are
// set depends on the point, as engine.Payload says.
type Input struct {
	HookEventName string          `json:"hook_event_name"` // the point: tool:call:before, ...
	Hook          string          `json:"hook,omitempty"`
	RunID         string          `json:"run_id,omitempty"`
	Cwd           string          `json:"cwd,omitempty"` // the hook's workdir
	ToolName      string          `json:"tool_name,omitempty"`
	ToolInput     json.RawMessage `json:"tool_input,omitempty"`
	ToolResult    *string         `json:"tool_result,omitempty"`
	ToolError     string          `json:"tool_error,omitempty"`
	Prompt        string          `json:"prompt,omitempty"`
	Messages      json.RawMessage `json:"messages,omitempty"`
	Round         int             `json:"round,omitempty"`
	Model         string          `json:"model,omitempty"`    // llm:call:*: the model called
	Response      *string         `json:"response,omitempty"` // llm:call:after
	// Usage is the token usage of the model call (llm:call:after), as
	// the server reported it (known: false when it reported none).
	Usage *engine.Tokens `json:"usage,omitempty"`
	// ToolCallID is the id of the model's tool call (tool:call:*),
	// DurationMS how long the tool ran (tool:call:after).
	ToolCallID string      `json:"tool_call_id,omitempty"`
	DurationMS *int64      `json:"duration_ms,omitempty"`
	Step       *StepInput  `json:"step,omitempty"`
	Run        *RunInput   `json:"run,omitempty"`
	Event      *EventInput `json:"event,omitempty"`
	// Record is the run record record:before guards, as `hookd run
	// --json` shows it.
	Record json.RawMessage `json:"record,omitempty"`
	// Notification is the message notify:before guards (the generic
	// webhook form), NotifyTarget the name of its target.
	Notification json.RawMessage `json:"notification,omitempty"`
	NotifyTarget string          `json:"notify_target,omitempty"`
	// NotifyAttempts (notify:delivered, notify:failed) is how many posts
	// were made; NotifyError (notify:failed) why it was given up.
	NotifyAttempts int                `json:"notify_attempts,omitempty"`
	NotifyError    string             `json:"notify_error,omitempty"`
	Daemon         *engine.DaemonInfo `json:"daemon,omitempty"` // daemon:start, daemon:stop
}

// StepInput describes the step at step:before and step:after.
type StepInput struct {
	Index  int    `json:"index"`
	Name   string `json:"name,omitempty"`
	Type   string `json:"type"`
	Output string `json:"output,omitempty"` // step:after
	Error  string `json:"error,omitempty"`  // step:after
}

// RunInput describes the run at run:before and run:after; at run:after
// it is the final run record: besides the status, its answer, tokens,
// the tools the model called, its duration and its steps, with the
// outputs (the answer and the steps' outputs) capped at MaxRunOutputs
// together and Cut saying what was cut.
type RunInput struct {
	Trigger     string         `json:"trigger,omitempty"`
	Status      string         `json:"status,omitempty"`
	Reason      string         `json:"reason,omitempty"`
	Error       string         `json:"error,omitempty"`
	Cause       string         `json:"cause,omitempty"`        // run:after
	CheckFailed string         `json:"check_failed,omitempty"` // run:after
	Answer      *string        `json:"answer,omitempty"`       // run:after: the model's answer
	Tokens      *engine.Tokens `json:"tokens,omitempty"`       // run:after
	Tools       []string       `json:"tools,omitempty"`        // run:after: the model's tool calls, in order, as hooks list the tools
	DurationMS  *int64         `json:"duration_ms,omitempty"`  // run:after: from start to end
	StartedAt   time.Time      `json:"started_at,omitzero"`    // run:after
	FinishedAt  time.Time      `json:"finished_at,omitzero"`   // run:after
	Steps       []StepInput    `json:"steps,omitempty"`        // run:after: each step's output and error
	// Cut lists the outputs cut to keep them within MaxRunOutputs, each
	// as "FIELD: N bytes, M kept" (answer, steps[I].output), in order.
	Cut []string `json:"cut,omitempty"`
}

// MaxRunOutputs caps the outputs of the final run record a run:after
// handler reads: the answer first, then the steps' outputs in order,
// each cut (at a character boundary) to what is left.
const MaxRunOutputs = 64 << 10

// finalRun is the run:after input of r.
func finalRun(r *engine.Run) *RunInput {
	in := &RunInput{Trigger: r.Trigger, Status: string(r.Status), Reason: r.Reason, Error: r.Error, Cause: string(r.Cause),
		CheckFailed: r.CheckFailed, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
	tokens := r.Tokens
	in.Tokens = &tokens
	ms := r.Duration().Milliseconds()
	in.DurationMS = &ms
	for _, t := range r.Tools {
		name := t.Tool
		if name == "" {
			name = t.Name // a tool the run does not have
		}
		in.Tools = append(in.Tools, name)
	}
	left := MaxRunOutputs
	keep := func(field, s string) string {
		if len(s) <= left {
			left -= len(s)
			return s
		}
		n := left
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		in.Cut = append(in.Cut, fmt.Sprintf("%s: %d bytes, %d kept", field, len(s), n))
		left -= n
		return s[:n]
	}
	answer := keep("answer", r.Response)
	in.Answer = &answer
	for i, s := range r.Steps {
		in.Steps = append(in.Steps, StepInput{Index: s.Index, Name: s.Name, Type: s.Type,
			Output: keep(fmt.Sprintf("steps[%d].output", i), s.Output), Error: s.Error})
	}
	return in
}

// EventInput describes the inbound event at event:claim.
type EventInput struct {
	ID     string         `json:"id"`
	Type   string         `json:"type"`
	Source string         `json:"source,omitempty"`
	Data   map[string]any `json:"data"`
}

// Output is what a command handler may print on stdout when it exits 0.
// Unknown keys are ignored.
type Output struct {
	Decision        string            `json:"decision,omitempty"` // allow (default), block, claim
	Reason          string            `json:"reason,omitempty"`
	UpdatedInput    json.RawMessage   `json:"updated_input,omitempty"`    // tool:call:before
	UpdatedPrompt   *string           `json:"updated_prompt,omitempty"`   // prompt:render:after
	UpdatedResult   *string           `json:"updated_result,omitempty"`   // tool:call:after
	UpdatedMessages json.RawMessage   `json:"updated_messages,omitempty"` // llm:call:before
	Answer          *string           `json:"answer,omitempty"`           // llm:call:before
	UpdatedEnv      map[string]string `json:"updated_env,omitempty"`      // step:before
	DropFields      []string          `json:"drop_fields,omitempty"`      // record:before
	UpdatedSummary  *string           `json:"updated_summary,omitempty"`  // notify:before
}

// Options are the registration options of h. The registry enforces the
// timeout too: when it runs out, the call's context ends and the
// command's process group is killed.
func Options(h *config.Handler) engine.HandlerOptions {
	return engine.HandlerOptions{
		Priority: h.Priority, PrioritySet: true, Label: h.Label, Plugin: h.Plugin, FailClosed: h.FailClosed, Source: h.File,
		Timeout: h.Timeout,
	}
}

// Policy is the sandbox policy of h's command: its Dir writable with
// what sandbox: writes declares, no network unless sandbox: network
// says, hookd's own files hidden.
func Policy(h *config.Handler) *sandbox.Policy {
	p := &sandbox.Policy{Workdir: h.Dir, Writes: h.Sandbox.Writes, Hidden: h.Hidden, Key: "handler:" + h.File}
	if h.Sandbox.Network != nil {
		p.Network = *h.Sandbox.Network
	}
	if p.Workdir == "" {
		p.Workdir, _ = os.Getwd()
	}
	return p
}

// Command returns the lifecycle handler that runs h's command. environ is
// hookd's environment (nil: the process's own), of which the command gets
// the allowlisted part and h's env_passthrough (engine.ChildEnv);
// HOOKD_POINT, HOOKD_HOOK and HOOKD_RUN_ID are added.
func Command(h *config.Handler, environ []string) engine.Handler {
	if environ == nil {
		environ = os.Environ()
	}
	environ = engine.ChildEnv(environ, h.EnvPassthrough, nil)
	policy := Policy(h)
	return func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
		hook := ""
		if p.Hook != nil {
			hook = p.Hook.Name
		}
		if !h.Matches(hook, p.ToolName) {
			return engine.Decision{}, nil
		}
		in, err := json.Marshal(input(p))
		if err != nil {
			return engine.Decision{}, fmt.Errorf("encode payload: %w", err)
		}
		env := append(append([]string(nil), environ...),
			"HOOKD_POINT="+string(p.Point), "HOOKD_HOOK="+hook, "HOOKD_RUN_ID="+p.RunID)
		if p.Notification != nil {
			// One more than the run the notification is about: hookd fire
			// and hookd emit run from here pass it on (engine.Payload.Depth).
			env = append(env, "HOOKD_DEPTH="+strconv.Itoa(p.Depth+1))
		}
		// Its followers see what it writes as it writes it, redacted; its
		// answer is read as it wrote it.
		live, red := p.Live()
		cmd := &process.Command{
			Argv: h.Command, Dir: h.Dir, Stdin: bytes.NewReader(in), Timeout: h.Timeout,
			KillGrace: killGrace, MaxOutput: MaxOutput, Env: env, Policy: policy, Live: live, LiveRedactor: red,
		}
		res := cmd.Run(ctx)
		return decide(p.Point, res)
	}
}

// decide reads a command's answer.
func decide(point engine.Point, res process.CommandResult) (engine.Decision, error) {
	switch {
	case res.TimedOut:
		return engine.Decision{}, fmt.Errorf("command timed out after %s", res.Duration.Round(time.Millisecond))
	case res.Err != nil:
		return engine.Decision{}, res.Err
	case res.ExitCode == 2:
		reason := strings.TrimSpace(res.Stderr)
		if point.Model() == engine.ModelClaiming {
			return engine.Decision{Claimed: true, Reason: reason}, nil // a claim may give no reason
		}
		if reason == "" {
			reason = "blocked (exit 2)"
		}
		return engine.Decision{Cancel: true, Reason: reason}, nil
	case res.ExitCode != 0:
		msg := fmt.Sprintf("exit status %d", res.ExitCode)
		if e := strings.TrimSpace(res.Stderr); e != "" {
			msg += ": " + oneLine(e, 500)
		}
		return engine.Decision{}, errors.New(msg)
	}
	out := strings.TrimSpace(res.Stdout)
	if !strings.HasPrefix(out, "{") {
		return engine.Decision{}, nil // plain text (or nothing): allow
	}
	var o Output
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		return engine.Decision{}, fmt.Errorf("stdout is not a valid JSON object: %w", err)
	}
	var d engine.Decision
	switch o.Decision {
	case "", "allow", "approve":
	case "block", "deny":
		d.Cancel, d.Reason = true, o.Reason
		if d.Reason == "" {
			d.Reason = "blocked"
		}
		if point.Model() == engine.ModelClaiming {
			d.Cancel, d.Claimed = false, true
		}
		return d, nil
	case "claim":
		d.Claimed, d.Reason = true, o.Reason
		return d, nil
	default:
		return d, fmt.Errorf("stdout: unknown decision %q (allow, block or claim)", o.Decision)
	}
	set := func(k string, v any) {
		if d.Changes == nil {
			d.Changes = map[string]any{}
		}
		d.Changes[k] = v
	}
	if len(o.UpdatedInput) > 0 {
		set(engine.ChangeToolInput, o.UpdatedInput)
	}
	if o.UpdatedPrompt != nil {
		set(engine.ChangePrompt, *o.UpdatedPrompt)
	}
	if o.UpdatedResult != nil {
		set(engine.ChangeToolResult, *o.UpdatedResult)
	}
	if len(o.UpdatedMessages) > 0 {
		set(engine.ChangeMessages, o.UpdatedMessages)
	}
	if o.Answer != nil {
		set(engine.ChangeAnswer, *o.Answer)
	}
	if o.UpdatedEnv != nil {
		set(engine.ChangeEnv, o.UpdatedEnv)
	}
	if len(o.DropFields) > 0 {
		set(engine.ChangeDropFields, o.DropFields)
	}
	if o.UpdatedSummary != nil {
		set(engine.ChangeSummary, *o.UpdatedSummary)
	}
	return d, nil
}

// input builds the stdin JSON of a payload.
func input(p *engine.Payload) *Input {
	in := &Input{HookEventName: string(p.Point), RunID: p.RunID, ToolName: p.ToolName, ToolCallID: p.ToolCallID, ToolInput: p.ToolInput,
		ToolError: p.ToolError, Prompt: p.Prompt, Messages: p.Messages, Round: p.Round, Model: p.Model, Usage: p.Usage}
	if p.Hook != nil {
		in.Hook, in.Cwd = p.Hook.Name, p.Hook.Workdir
	}
	switch p.Point {
	case engine.PointToolCallAfter:
		in.ToolResult = &p.ToolResult
		ms := p.ToolTime.Milliseconds()
		in.DurationMS = &ms
	case engine.PointLLMCallAfter:
		in.Response = &p.Response
	}
	if p.Step != nil {
		in.Step = &StepInput{Index: p.Step.Index, Name: p.Step.Name, Type: p.Step.Type}
		if r := p.StepResult; r != nil {
			in.Step.Output, in.Step.Error = r.Output, r.Error
		}
	}
	if r := p.Run; r != nil {
		switch p.Point {
		case engine.PointRunAfter:
			in.Run = finalRun(r)
		default:
			in.Run = &RunInput{Trigger: r.Trigger, Status: string(r.Status), Reason: r.Reason, Error: r.Error}
		}
		if p.Point == engine.PointRecordBefore {
			in.Record, _ = json.Marshal(r)
		}
	}
	in.Notification, in.NotifyTarget, in.Daemon = p.Notification, p.NotifyTarget, p.Daemon
	in.NotifyAttempts, in.NotifyError = p.NotifyAttempts, p.NotifyError
	if ev := p.Event; ev != nil {
		in.Event = &EventInput{ID: ev.ID, Type: ev.Type, Source: ev.Source, Data: ev.Data}
		if in.Event.Data == nil {
			in.Event.Data = map[string]any{}
		}
	}
	return in
}

func oneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > limit {
		return s[:limit] + "…"
	}
	return s
}
