package engine

import (
	"fmt"
	"slices"
	"strings"
)

// CommonFields are the fields every step result has, whatever its kind:
// the primary output, the error, and the step's name and type.
var CommonFields = []string{"output", "error", "name", "type"}

// DeclaredKind is a step kind built by Build whose results have the
// Fields listed (besides CommonFields). Starts says whether its steps
// start processes.
type DeclaredKind struct {
	Build  StepKindFunc
	Fields []string
	Starts Processes
}

// Processes says whether a step kind starts processes, and whether its
// steps may declare what those processes reach.
type Processes int

const (
	// ProcessesNone: the kind starts no process.
	ProcessesNone Processes = iota
	// ProcessesFixed: the kind starts processes under its hook's policy,
	// narrowed as the kind decides (the git steps: no network); its steps
	// declare nothing.
	ProcessesFixed
	// ProcessesDeclared: the kind starts processes under its hook's
	// policy widened by what each step declares (writes:, network:).
	ProcessesDeclared
)

// KindProcesses says whether steps of the kind named kind start
// processes; ProcessesNone for a kind that does not say (or is unknown).
func KindProcesses(kind string) Processes {
	k, ok := LookupStep(kind)
	if !ok {
		return ProcessesNone
	}
	return k.Processes()
}

// New calls k.Build.
func (k DeclaredKind) New(def *StepDef, cfg Decoder) (Step, error) { return k.Build(def, cfg) }

// Processes says whether k's steps start processes (k.Starts).
func (k DeclaredKind) Processes() Processes { return k.Starts }

// ResultFields returns the fields k's results have, CommonFields included.
func (k DeclaredKind) ResultFields() []string {
	return append(slices.Clone(CommonFields), k.Fields...)
}

// checkStepField checks that a step of type kind has a result field named
// field; a kind that declares no fields accepts any. who names the step
// in the error.
func checkStepField(kind, field, who string) error {
	fields := kindFields(kind)
	if fields == nil || slices.Contains(fields, field) {
		return nil
	}
	return &fieldError{who: who, kind: kind, field: field, fields: fields}
}

// fieldError is a reference to a field a step's kind does not have.
type fieldError struct {
	who, kind, field string
	fields           []string
}

func (e *fieldError) Error() string {
	return fmt.Sprintf("%s is a %s step: its results have no field %q (they have %s)",
		e.who, e.kind, e.field, strings.Join(slices.Sorted(slices.Values(e.fields)), ", "))
}

// typo reports whether the field looks like a misspelling of one the
// kind has (its first four letters begin one: exit_cod, stdot), rather
// than a value the author expects in the step's output (used_pct).
func (e *fieldError) typo() bool {
	p := e.field[:min(len(e.field), 4)]
	return slices.ContainsFunc(e.fields, func(f string) bool { return strings.HasPrefix(f, p) })
}
