package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Event is something that happened: published by `hookd emit`, the API, a
// file watch, or the engine itself (hook.run.*).
type Event struct {
	Seq    int64          // store sequence number, 0 until stored
	ID     string         // unique id (client-supplied ids make publishing idempotent)
	Type   string         // dot-separated: deploy.failed, hook.run.completed
	Data   map[string]any // JSON object payload
	Source string         // cli, api, engine, watch, hook:NAME, tool:NAME (see FromTool)
	Time   time.Time
	Depth  int // how many runs led to this event (loop protection)
	// TraceParent is the trace the event's runs continue (stored with it).
	TraceParent TraceParent
	// TraceLink, on an event a run published (its steps', a model's
	// emit_event, hook.run.*), is that run's span (Run.Span): the event's
	// runs link to it (TraceLinks.StartedBy) unless TraceParent is set,
	// which wins. Stored with it.
	TraceLink TraceParent
	// Fate is what became of it once dispatched (nil until then, and for
	// hookd's own events, which are not recorded so): stored with it.
	Fate *EventFate

	// Outcome is set on the hook.run.* events the engine publishes: the
	// run and its outcome as typed values, for subscribers in the process.
	// It is not stored: Data is the event's stored and published form.
	Outcome *RunOutcome `json:"-"`

	// Merge, when set, merges this event's payload into the payload of a
	// pending run of its hook that it joins (overlap: queue), by the
	// rules of whoever raised it: package triggers sets it on a file
	// watch's events, to combine change lists as its watch window does.
	// Without it, the later payload's keys win. It is not stored.
	Merge func(pending json.RawMessage) (map[string]any, error) `json:"-"`

	// Step is set on the hook.step.* progress events: the step as a typed
	// value (see progress.go). Like Outcome, it is not stored.
	Step *StepProgress `json:"-"`
}

// Engine event types.
const (
	EventRunStarted   = "hook.run.started"
	EventRunCompleted = "hook.run.completed"
	EventRunFailed    = "hook.run.failed"
	EventRunSkipped   = "hook.run.skipped"
	EventRunCancelled = "hook.run.cancelled"
	// EventToolDenied is published when a tool:call:before handler denies
	// a tool call: {hook, run_id, tool, reason, handler}.
	EventToolDenied = "hook.tool.denied"
)

// ValidateEventType checks a concrete event type: dot-separated segments
// of ASCII letters, digits, '_', '-' and ':' (the characters event
// patterns match literally), none empty, no wildcards.
func ValidateEventType(t string) error {
	if t == "" {
		return errors.New("empty event type")
	}
	for i, seg := range strings.Split(t, ".") {
		if seg == "" {
			return fmt.Errorf("event type %q: segment %d is empty", t, i+1)
		}
		for _, r := range seg {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == ':') {
				return fmt.Errorf("event type %q: segment %q: invalid character %q (want letters, digits, '_', '-', ':')", t, seg, r)
			}
		}
	}
	return nil
}

// ReservedEventTypes names the event types only hookd publishes, for
// the messages that refuse one (ReservedEventType).
const ReservedEventTypes = "hook.*, hookd.*, file.changed and folder.changed"

// ErrReservedEvent refuses a published event whose type belongs to hookd.
var ErrReservedEvent = errors.New("engine: " + ReservedEventTypes + " events are published by hookd itself")

// ReservedEventType reports whether typ is one only hookd publishes: its
// own events (EngineEventType), and file.changed and folder.changed,
// which its file watches publish and event triggers receive, so that no
// emitter can forge a file change.
func ReservedEventType(typ string) bool {
	return EngineEventType(typ) || typ == EventFileChanged || typ == EventFolderChanged
}

// EngineEventType reports whether typ is one of hookd's own bookkeeping
// events: "hook" and every type under "hook." (hook.run.*, hook.tool.*,
// hook.run with two segments, and whatever hookd adds there later), and
// "hookd" and every type under "hookd." (the daemon's hookd.started and
// hookd.stopping).
func EngineEventType(typ string) bool {
	for _, ns := range [...]string{"hook", "hookd"} {
		if typ == ns || strings.HasPrefix(typ, ns+".") {
			return true
		}
	}
	return false
}

// DataJSON returns the payload as a JSON object.
func (e *Event) DataJSON() json.RawMessage {
	if e.Data == nil {
		return json.RawMessage("{}")
	}
	b, err := MarshalData(e.Data)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}
