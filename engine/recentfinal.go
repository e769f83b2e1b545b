package engine

import "encoding/json"

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
// texts and its steps' outputs and fields.
func recordBytes(run *Run) int {
	n := len(run.Event) + len(run.Prompt) + len(run.Response) + len(run.ToolCalls) + len(run.Error)
	for _, s := range run.Steps {
		if s != nil {
			n += len(s.Output) + len(s.Error) + valueBytes(s.Fields, 0)
		}
	}
	return n
}

// valueBytes is about how many bytes a decoded JSON-like value holds
// (strings and raw JSON by length, anything else by a word), down to a
// depth past which it counts a nested value as too large to hold.
func valueBytes(v any, depth int) int {
	if depth > 8 {
		return recentMaxBytes + 1
	}
	switch v := v.(type) {
	case string:
		return len(v)
	case []byte:
		return len(v)
	case json.RawMessage:
		return len(v)
	case []string:
		n := 0
		for _, s := range v {
			n += 8 + len(s)
		}
		return n
	case []any:
		n := 0
		for _, e := range v {
			n += 8 + valueBytes(e, depth+1)
		}
		return n
	case map[string]any:
		n := 0
		for k, e := range v {
			n += len(k) + 8 + valueBytes(e, depth+1)
		}
		return n
	default:
		return 8
	}
}
