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
	Response      *string         `json:"response,omitempty"`
	Step          *StepInput      `json:"step,omitempty"`
	Run           *RunInput       `json:"run,omitempty"`
	Event         *EventInput     `json:"event,omitempty"`
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

// RunInput describes the run at run:before and run:after.
type RunInput struct {
	Trigger string `json:"trigger,omitempty"`
	Status  string `json:"status,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Error   string `json:"error,omitempty"`
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
		cmd := &process.Command{
			Argv: h.Command, Dir: h.Dir, Stdin: bytes.NewReader(in), Timeout: h.Timeout,
			KillGrace: killGrace, MaxOutput: MaxOutput, Env: env, Policy: policy,
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
	in := &Input{HookEventName: string(p.Point), RunID: p.RunID, ToolName: p.ToolName, ToolInput: p.ToolInput,
		ToolError: p.ToolError, Prompt: p.Prompt, Messages: p.Messages, Round: p.Round}
	if p.Hook != nil {
		in.Hook, in.Cwd = p.Hook.Name, p.Hook.Workdir
	}
	switch p.Point {
	case engine.PointToolCallAfter:
		in.ToolResult = &p.ToolResult
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
		in.Run = &RunInput{Trigger: r.Trigger, Status: string(r.Status), Reason: r.Reason, Error: r.Error}
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
