package engine

import (
	"encoding/json"
	"reflect"
)

// recentFinals holds the final records of the runs that ended last, for
// Wait: a client that asks for a run's end a moment after it came (a
// publisher's GET /v1/runs/ID/wait after its POST /v1/events, `hookd
// emit --wait`) is given the record the run's waiters were given, as if
// it had asked a moment sooner, without a message to the loop and a read
// of the record back from the store. It holds at most recentRuns runs,
// and none whose record is over recentMaxBytes (a run that printed much
// is read back from the store, as before), so it keeps little memory.
// The loop writes it under Engine.waitMu (finishWaiters); Wait reads it
// under the same lock (addWaiter).
type recentFinals struct {
	ids  [recentRuns]string // ring of the runs held, oldest at next
	runs map[string]*Run
	next int
}

const (
	recentRuns     = 32
	recentMaxBytes = 16 << 10
)

// add holds run's final record, in place of the oldest held.
func (r *recentFinals) add(run *Run) {
	if recordBytes(run) > recentMaxBytes {
		return
	}
	if r.runs == nil {
		r.runs = make(map[string]*Run, recentRuns)
	}
	if old := r.ids[r.next]; old != "" {
		delete(r.runs, old)
	}
	r.ids[r.next] = run.ID
	r.runs[run.ID] = run
	r.next = (r.next + 1) % recentRuns
}

// get returns a copy of the final record of run id, if held.
func (r *recentFinals) get(id string) (*Run, bool) {
	run, ok := r.runs[id]
	if !ok {
		return nil, false
	}
	cp := *run
	return &cp, true
}

// recordBytes is about how many bytes run's variable parts hold: its
// texts, its tool calls and its steps' outputs and fields.
func recordBytes(run *Run) int {
	n := len(run.Event) + len(run.Prompt) + len(run.Response) + len(run.ToolCalls) + len(run.Error)
	for _, note := range run.Notes {
		n += len(note)
	}
	for _, t := range run.Tools {
		n += 64 + len(t.ID) + len(t.Name) + len(t.Tool) + len(t.Server) + len(t.Arguments) + len(t.Result) + len(t.Error)
	}
	for _, s := range run.Steps {
		if s != nil {
			n += len(s.Output) + len(s.Error) + valueBytes(s.Fields, 0)
		}
	}
	return n
}

// valueBytes is about how many bytes a step's field value holds: strings
// and raw JSON by length, numbers and booleans by a word, slices and maps
// by their elements. A value of any other kind (a struct), or nested
// deeper than a field's JSON would be, counts as too large to hold.
func valueBytes(v any, depth int) int {
	const tooLarge = recentMaxBytes + 1
	if depth > 8 {
		return tooLarge
	}
	switch v := v.(type) {
	case nil, bool, int, int64, float64:
		return 8
	case string:
		return len(v)
	case json.RawMessage:
		return len(v)
	case []byte:
		return len(v)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return 8
	case reflect.String:
		return rv.Len()
	case reflect.Pointer:
		if rv.IsNil() {
			return 8
		}
		return 8 + valueBytes(rv.Elem().Interface(), depth+1)
	case reflect.Slice, reflect.Array:
		n := 0
		for i := range rv.Len() {
			if n += 8 + valueBytes(rv.Index(i).Interface(), depth+1); n > recentMaxBytes {
				return n
			}
		}
		return n
	case reflect.Map:
		n := 0
		for it := rv.MapRange(); it.Next(); {
			if n += 8 + valueBytes(it.Key().Interface(), depth+1) + valueBytes(it.Value().Interface(), depth+1); n > recentMaxBytes {
				return n
			}
		}
		return n
	}
	return tooLarge
}
