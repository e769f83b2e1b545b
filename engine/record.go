package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// RecordFields are the fields of a run record a record:before handler
// may drop: they are stored empty. The run's outcome (status, reason,
// cause, times, tokens) is always kept.
var RecordFields = []string{"event", "steps", "prompt", "response", "transcript", "error"}

// beforeRecord calls the record:before handlers with the final record of
// run, before it is stored, and empties the fields they name
// (ChangeDropFields). A cancel — or a fail_closed handler that failed —
// drops every field of RecordFields: a handler that guards what is kept
// fails safe. What was dropped, and by whom, is noted on the run.
func (e *Engine) beforeRecord(ctx context.Context, h *Hook, run *Run) {
	lc := e.cfg.Lifecycle
	if !lc.Active(PointRecordBefore) {
		return
	}
	cp := *run
	o := lc.Call(ctx, PointRecordBefore, &Payload{Hook: h, RunID: run.ID, Run: &cp})
	var drop []string
	by := o.By
	if o.Cancelled {
		drop = RecordFields
	} else {
		drop, by = stringList(o.Changes[ChangeDropFields]), o.ChangedBy[ChangeDropFields]
	}
	var dropped, unknown []string
	for _, f := range drop {
		if !slices.Contains(RecordFields, f) {
			unknown = append(unknown, f)
			continue
		}
		if slices.Contains(dropped, f) {
			continue
		}
		dropped = append(dropped, f)
		switch f {
		case "event":
			run.Event = nil
		case "steps":
			steps := make([]*StepResult, len(run.Steps)) // the handlers' copy shares the old slice
			for i, s := range run.Steps {
				c := *s
				c.Output, c.Fields = "", nil
				steps[i] = &c
			}
			run.Steps = steps
		case "prompt":
			run.Prompt = ""
		case "response":
			run.Response = ""
		case "transcript":
			run.ToolCalls, run.Tools = nil, nil
		case "error":
			run.Error = ""
		}
	}
	if len(unknown) > 0 {
		e.log.Warn("record:before: unknown fields not dropped", "handler", by, "hook", h.Name, "run", run.ID,
			"fields", unknown, "known", RecordFields)
	}
	if len(dropped) > 0 {
		why := ""
		if o.Cancelled {
			why = " (" + o.Reason + ")"
		}
		run.Notes = append(run.Notes, fmt.Sprintf("record:before: %s dropped %s from the record%s", by, strings.Join(dropped, ", "), why))
	}
}

// stringList reads a change that is a list of strings ([]string, or
// []any from JSON).
func stringList(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// NoteRun adds note to the notes of the stored record of run id (of
// hook): what a person should know that came after the run's end, such as
// a notification dropped. It does not block: the note is written in the
// order of the engine's record writes, so after the run's final record
// even when that waits for a stalled store; a note for a run that was
// never stored is logged and lost.
func (e *Engine) NoteRun(hook, id, note string) {
	e.wr.submit("run note", hook, id, func(ctx context.Context) error { return e.cfg.Store.NoteRun(ctx, id, note) })
}
