package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
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
	case "exit_code", "count":
		return r.typedOf(name, nil) // the kind does not matter
	}
	return r.typedOf(name, kindFields(r.Type))
}

// typedOf is typed for a result of a kind whose declared fields are k
// (nil: none, or the kind is unknown), which a caller asking for every
// typed field looks up once.
func (r *StepResult) typedOf(name string, k []string) (any, bool) {
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
		return r.StatusCode, r.StatusCode != 0 || declares(k, name)
	case "timed_out":
		return r.TimedOut, r.TimedOut || declares(k, name)
	case "truncated":
		return r.Truncated, r.Truncated || declares(k, name)
	case "duration_ms":
		return r.Duration.Milliseconds(), declares(k, name)
	}
	return nil, false
}

// declares reports whether a kind whose declared fields are k (nil:
// none) declares the field.
func declares(k []string, name string) bool { return slices.Contains(k, name) }

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
// to the kind's others, as {{step_N.field}} names them. It writes what
// marshalJSONReflect writes, without reflection (jsonappend.go).
func (r *StepResult) MarshalJSON() ([]byte, error) {
	// Room for the output and for every field that is text, quoted: a
	// shell step's stdout repeats its output, and with room for one
	// megabyte only, append copied the answer to ever larger buffers
	// (8.7 MB allocated for a step that printed 1 MiB, 2.2 MB now:
	// TestStepMarshalJSONAllocatesItsAnswerOnce).
	n := 192 + len(r.Output) + len(r.Output)/16 + len(r.Error)
	for _, v := range r.Fields {
		if s, ok := v.(string); ok {
			n += 16 + len(s) + len(s)/16
		}
	}
	b, err := r.appendJSON(make([]byte, 0, n), false)
	if err != nil {
		return r.marshalJSONReflect() // for its error, in its words
	}
	return b, nil
}

// MarshalSteps returns steps encoded as json.Marshal encodes them (what
// the API answers).
func MarshalSteps(steps []*StepResult) ([]byte, error) { return marshalSteps(steps, false) }

// MarshalStepsStored returns steps in the form a run's record stores
// them: as MarshalSteps, except that a field that repeats its step's
// output (a shell step's stdout, read_file's content, http's body...) is
// named in "output_fields" instead of written a second time, so that a
// 1 MB output is stored once. UnmarshalJSON reads both forms alike.
func MarshalStepsStored(steps []*StepResult) ([]byte, error) { return marshalSteps(steps, true) }

func marshalSteps(steps []*StepResult, stored bool) ([]byte, error) {
	if steps == nil {
		return []byte("null"), nil
	}
	n := 2
	for _, r := range steps {
		if r != nil {
			// The output quoted: escapes (a line break is two bytes)
			// seldom add a sixteenth; with too little room, append
			// would copy what is written so far to a buffer 1.25 times
			// the size, leaving this one to the collector.
			n += 192 + len(r.Output) + len(r.Output)/16 + len(r.Error)
		}
	}
	b := append(make([]byte, 0, n), '[')
	for i, r := range steps {
		if i > 0 {
			b = append(b, ',')
		}
		if r == nil {
			b = append(b, "null"...)
			continue
		}
		var err error
		if b, err = r.appendJSON(b, stored); err != nil {
			return json.Marshal(steps) // its error, in its words
		}
	}
	return append(b, ']'), nil
}

// outputField reports whether the field k of r repeats r's output, which
// the stored form names instead of writing.
func (r *StepResult) outputField(k string) bool {
	s, ok := r.Fields[k].(string)
	return ok && r.Output != "" && s == r.Output
}

// appendJSON appends what MarshalJSON returns to b, or, stored, the form
// MarshalStepsStored writes; on an error, its words are encoding/json's
// only through MarshalJSON.
func (r *StepResult) appendJSON(b []byte, stored bool) ([]byte, error) {
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, int64(r.Index), 10)
	if r.Name != "" {
		b = append(b, `,"name":`...)
		b = AppendJSONString(b, r.Name)
	}
	b = append(b, `,"type":`...)
	b = AppendJSONString(b, r.Type)
	b = append(b, `,"output":`...)
	b = AppendJSONString(b, r.Output)
	// fields: the kind's, with the typed ones over them; sorted keys.
	var typed [8]struct {
		name string
		v    any
	}
	nt := 0
	kind := kindFields(r.Type)
	for _, name := range typedFields {
		if v, ok := r.typedOf(name, kind); ok {
			typed[nt].name, typed[nt].v = name, v
			nt++
		}
	}
	var small, smallOut [16]string
	keys := small[:0]
	asOutput := smallOut[:0] // stored: the fields that repeat the output
	for k := range r.Fields {
		if stored && r.outputField(k) {
			asOutput = append(asOutput, k)
		} else {
			keys = append(keys, k)
		}
	}
	for _, t := range typed[:nt] {
		if _, dup := r.Fields[t.name]; !dup {
			keys = append(keys, t.name)
		}
	}
	if len(keys) > 0 {
		slices.Sort(keys)
		b = append(b, `,"fields":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, k)
			b = append(b, ':')
			v, found := any(nil), false
			for _, t := range typed[:nt] {
				if t.name == k {
					v, found = t.v, true
					break
				}
			}
			if !found {
				v = r.Fields[k]
			}
			var err error
			if b, err = appendJSONValue(b, v, 1); err != nil {
				return nil, err
			}
		}
		b = append(b, '}')
	}
	if len(asOutput) > 0 {
		slices.Sort(asOutput)
		b = append(b, `,"output_fields":[`...)
		for i, k := range asOutput {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, k)
		}
		b = append(b, ']')
	}
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = AppendJSONString(b, r.Error)
	}
	b = append(b, `,"started":"`...)
	var err error
	if b, err = r.Started.AppendText(b); err != nil {
		return nil, err
	}
	b = append(b, `","duration_ns":`...)
	b = strconv.AppendInt(b, int64(r.Duration), 10)
	if r.Skipped {
		b = append(b, `,"skipped":true`...)
	}
	return append(b, '}'), nil
}

// marshalJSONReflect is MarshalJSON by encoding/json: the reference the
// hand-written one is tested against, and what answers its errors.
func (r *StepResult) marshalJSONReflect() ([]byte, error) {
	fields := maps.Clone(r.Fields)
	kind := kindFields(r.Type)
	for _, name := range typedFields {
		if v, ok := r.typedOf(name, kind); ok {
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
		Output       quotedText      `json:"output"` // one allocation for a megabyte (jsonunquote.go)
		Fields       json.RawMessage `json:"fields"`
		OutputFields []string        `json:"output_fields"` // the stored form's (MarshalStepsStored)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("decode step result: %w", err)
	}
	*r = StepResult{Index: in.Index, Name: in.Name, Type: in.Type, Output: string(in.Output), Error: in.Error,
		Started: in.Started, Duration: in.Duration, Skipped: in.Skipped}
	if len(in.Fields) > 0 && string(in.Fields) != "null" {
		if err := r.unmarshalFields(in.Index, in.Fields); err != nil {
			return err
		}
	}
	for _, k := range in.OutputFields {
		if r.Fields == nil {
			r.Fields = make(map[string]any, len(in.OutputFields))
		}
		r.Fields[k] = r.Output // the output's own string: held once
	}
	return nil
}

// unmarshalFields reads a JSON "fields" object: the typed fields into
// their typed fields, the others into Fields.
func (r *StepResult) unmarshalFields(index int, fields json.RawMessage) error {
	var facts stepFacts
	if err := json.Unmarshal(fields, &facts); err != nil {
		return fmt.Errorf("decode fields of step_%d: %w", index, err)
	}
	if err := json.Unmarshal(fields, &r.Fields); err != nil {
		return fmt.Errorf("decode fields of step_%d: %w", index, err)
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
