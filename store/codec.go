package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/engine"
)

// The row codec: how hookd's records map to and from database rows, one
// piece of code for both stores. Package store/postgres reads and writes
// runs, events, retries, usage records, briefs and hook states with it,
// so that both stores keep a record alike; only the SQL around it (the
// placeholders, the locks, the upserts) is each dialect's own.
//
// Times are INTEGER/BIGINT unix nanoseconds (timeconv.go); JSON is text,
// byte for byte; a nullable column is read through a pointer, which both
// database/sql and pgx set to nil for NULL.

// Scanner is one row of either driver (database/sql's *sql.Row and
// *sql.Rows, pgx's Row and Rows).
type Scanner interface{ Scan(dest ...any) error }

// Rows is a result set of either driver; its caller closes it.
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// Collect scans every row of rows with scan, in order; none is nil.
func Collect[T any](rows Rows, scan func(Scanner) (T, error)) ([]T, error) {
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// RunCols are the columns of a run's row, in the order of RunArgs and
// ScanRun.
const RunCols = `id, hook, "trigger", slot, status, reason, event_type, event, steps,
	prompt, response, tool_calls, prompt_tokens, completion_tokens, cached_tokens,
	error, fingerprint, depth, queued_at, started_at, finished_at, outcome, repeats, project, hook_version, check_failed,
	trace_links`

// CollectRuns scans rows of RunCols then seq, in the order the query
// gives them. An empty list is [] in JSON, never null.
func CollectRuns(rows Rows) ([]*engine.Run, []int64, error) {
	runs := []*engine.Run{}
	var seqs []int64
	for rows.Next() {
		r, seq, err := ScanRun(rows)
		if err != nil {
			return nil, nil, err
		}
		runs = append(runs, r)
		seqs = append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	return runs, seqs, nil
}

// ScanRun scans RunCols then seq.
func ScanRun(row Scanner) (*engine.Run, int64, error) {
	var (
		r                    engine.Run
		status               string
		slot, pt, ct, cached *int64
		queued, started, fin *int64
		event, steps, tools  *string
		out, links           *string
		seq                  int64
		repeats              int
	)
	if err := row.Scan(&r.ID, &r.Hook, &r.Trigger, &slot, &status, &r.Reason, &r.EventType,
		&event, &steps, &r.Prompt, &r.Response, &tools, &pt, &ct, &cached,
		&r.Error, &r.Fingerprint, &r.Depth, &queued, &started, &fin, &out, &repeats, &r.Project, &r.HookVersion, &r.CheckFailed, &links, &seq); err != nil {
		return nil, 0, err
	}
	r.Status = engine.Status(status)
	if repeats > 1 { // a collapsed record (collapse.go)
		r.Repeats = repeats
	}
	r.Slot, r.QueuedAt, r.StartedAt, r.FinishedAt = ptrTime(slot), ptrTime(queued), ptrTime(started), ptrTime(fin)
	if event != nil && *event != "" {
		r.Event = json.RawMessage(*event)
	}
	if tools != nil && *tools != "" {
		r.ToolCalls = json.RawMessage(*tools)
	}
	if steps != nil && *steps != "" {
		// The text as bytes, not a copy of them (a megabyte for a step's
		// megabyte of output): encoding/json only reads them.
		if err := json.Unmarshal(unsafe.Slice(unsafe.StringData(*steps), len(*steps)), &r.Steps); err != nil {
			return nil, 0, fmt.Errorf("decode steps of run %s: %w", r.ID, err)
		}
	}
	if pt != nil {
		r.Tokens = engine.Tokens{Prompt: *pt, Completion: deref(ct), Cached: deref(cached), Known: true}
	}
	if out != nil {
		if err := decodeOutcome(&r, *out); err != nil {
			return nil, 0, err
		}
	}
	if links != nil && *links != "" {
		if err := json.Unmarshal([]byte(*links), &r.TraceLinks); err != nil {
			return nil, 0, fmt.Errorf("decode trace links of run %s: %w", r.ID, err)
		}
	}
	return &r, seq, nil
}

// RunArgs returns the values of RunCols for r, with status st.
func RunArgs(r *engine.Run, st engine.Status) ([]any, error) {
	if r.ID == "" || r.Hook == "" {
		return nil, errors.New("run has no id or no hook")
	}
	steps, err := StepsArg(r.Steps)
	if err != nil {
		return nil, err
	}
	out, err := outcomeArg(r)
	if err != nil {
		return nil, err
	}
	links, err := TraceLinksArg(r.TraceLinks)
	if err != nil {
		return nil, err
	}
	pt, ct, cached := TokenArgs(r.Tokens)
	return []any{r.ID, r.Hook, r.Trigger, timeArg(r.Slot), string(st), r.Reason, r.EventType,
		RawArg(r.Event), steps, r.Prompt, r.Response, RawArg(r.ToolCalls), pt, ct, cached,
		r.Error, r.Fingerprint, r.Depth, timeArg(r.QueuedAt), timeArg(r.StartedAt),
		timeArg(r.FinishedAt), out, max(r.Repeats, 1), r.Project, r.HookVersion, r.CheckFailed, links}, nil
}

// TraceLinksArg is the value of a run's trace_links column
// (Run.TraceLinks as JSON): NULL when it links to nothing.
func TraceLinksArg(l engine.TraceLinks) (any, error) {
	if l.IsZero() {
		return nil, nil
	}
	b, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("encode trace links: %w", err)
	}
	return string(b), nil
}

// RunOutcomeArg is the value of a run's outcome column: NULL (nil) when
// it ended with nothing more than its status.
func RunOutcomeArg(r *engine.Run) (any, error) { return outcomeArg(r) }

// RunOutcomeWithNote is the outcome column col of run id with note added
// to its notes (Store.NoteRun).
func RunOutcomeWithNote(id, col, note string) (any, error) { return appendNote(id, col, note) }

// StepsArg is the value of a run's steps column: NULL (nil) for none.
func StepsArg(steps []*engine.StepResult) (any, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	b, err := engine.MarshalStepsStored(steps)
	if err != nil {
		return nil, fmt.Errorf("encode steps: %w", err)
	}
	// The text is the encoding's bytes, not a copy of them (a megabyte
	// for a step's megabyte of output): nothing writes to b after this.
	return unsafe.String(unsafe.SliceData(b), len(b)), nil
}

// TokenArgs are the values of a run's token columns: NULL when the model
// reported none.
func TokenArgs(t engine.Tokens) (prompt, completion, cached any) {
	if !t.Known {
		return nil, nil, nil
	}
	return t.Prompt, t.Completion, t.Cached
}

// RawArg stores JSON as text (so that the databases' JSON functions and
// their shells see text), byte for byte; NULL when empty.
func RawArg(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// FateArg is the value of an event's fate column: its fate as JSON text,
// NULL when it has none.
func FateArg(f *engine.EventFate) (any, error) {
	if f == nil {
		return nil, nil
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("encode fate: %w", err)
	}
	return string(b), nil
}

// EventCols are the columns ScanEvent reads, in its order.
const EventCols = `seq, id, type, data, source, time, depth, fate, trace_parent`

// TraceArg is the value of the trace_parent column of an event, a
// pending rerun or a pending retry: the caller's trace t it continues, as it came; or else,
// when a run caused it, that run's span link (engine.Event.TraceLink) as
// the JSON of the trace links it gives its runs (engine.TraceLinks, as
// the runs' trace_links column holds them); NULL for neither. ScanTrace
// reads it.
func TraceArg(t, link engine.TraceParent) any {
	switch {
	case t != "":
		return string(t)
	case link != "":
		b, _ := json.Marshal(engine.TraceLinks{StartedBy: link}) // strings only: no error
		return string(b)
	}
	return nil
}

// ScanTrace reads a trace_parent column TraceArg wrote: the caller's
// trace, or the span of the run that caused it.
func ScanTrace(v *string) (t, link engine.TraceParent, err error) {
	if v == nil || *v == "" {
		return "", "", nil
	}
	if !strings.HasPrefix(*v, "{") {
		return engine.TraceParent(*v), "", nil
	}
	var l engine.TraceLinks
	if err := json.Unmarshal([]byte(*v), &l); err != nil {
		return "", "", fmt.Errorf("decode trace link %q: %w", *v, err)
	}
	return "", l.StartedBy, nil
}

// ScanEvent scans EventCols.
func ScanEvent(row Scanner) (*engine.Event, error) {
	var (
		ev   engine.Event
		data string
		t    *int64
		fate *string
		tp   *string
	)
	if err := row.Scan(&ev.Seq, &ev.ID, &ev.Type, &data, &ev.Source, &t, &ev.Depth, &fate, &tp); err != nil {
		return nil, err
	}
	var err error
	if ev.TraceParent, ev.TraceLink, err = ScanTrace(tp); err != nil {
		return nil, fmt.Errorf("event %s: %w", ev.ID, err)
	}
	if err := json.Unmarshal([]byte(data), &ev.Data); err != nil {
		return nil, fmt.Errorf("decode data of %s: %w", ev.ID, err)
	}
	if fate != nil {
		ev.Fate = new(engine.EventFate)
		if err := json.Unmarshal([]byte(*fate), ev.Fate); err != nil {
			return nil, fmt.Errorf("decode fate of %s: %w", ev.ID, err)
		}
	}
	ev.Time = ptrTime(t)
	return &ev, nil
}

// RetryCols are the columns of a pending retry, in the order of
// RetryArgs and ScanRetry.
const RetryCols = `run_id, hook, retry_of, attempt, attempts, due_at, event, event_type, depth, trace_parent`

// RetryArgs returns the values of RetryCols for r.
func RetryArgs(r *engine.PendingRetry) []any {
	return []any{r.RunID, r.Hook, r.RetryOf, r.Attempt, r.Attempts, timeInt(r.At), RawArg(r.Event), r.EventType, r.Depth,
		TraceArg(r.TraceParent, r.TraceLink)}
}

// ScanRetry scans RetryCols.
func ScanRetry(row Scanner) (*engine.PendingRetry, error) {
	var (
		r     engine.PendingRetry
		due   int64
		event *string
		tp    *string
	)
	if err := row.Scan(&r.RunID, &r.Hook, &r.RetryOf, &r.Attempt, &r.Attempts, &due, &event, &r.EventType, &r.Depth, &tp); err != nil {
		return nil, err
	}
	var err error
	if r.TraceParent, r.TraceLink, err = ScanTrace(tp); err != nil {
		return nil, fmt.Errorf("retry %s: %w", r.RunID, err)
	}
	r.At = intTime(due)
	if event != nil && *event != "" {
		r.Event = json.RawMessage(*event)
	}
	return &r, nil
}

// UsageCols are the columns ScanUsage reads, in its order.
const UsageCols = `run_id, hook, model, at, prompt, completion, unreported, tag`

// ScanUsage scans UsageCols.
func ScanUsage(row Scanner) (*budget.Usage, error) {
	u := &budget.Usage{}
	var at int64
	if err := row.Scan(&u.RunID, &u.Hook, &u.Model, &at, &u.Prompt, &u.Completion, &u.Unreported, &u.Tag); err != nil {
		return nil, err
	}
	u.At = intTime(at)
	return u, nil
}

// BriefCols are the columns of a run ScanBrief reads, in its order.
const BriefCols = `id, hook, status, queued_at, started_at, finished_at, check_failed`

// ScanBrief scans BriefCols.
func ScanBrief(row Scanner) (engine.RunBrief, error) {
	var (
		b                    engine.RunBrief
		status               string
		queued, started, fin *int64
	)
	if err := row.Scan(&b.ID, &b.Hook, &status, &queued, &started, &fin, &b.CheckFailed); err != nil {
		return b, err
	}
	b.Status = engine.Status(status)
	b.QueuedAt, b.StartedAt, b.FinishedAt = ptrTime(queued), ptrTime(started), ptrTime(fin)
	return b, nil
}

// ScanHookState scans a hook's state: hook, paused, last slot, last
// start, last run id, last status, last run's slot, the check that run
// failed, and first seen.
func ScanHookState(row Scanner) (engine.HookState, error) {
	var (
		s                          engine.HookState
		slot, start, runSlot, seen int64
		status                     string
	)
	if err := row.Scan(&s.Hook, &s.Paused, &slot, &start, &s.LastRunID, &status, &runSlot, &s.LastCheckFailed, &seen); err != nil {
		return s, err
	}
	s.LastSlot, s.LastStart, s.LastStatus = intTime(slot), intTime(start), engine.Status(status)
	s.LastRunSlot, s.FirstSeen = intTime(runSlot), intTime(seen)
	return s, nil
}

func ptrTime(ns *int64) time.Time {
	if ns == nil {
		return time.Time{}
	}
	return intTime(*ns)
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// EncodeOutcome returns the JSON text that stores how r ended beyond its
// status (gate, cause, notes, tools, attempts), or ok false when there is
// nothing to store.
func EncodeOutcome(r *engine.Run) (text string, ok bool, err error) {
	v, err := outcomeArg(r)
	if err != nil || v == nil {
		return "", false, err
	}
	return v.(string), true, nil
}

// DecodeOutcome fills r's outcome fields from text EncodeOutcome made.
func DecodeOutcome(r *engine.Run, text string) error { return decodeOutcome(r, text) }

// Collapsible reports whether r is a skip record that merges into the
// hook's latest identical one (a paused or disabled hook's, one per
// trigger) instead of being inserted.
func Collapsible(r *engine.Run) bool { return collapsible(r) }

// RerunCols are the columns of a pending rerun, in the order of
// RerunArgs and ScanRerun.
const RerunCols = `run_id, hook, interrupted, event, event_type, depth, planned_at, trace_parent`

// RerunArgs returns the values of RerunCols for r.
func RerunArgs(r *engine.PendingRerun) []any {
	return []any{r.RunID, r.Hook, r.Interrupted, RawArg(r.Event), r.EventType, r.Depth, timeInt(r.PlannedAt), TraceArg(r.TraceParent, r.TraceLink)}
}

// ScanRerun scans RerunCols.
func ScanRerun(row Scanner) (*engine.PendingRerun, error) {
	var (
		r       engine.PendingRerun
		planned int64
		event   *string
		tp      *string
	)
	if err := row.Scan(&r.RunID, &r.Hook, &r.Interrupted, &event, &r.EventType, &r.Depth, &planned, &tp); err != nil {
		return nil, err
	}
	var err error
	if r.TraceParent, r.TraceLink, err = ScanTrace(tp); err != nil {
		return nil, fmt.Errorf("rerun %s: %w", r.RunID, err)
	}
	r.PlannedAt = intTime(planned)
	if event != nil && *event != "" {
		r.Event = json.RawMessage(*event)
	}
	return &r, nil
}
