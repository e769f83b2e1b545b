package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"sync"

	"github.com/hookd/hookd/redact"
	"github.com/hookd/hookd/sandbox"
)

// Tool is something the model may call during a run's model stage. Built-in
// tools register themselves with RegisterTool; tools of MCP servers
// implement the same interface and are resolved by the LLM client.
type Tool interface {
	// Name is what the model calls the tool: it matches
	// ^[a-zA-Z0-9_-]{1,64}$, as the chat-completions API requires.
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Schema is the JSON schema of the tool's arguments (an object).
	Schema() json.RawMessage
	// Call runs the tool with arguments that passed the schema. A
	// returned error goes back to the model as the tool's result; it does
	// not fail the run.
	Call(ctx context.Context, env *ToolEnv, args json.RawMessage) (string, error)
}

// ToolEnv is what a tool sees of the run that calls it. The engine builds
// one per model stage.
type ToolEnv struct {
	Hook     *Hook
	RunID    string
	Depth    int    // the run's event chain depth
	Workdir  string // absolute; file and command tools are confined here
	HooksDir string // absolute, or "" when unknown; no tool may write inside it
	// Protected lists more paths no tool may write or read, whether or
	// not they exist: hookd's settings file, its token file, its state
	// directory and database files (tools/protect.go decides).
	Protected []string
	// Environ (KEY=VALUE) is the environment of child processes of a
	// tool that names no secret; ToolEnviron gives a tool's own.
	Environ []string
	// envs, when set, hold the environments of the processes of each
	// tool (Hook.ChildEnvs).
	envs *ChildEnvs

	// Records reads hookd's own runs and events.
	Records RecordReader
	// Emit publishes an event as this run's model, one level deeper in
	// the chain; its source is ToolOrigin(hook). It says what became of
	// each hook the event matched (EmitReport).
	Emit func(ctx context.Context, typ string, data map[string]any) (*Emitted, error)
	// Fire triggers a hook through the gates as this run, one level
	// deeper in the chain; a refusal is a *GateError.
	Fire func(ctx context.Context, hook string, event map[string]any) (*Run, error)
	// Redactor replaces the hook's secrets (see redact.Redactor); nil redacts
	// nothing. Tool results go through it before the model sees them,
	// command output as it streams (process.Command.Redactor).
	Redactor *redact.Redactor
	// TrackProcess, when set, records a process group a tool started in
	// the run's record (process.Command.Track), as StepEnv.TrackProcess.
	TrackProcess func(ProcGroup) (done func())
	// Lifecycle holds the handlers of the llm:call:* and tool:call:*
	// points; nil means none.
	Lifecycle *Registry
	// Publish publishes an engine event about this run (hook.tool.denied),
	// one level deeper in the chain; nil means none is published.
	Publish func(typ string, data map[string]any)
	// Sandbox is the policy of the processes the model's tools start
	// (Engine.ToolPolicy): nil leaves them unconfined.
	Sandbox *sandbox.Policy
	// Replay, when set, answers the model's tool calls from a recorded
	// run's (Engine.Replay): no tool runs, and a call the record has no
	// result for gets a tool error (ToolNotRecorded).
	Replay *RecordedTools
}

// ToolEnviron is the environment of the processes the tool name starts:
// Environ, with the secrets the hook's tools: entry for name lists.
func (e *ToolEnv) ToolEnviron(name string) []string {
	if e.envs == nil {
		return e.Environ
	}
	return e.envs.Tool(name)
}

// Redact replaces the hook's secrets in s.
func (e *ToolEnv) Redact(s string) string { return e.Redactor.String(s) }

// ToolNamePattern is what the chat-completions API accepts as a tool name.
var ToolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// MaxTools is the most tools one run offers the model: the OpenAI
// chat-completions API's limit. A hook's tools: may resolve to no more,
// counted when it is loaded (config) and again when a run resolves its
// MCP patterns (agent).
const MaxTools = 128

var (
	toolsMu sync.RWMutex
	tools   = map[string]Tool{}
)

// RegisterTool makes a built-in tool available under its name. It panics
// when the tool is nil, its name is empty or not a valid tool name, or the
// name is taken.
func RegisterTool(t Tool) {
	toolsMu.Lock()
	defer toolsMu.Unlock()
	if t == nil || t.Name() == "" {
		panic("engine: RegisterTool with nil tool or empty name")
	}
	name := t.Name()
	if !ToolNamePattern.MatchString(name) {
		panic(fmt.Sprintf("engine: tool name %q does not match %s", name, ToolNamePattern))
	}
	if _, dup := tools[name]; dup {
		panic(fmt.Sprintf("engine: tool %q registered twice", name))
	}
	tools[name] = t
}

// LookupTool returns the built-in tool registered under name.
func LookupTool(name string) (Tool, bool) {
	toolsMu.RLock()
	defer toolsMu.RUnlock()
	t, ok := tools[name]
	return t, ok
}

// Tools lists the registered built-in tools, sorted by name.
func Tools() []Tool {
	toolsMu.RLock()
	defer toolsMu.RUnlock()
	out := make([]Tool, 0, len(tools))
	for _, t := range tools {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// ToolNames lists the names of the registered built-in tools, sorted.
func ToolNames() []string {
	ts := Tools()
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name()
	}
	return out
}

// toolEnv builds what the tools of run see: its workdir and environment,
// the records, and publishers that act as the run, one level deeper in
// the event chain.
func (e *Engine) toolEnv(h *Hook, run *Run, envs *ChildEnvs, red *redact.Redactor) *ToolEnv {
	return &ToolEnv{
		Hook: h, RunID: run.ID, Depth: run.Depth, Workdir: h.Workdir, HooksDir: e.cfg.HooksDir,
		Protected: e.cfg.Protected,
		Environ:   envs.Base(), envs: envs, Records: e.cfg.Store, Emit: e.emitAs(run, red, ToolOrigin(run.Hook)), Redactor: red,
		Lifecycle: e.cfg.Lifecycle, TrackProcess: e.tracker(run, -1, false), Sandbox: e.ToolPolicy(h),
		Publish: func(typ string, data map[string]any) {
			e.publish(&Event{ID: NewID(), Type: typ, Data: red.Map(data), Source: "engine", Depth: run.Depth + 1, TraceLink: run.Span()})
		},
		Fire: func(ctx context.Context, hook string, event map[string]any) (*Run, error) {
			// The event_depth gate refuses (and records) a chain too deep.
			// The run it starts links to this one's span.
			return e.Fire(ctx, hook, FireOptions{Event: red.Map(event), Trigger: ToolOrigin(run.Hook), Depth: run.Depth + 1,
				TraceLink: run.Span()})
		},
	}
}
