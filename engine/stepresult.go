package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// typedFields are the result fields StepResult holds as typed fields, by
// their names in placeholders and JSON. duration_ms is Duration's.
var typedFields = []string{"exit_code", "status_code", "count", "timed_out", "truncated", "duration_ms"}

// Field returns a named field of the result: the common ones ("output",
// "error", "name", "type"), a typed one its kind has, or one of Fields.
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
	if slices.Contains(typedFields, name) {
		return r.typed(name)
	}
	v, ok := r.Fields[name]
	return v, ok
}

// typed returns a typed field when the result has it: a pointer that is
// set, or a value its kind declares (or that is not zero, for a kind
// that declares nothing).
func (r *StepResult) typed(name string) (any, bool) {
	switch name {
	case "exit_code":
		if r.ExitCode != nil {
			return *r.ExitCode, true
		}
	case "count":
		if r.Count != nil {
			return *r.Count, true
		}
	case "status_code":
		return r.StatusCode, r.StatusCode != 0 || r.declares(name)
	case "timed_out":
		return r.TimedOut, r.TimedOut || r.declares(name)
	case "truncated":
		return r.Truncated, r.Truncated || r.declares(name)
	case "duration_ms":
		return r.Duration.Milliseconds(), r.declares(name)
	}
	return nil, false
}

// declares reports whether the result's kind declares the field.
func (r *StepResult) declares(name string) bool {
	k, ok := LookupStep(r.Type)
	if !ok {
		return false
	}
	d, ok := k.(FieldDeclarer)
	return ok && slices.Contains(d.ResultFields(), name)
}

// stepJSON is the JSON form of a StepResult.
type stepJSON struct {
	Index    int            `json:"index"`
	Name     string         `json:"name,omitempty"`
	Type     string         `json:"type"`
	Output   string         `json:"output"`
	Fields   map[string]any `json:"fields,omitempty"`
	Error    string         `json:"error,omitempty"`
	Started  time.Time      `json:"started"`
	Duration time.Duration  `json:"duration_ns"`
	Skipped  bool           `json:"skipped,omitempty"`
}

// stepFacts reads the typed fields out of a JSON "fields" object.
type stepFacts struct {
	ExitCode   *int  `json:"exit_code"`
	StatusCode int   `json:"status_code"`
	Count      *int  `json:"count"`
	TimedOut   bool  `json:"timed_out"`
	Truncated  bool  `json:"truncated"`
	DurationMS int64 `json:"duration_ms"` // Duration's; read only to be dropped
}

// MarshalJSON writes the result with its typed fields in "fields", next
// to the kind's others, as {{step_N.field}} names them.
func (r *StepResult) MarshalJSON() ([]byte, error) {
	fields := maps.Clone(r.Fields)
	for _, name := range typedFields {
		if v, ok := r.typed(name); ok {
			if fields == nil {
				fields = map[string]any{}
			}
			fields[name] = v
		}
	}
	return json.Marshal(stepJSON{Index: r.Index, Name: r.Name, Type: r.Type, Output: r.Output, Fields: fields,
		Error: r.Error, Started: r.Started, Duration: r.Duration, Skipped: r.Skipped})
}

// UnmarshalJSON reads what MarshalJSON wrote: the typed fields into their
// typed fields (a number is the same int it was), the others into Fields.
func (r *StepResult) UnmarshalJSON(b []byte) error {
	var in struct {
		stepJSON
		Fields json.RawMessage `json:"fields"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("decode step result: %w", err)
	}
	*r = StepResult{Index: in.Index, Name: in.Name, Type: in.Type, Output: in.Output, Error: in.Error,
		Started: in.Started, Duration: in.Duration, Skipped: in.Skipped}
	if len(in.Fields) == 0 || string(in.Fields) == "null" {
		return nil
	}
	var facts stepFacts
	if err := json.Unmarshal(in.Fields, &facts); err != nil {
		return fmt.Errorf("decode fields of step_%d: %w", in.Index, err)
	}
	if err := json.Unmarshal(in.Fields, &r.Fields); err != nil {
		return fmt.Errorf("decode fields of step_%d: %w", in.Index, err)
	}
	for _, name := range typedFields {
		delete(r.Fields, name)
	}
	if len(r.Fields) == 0 {
		r.Fields = nil
	}
	r.ExitCode, r.StatusCode, r.Count, r.TimedOut, r.Truncated =
		facts.ExitCode, facts.StatusCode, facts.Count, facts.TimedOut, facts.Truncated
	return nil
}
