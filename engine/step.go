package engine

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hookd/hookd/redact"
	"github.com/hookd/hookd/sandbox"
)

// Step gathers one piece of context for a run.
type Step interface {
	Run(ctx context.Context, env *StepEnv) (*StepResult, error)
}

// StepKind builds steps of one type from the kind-specific fields of a
// step definition (cfg decodes those fields strictly), and says what its
// steps are: the fields of their results, and whether they start
// processes.
type StepKind interface {
	New(def *StepDef, cfg Decoder) (Step, error)
	// ResultFields lists the fields of the kind's results, CommonFields
	// included; nil when the kind declares none, and then a placeholder
	// may name any field of its steps. A placeholder naming another field
	// of a kind that declares them ({{step_N.field}},
	// {{steps.NAME.field}}) is refused when the hook loads.
	ResultFields() []string
	// Processes says whether the kind's steps start processes. Only such
	// steps may name the hook's secrets (StepDef.Secrets): a secret
	// reaches nothing but a process's environment.
	Processes() Processes
}

// StepKindFunc adapts a function to StepKind: a kind that declares no
// result fields and starts no process.
type StepKindFunc func(def *StepDef, cfg Decoder) (Step, error)

// New calls f.
func (f StepKindFunc) New(def *StepDef, cfg Decoder) (Step, error) { return f(def, cfg) }

// ResultFields returns nil: f declares no fields.
func (StepKindFunc) ResultFields() []string { return nil }

// Processes returns ProcessesNone.
func (StepKindFunc) Processes() Processes { return ProcessesNone }

// StepEnv is what a step sees of its run.
type StepEnv struct {
	Hook    *Hook
	RunID   string
	Workdir string
	Env     []string // KEY=VALUE, the environment of child processes: the hook's, with the secrets the step names (Hook.ChildEnvs)
	Scope   *Scope   // event and earlier results, for placeholders
	Def     *StepDef
	Now     time.Time

	// Records reads hookd's own runs and events (the db_query step).
	Records RecordReader
	// Database is hookd's own database file ("" when unknown): db_query's
	// sql: refuses it, compared by file identity.
	Database string
	// Emit publishes an event on the bus as this run (the emit step): it
	// is stored, then dispatched, one level deeper in the event chain. It
	// says what became of each hook the event matched (EmitReport).
	Emit func(ctx context.Context, typ string, data map[string]any) (*Emitted, error)
	// Redactor replaces the hook's secrets; a step that caps what it
	// keeps redacts before it cuts (process.Command.Redactor). The engine
	// redacts the step's result when it returns; nil redacts nothing.
	Redactor *redact.Redactor
	// TrackProcess, when set, records a process group the step started
	// (process.Command.Track), so that a hookd started after a crash can
	// kill what the step left running, and returns the function that
	// drops the record once the group has ended (nil: none to drop).
	TrackProcess func(ProcGroup) (done func())
	// Sandbox is the policy of the hook's processes (Engine.SandboxPolicy);
	// a step that starts one contains it so, with what the step declares
	// on top (process.Command.Policy). Nil: unconfined.
	Sandbox *sandbox.Policy
	// Output, when set, takes the step's output as its processes write
	// it, redacted and capped as the record is (process.Command.Live), for
	// whoever follows the run live; it never waits and is safe for
	// concurrent use. Nil: nobody can follow (a preview).
	Output func(stream string, p []byte)
}

var (
	stepKindsMu sync.RWMutex
	stepKinds   = map[string]registeredKind{}
)

// registeredKind is a registered step kind with its result fields, read
// once when it registered: a run's record asks for them several times a
// step.
type registeredKind struct {
	kind   StepKind
	fields []string // kind.ResultFields(); nil: it declares none
}

// RegisterStep makes a step kind available under name. It panics when name
// is empty or already registered.
func RegisterStep(name string, kind StepKind) {
	stepKindsMu.Lock()
	defer stepKindsMu.Unlock()
	if name == "" || kind == nil {
		panic("engine: RegisterStep with empty name or nil kind")
	}
	if _, dup := stepKinds[name]; dup {
		panic(fmt.Sprintf("engine: step kind %q registered twice", name))
	}
	stepKinds[name] = registeredKind{kind: kind, fields: kind.ResultFields()}
}

// LookupStep returns the step kind registered under name.
func LookupStep(name string) (StepKind, bool) {
	stepKindsMu.RLock()
	defer stepKindsMu.RUnlock()
	k, ok := stepKinds[name]
	return k.kind, ok
}

// kindFields returns the result fields of the kind registered under name,
// CommonFields included; nil when it declares none or is unknown. The
// slice is the registry's: callers do not modify it.
func kindFields(name string) []string {
	stepKindsMu.RLock()
	defer stepKindsMu.RUnlock()
	return stepKinds[name].fields
}

// StepKinds lists the registered step kinds, sorted.
func StepKinds() []string {
	stepKindsMu.RLock()
	defer stepKindsMu.RUnlock()
	names := make([]string, 0, len(stepKinds))
	for n := range stepKinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ScheduleFunc compiles the schedule of a periodic trigger.
type ScheduleFunc func(t *Trigger) (Schedule, error)

var (
	schedulesMu sync.RWMutex
	schedules   = map[TriggerKind]ScheduleFunc{}
)

// RegisterSchedule makes a periodic trigger kind available. It panics when
// the kind is empty or already registered.
func RegisterSchedule(kind TriggerKind, f ScheduleFunc) {
	schedulesMu.Lock()
	defer schedulesMu.Unlock()
	if kind == "" || f == nil {
		panic("engine: RegisterSchedule with empty kind or nil func")
	}
	if _, dup := schedules[kind]; dup {
		panic(fmt.Sprintf("engine: schedule kind %q registered twice", kind))
	}
	schedules[kind] = f
}

// CompileSchedule compiles t's schedule with the registered kind.
func CompileSchedule(t *Trigger) (Schedule, error) {
	schedulesMu.RLock()
	f, ok := schedules[t.Kind]
	schedulesMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("engine: no schedule kind %q registered", t.Kind)
	}
	return f(t)
}
