package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/internal/human"
	"github.com/hookd/hookd/sandbox"
)

// Overlap is what a trigger does when its hook already has a run in flight.
type Overlap string

// Overlap policies.
const (
	OverlapSkip           Overlap = "skip"            // record skipped:in_flight (default)
	OverlapQueue          Overlap = "queue"           // keep at most one pending rerun
	OverlapCancelPrevious Overlap = "cancel_previous" // cancel the run in flight, start anew
)

// MissedPolicy is what a schedule does with slots missed while hookd was down.
type MissedPolicy string

// Missed-slot policies.
const (
	MissedSkip   MissedPolicy = "skip"   // fire none of them
	MissedLatest MissedPolicy = "latest" // fire the most recent one once (default)
	MissedAll    MissedPolicy = "all"    // fire each, at most MaxCatchup
)

// TriggerKind names the one kind of trigger a hook has.
type TriggerKind string

// Trigger kinds. A hook with no trigger is fired by hand only.
const (
	TriggerManual TriggerKind = ""
	TriggerEvery  TriggerKind = "every"
	TriggerCron   TriggerKind = "cron"
	TriggerEvent  TriggerKind = "event"
	TriggerWatch  TriggerKind = "watch"
	TriggerAt     TriggerKind = "at" // one-shot: fires once, at Trigger.At
)

// Hook is one validated hook definition, as loaded from a file in hooks.d.
type Hook struct {
	Name        string
	Project     string // agent-queue's project_id, kept as a label
	Description string
	Enabled     bool
	Trigger     Trigger
	Cooldown    time.Duration
	Overlap     Overlap
	Timeout     time.Duration // whole run; 0 means the daemon default
	Workdir     string        // absolute; steps and file tools are confined here
	Env         map[string]string
	Secrets     []string // names of environment variables: redacted everywhere; each reaches only the steps and tools naming it
	Steps       []*StepDef
	System      string
	Prompt      string
	LLM         LLMConfig
	Budget      budget.Hook
	Tools       []string
	// FireHooks are the hooks the fire_hook tool may fire for this hook's
	// model, and EmitTypes the event patterns emit_event may publish;
	// none when empty (a glob in Tools may offer either tool, which then
	// refuses every target).
	FireHooks []string
	EmitTypes []string
	// RunHooks are the other hooks whose run records the list_runs,
	// get_run and search_runs tools read for this hook's model ("*": every
	// hook); they always read the hook's own (see MayReadRunsOf).
	RunHooks []string
	// AcceptFromTools lets a trigger that a model's tool call made run
	// this hook (see FromTool); without it the trigger is recorded
	// skipped by the from_tool gate. The loader defaults it to false for
	// hooks that hold run_command, write_file or MCP tools.
	AcceptFromTools bool
	Plugins         []string
	PluginsSet      bool // Plugins was given (an empty list means built-in handlers only)
	SkipLLM         bool
	// Check is the step a hook's check: names (nil: none): when it does
	// not pass, the run is marked check_failed (check.go), as when a step
	// with skip_llm_if_exit_zero or skip_llm_if_status_ok does not.
	Check *StepDef

	// EnvPassthrough names more variables of hookd's environment that the
	// hook's child processes inherit (see ChildEnv); they are not redacted.
	EnvPassthrough []string

	// ToolSecrets names, by tool (run_command), the hook's secrets that
	// the processes the tool starts get; a tool not listed gets none.
	ToolSecrets map[string][]string

	// WriteRoots lists the directories, relative to Workdir, in which the
	// write_file tool may write; none means nowhere.
	WriteRoots []string

	// Writes are more trees, absolute, that the hook's processes may
	// write besides its workdir (writes:). Reads, when not nil, narrows
	// what they may read (reads:, sandbox.Policy.Reads). Network, when
	// set, is what they may reach (network:); nil: none for a hook that
	// takes untrusted input (UntrustedInput), all for others. Limits
	// bound each of their process trees (limits:).
	Writes  []string
	Reads   []string
	Network *sandbox.Network
	Limits  sandbox.Limits

	// Notify lists the webhooks told about this hook's runs. When NotifySet
	// is false the daemon-wide notify: list applies; when it is true this
	// list replaces it (an empty list silences the hook).
	Notify    []NotifyTarget
	NotifySet bool

	// Retention overrides the daemon's retention of this hook's runs.
	Retention HookRetention

	// OnInterrupted says whether a run interrupted by a crash is run
	// again, once, at the next start ("" means leave).
	OnInterrupted InterruptedPolicy

	// Retry says which failed runs are run again, and when (retry.go).
	Retry RetryPolicy
	// Rate caps the hook's starts in a window (rate.go); zero: no cap.
	Rate Rate

	Source Source
}

// Source says where a hook came from.
type Source struct {
	File    string // path as given to the loader
	Line    int    // line of the hook's first key
	Version string // short content hash of the file
}

// Trigger describes what fires a hook. Exactly one of Every, Cron, At,
// Event or Watch is set, as Kind says.
type Trigger struct {
	Kind  TriggerKind
	Every time.Duration
	Cron  string
	// CronSet holds more cron expressions of a cron trigger (agent-queue's
	// schedule with several times): the trigger fires at the slots of Cron
	// and of each of these.
	CronSet    []string
	At         time.Time // the one time a one-shot (at) trigger fires
	Timezone   string
	Jitter     time.Duration
	OnMissed   MissedPolicy
	MaxCatchup int
	Event      string         // pattern: dot-separated segments, "*" one segment, "**" the rest
	Where      map[string]any // payload filters: dotted path -> value (or list of values)
	WhereIf    *Condition     // or a condition over the event (where: as an expression)
	Watch      *WatchSpec

	// Schedule is compiled by the loader for every/cron/at triggers.
	Schedule Schedule
	// Location is the time zone the schedule is evaluated in.
	Location *time.Location
}

// Periodic reports whether the trigger fires on a schedule (a one-shot
// at trigger is a schedule of one slot).
func (t Trigger) Periodic() bool {
	return t.Kind == TriggerEvery || t.Kind == TriggerCron || t.Kind == TriggerAt
}

// String describes the trigger for people: "every 2h", "cron 0 3 * * *", "event deploy.*".
func (t Trigger) String() string {
	switch t.Kind {
	case TriggerEvery:
		return "every " + human.Exact(t.Every)
	case TriggerCron:
		s := "cron " + strings.Join(append([]string{t.Cron}, t.CronSet...), "; ")
		if t.Timezone != "" {
			s += " (" + t.Timezone + ")"
		}
		return s
	case TriggerAt:
		return "at " + t.At.Format(time.RFC3339)
	case TriggerEvent:
		return "event " + t.Event
	case TriggerWatch:
		if t.Watch != nil {
			return fmt.Sprintf("watch %v", t.Watch.Paths)
		}
		return "watch"
	}
	return "manual"
}

// WatchSpec describes a file or folder watch trigger.
type WatchSpec struct {
	Paths       []string
	Recursive   bool
	Extensions  []string
	Include     []string
	Ignore      []string
	Debounce    time.Duration
	MaxWait     time.Duration
	Poll        bool
	ScanOnStart bool
	// IncludeHidden reports hidden files and folders (a name starting
	// with "."), which a watch leaves out by default, as agent-queue did.
	IncludeHidden bool
}

// LLMConfig is a hook's model settings; empty fields fall back to hookd.yaml
// and then to the environment.
type LLMConfig struct {
	Model     string
	BaseURL   string
	APIKeyEnv string // names the variable holding the key; the key itself is never stored
	MaxRounds int    // model calls per run; 0 means the default (10)
	// ToolChoice is sent only when set: auto, none, required, or the name
	// of one of the hook's tools.
	ToolChoice string
	// ToolChoiceRounds says which model calls a forcing ToolChoice
	// (required or a tool's name) is sent with: ToolChoiceFirst (default:
	// the first only, so the model can answer after its tools ran) or
	// ToolChoiceAll.
	ToolChoiceRounds string
	// ParallelToolCalls is sent only when set.
	ParallelToolCalls *bool
	// OnTruncated is what an answer cut by the model's output limit
	// (finish_reason length) makes of the run: TruncatedWarn (default:
	// completed, with a note) or TruncatedFail.
	OnTruncated string
}

// What llm.tool_choice_rounds may say.
const (
	ToolChoiceFirst = "first"
	ToolChoiceAll   = "all"
)

// What llm.on_truncated may say.
const (
	TruncatedWarn = "warn"
	TruncatedFail = "fail"
)

// Where a hook's model settings come from when neither its llm: nor
// hookd.yaml's says: the environment of the process that runs it.
const (
	EnvModel         = "HOOKD_MODEL"     // the model
	EnvBaseURL       = "OPENAI_BASE_URL" // the server
	DefaultAPIKeyEnv = "OPENAI_API_KEY"  // the variable holding the key
)

// Resolve returns the endpoint settings a hook's model calls use: c (the
// hook's llm:), then defaults (hookd.yaml's llm:), then the environment
// env reads (EnvModel, EnvBaseURL; the key's variable is
// DefaultAPIKeyEnv). Model and BaseURL stay "" when nothing sets them;
// the other settings are c's.
func (c LLMConfig) Resolve(defaults LLMConfig, env func(string) (string, bool)) LLMConfig {
	get := func(k string) string { v, _ := env(k); return v }
	c.Model = cmp.Or(c.Model, defaults.Model, get(EnvModel))
	c.BaseURL = cmp.Or(c.BaseURL, defaults.BaseURL, get(EnvBaseURL))
	c.APIKeyEnv = cmp.Or(c.APIKeyEnv, defaults.APIKeyEnv, DefaultAPIKeyEnv)
	return c
}

// NeedsModel reports whether the hook has a model stage: a prompt, and
// skip_llm is not set.
func (h *Hook) NeedsModel() bool { return !h.SkipLLM && strings.TrimSpace(h.Prompt) != "" }

// Schedule computes fire times. Next returns the first slot strictly after
// t, or the zero time when there is none.
type Schedule interface {
	Next(t time.Time) time.Time
}

// Decoder decodes a piece of a hook file into v, strictly: an unknown key
// or a wrong type is an error naming the file, line and field.
type Decoder interface {
	Decode(v any) error
	// Errorf returns an error about the value of field, a dotted key path
	// inside the piece decoded ("command", "headers.Accept"), located at
	// it as well as the decoder knows: a step kind reports a bad value
	// after decoding it.
	Errorf(field, format string, args ...any) error
}

// StepDef is one step of a hook as written in its file.
type StepDef struct {
	Index    int // 0-based position, as in {{step_N}} (agent-queue's numbering)
	Name     string
	Type     string
	Line     int
	Timeout  time.Duration
	Required bool
	// AllowFailure lets a command step of a hook with no model stage exit
	// non-zero or error without failing the run.
	AllowFailure bool
	Skip         ShortCircuit
	// If, when set, is the condition under which the step runs (if:);
	// when it is false the step is skipped (StepResult.Skipped).
	If *Condition
	// Secrets names the hook's secrets that the processes this step
	// starts get (secrets:); the hook's other secrets do not reach them.
	Secrets []string
	// Writes (absolute) and Network are what a step of a kind that starts
	// processes declares on top of its hook's policy (writes:, network:;
	// ProcessesDeclared); nil Network: the hook's.
	Writes  []string
	Network *sandbox.Network

	// Step is built by the step kind from the kind-specific fields.
	Step Step
}

// Label names the step in messages: "step_1 (tests)" for the second step.
func (d *StepDef) Label() string {
	if d.Name != "" {
		return fmt.Sprintf("step_%d (%s)", d.Index, d.Name)
	}
	return fmt.Sprintf("step_%d", d.Index)
}

// ShortCircuit lists the conditions under which a step's result makes the
// model unnecessary.
type ShortCircuit struct {
	IfExitZero  bool       // shell-like steps exited 0
	IfStatusOK  bool       // http-like steps answered 2xx
	IfEmpty     bool       // the primary output is empty
	IfUnchanged bool       // the gathered context equals the last run's
	If          string     // a lone placeholder whose value is true, yes or 1 (agent-queue's form)
	Cond        *Condition // a condition that holds (skip_llm_if: steps.tests.exit_code == 0)
}

// AllRunHooks in RunHooks lets the run-record tools read every hook's runs.
const AllRunHooks = "*"

// MayReadRunsOf reports whether the run-record tools (list_runs, get_run,
// search_runs) may show this hook's model the runs of hook: its own, and
// those of the hooks its file names for them.
func (h *Hook) MayReadRunsOf(hook string) bool {
	return hook == h.Name || slices.Contains(h.RunHooks, AllRunHooks) || slices.Contains(h.RunHooks, hook)
}
