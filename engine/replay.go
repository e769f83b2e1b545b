package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/redact"
)

// ErrReplay is returned to a tool or step that would publish an event or
// fire a hook during a replay: a replay writes nothing to the run
// history.
var ErrReplay = errors.New("engine: replay: events are not published and hooks are not fired")

// replayEmit stands in for the event publisher of a replay's tools.
func replayEmit(ctx context.Context, typ string, data map[string]any) (*Emitted, error) {
	return nil, fmt.Errorf("%w (would emit %s)", ErrReplay, typ)
}

// replayFire stands in for fire_hook in a replay.
func replayFire(ctx context.Context, hook string, event map[string]any) (*Run, error) {
	return nil, fmt.Errorf("%w (would fire %s)", ErrReplay, hook)
}

// ReplayOptions say how Engine.Replay treats a recorded run.
type ReplayOptions struct {
	// LiveSteps runs the hook's steps again, as a preview does, instead
	// of reading their results from the record.
	LiveSteps bool
	// LiveTools runs the model's tool calls, under the hook's
	// containment, instead of answering them from the record. Tools
	// that publish events or fire hooks are refused all the same.
	LiveTools bool
}

// Replay is a recorded run replayed against the hook as it is now: the
// prompt rendered again from the recorded context, the model called
// again. Nothing of it is stored as a run.
type Replay struct {
	Recorded *Run
	// Run is the replay as a run record that is never stored: its
	// Prompt, Response, Tools, Tokens, Status, Cause and Error.
	Run *Run
	// Model is the model the replay called ("" when it made no call).
	Model string
	// PromptChanged says the prompt rendered differs from the recorded
	// one.
	PromptChanged bool
	// NotRecorded are the tool calls the record had no result for: each
	// got a tool error, and the replay diverged from the record.
	NotRecorded []ToolUse
	// Redacted says where the recorded context had secrets redacted
	// ("step_1 (fetch): API_TOKEN", "tool call 2 (read_file): API_TOKEN"
	// for a call answered from the record): the model saw the marker
	// there, not the value.
	Redacted []string
	// Notes are what a person should know about how faithful the replay
	// is.
	Notes []string
	// Usage is what the replay spent, tagged UsageReplay; nil when no
	// model call was made. Engine.AddUsage counts it.
	Usage *budget.Usage
}

// Diverged reports whether the model called a tool with arguments the
// record had no result for.
func (r *Replay) Diverged() bool { return len(r.NotRecorded) > 0 }

// ReplayOutcome is how a replay compares with its record.
type ReplayOutcome string

const (
	ReplaySame     ReplayOutcome = "same"     // the same answer
	ReplayChanged  ReplayOutcome = "changed"  // another answer
	ReplayDiverged ReplayOutcome = "diverged" // it called a tool the record had no result for
	ReplayFailed   ReplayOutcome = "failed"   // the replay did not end with an answer
)

// Outcome compares the replay with its record: failed when it did not
// complete, diverged when a tool call was not recorded, else same or
// changed by the answer's text.
func (r *Replay) Outcome() ReplayOutcome {
	switch {
	case r.Run.Status != StatusCompleted:
		return ReplayFailed
	case r.Diverged():
		return ReplayDiverged
	case strings.TrimSpace(r.Run.Response) == strings.TrimSpace(r.Recorded.Response):
		return ReplaySame
	}
	return ReplayChanged
}

// Replayable says whether run can be replayed: its model stage was
// reached, so that its record has a prompt (and a transcript) to compare
// with; else why not.
func Replayable(run *Run) error {
	if run.Prompt != "" {
		return nil
	}
	why := string(run.Status)
	if run.Reason != "" {
		why += ": " + run.Reason
	} else if run.Error != "" {
		why += ": " + run.Error
	}
	switch run.Status {
	case StatusQueued, StatusRunning:
		// The prompt and answer are recorded when the run ends.
		return fmt.Errorf("run %s has not finished (%s): its prompt and answer are recorded when it ends; replay it then", run.ID, why)
	case StatusInterrupted:
		return fmt.Errorf("run %s was interrupted before it ended (%s): its prompt was not recorded, there is nothing to replay", run.ID, why)
	}
	return fmt.Errorf("run %s did not reach the model (%s): there is no prompt or answer to replay", run.ID, why)
}

// Replay replays the recorded run rec with hook h (the hook as it is
// now, or another definition of it): it renders h's prompt from the
// steps' results and the event the record holds (or runs the steps again
// with opts.LiveSteps), calls the model and answers its tool calls from
// the record's (or runs them with opts.LiveTools). It records nothing
// and publishes nothing, and lifecycle handlers do not run; a budget
// that is spent refuses it (a *GateError). The caller counts the tokens
// it spent with AddUsage.
//
// A hook with a step the record has no result of fails the replay with
// "needs --live-steps", as a prompt that does not render fails it; the
// outcome is in the returned Replay's Run. An error is returned only
// when nothing was tried.
func (e *Engine) Replay(ctx context.Context, rec *Run, h *Hook, opts ReplayOptions) (*Replay, error) {
	if err := Replayable(rec); err != nil {
		return nil, err
	}
	if !h.NeedsModel() {
		return nil, fmt.Errorf("hook %s has no prompt for a model (skip_llm, or no prompt): there is nothing to replay", h.Name)
	}
	if g, err := e.replayBudget(ctx, h); err != nil {
		return nil, err
	} else if g != nil {
		return nil, g
	}
	prev, err := e.prevStart(ctx, rec)
	if err != nil {
		return nil, err
	}
	ctx, cancel := e.runContext(ctx, h)
	defer cancel()
	now := e.cfg.Clock.Now()
	run := &Run{
		ID: NewID(), Hook: h.Name, Project: h.Project, Trigger: rec.Trigger, Slot: rec.Slot, Status: StatusRunning,
		Event: rec.Event, EventType: rec.EventType, QueuedAt: now, StartedAt: now, Depth: rec.Depth,
	}
	rp := &Replay{Recorded: rec, Run: run, Redacted: redactedContext(rec, !opts.LiveSteps)}
	red := e.redactor(e.replaySecrets(h, rec.Hook))
	envs := h.ChildEnvs(e.cfg.Environ)
	finish := func() *Replay {
		redactRun(red, run)
		run.FinishedAt = e.cfg.Clock.Now()
		for i, u := range run.Tools {
			if u.Outcome == ToolNotRecorded {
				rp.NotRecorded = append(rp.NotRecorded, u)
			} else if !opts.LiveTools {
				// Answered from the record: the model got what the
				// record kept, redacted where it was.
				rp.Redacted = appendRedacted(rp.Redacted, fmt.Sprintf("tool call %d (%s)", i+1, u.Tool), u.Result, u.Error)
			}
		}
		return rp
	}
	if opts.LiveSteps {
		// As a preview: the steps run, the prompt renders whatever the
		// short-circuits say (a replay is asked for), nothing is
		// published.
		e.prepare(ctx, h, run, prev, red, envs, nil)
		if run.Prompt == "" || run.Error != "" {
			if run.Status == StatusRunning || run.Status == StatusCompleted {
				run.Status, run.Cause = StatusFailed, CausePrompt
			}
			return finish(), nil
		}
		run.Status, run.Cause, run.Reason = StatusRunning, "", ""
	} else if !e.renderRecorded(h, rec, run, prev, red) {
		return finish(), nil
	}
	rp.PromptChanged = run.Prompt != rec.Prompt
	rp.Notes = append(rp.Notes, recordedCaps(rec)...)

	if e.cfg.LLM == nil {
		run.Status, run.Cause = StatusFailed, CauseNoModel
		run.Error = "no model client: hookd has no LLM client configured"
		return finish(), nil
	}
	env := &ToolEnv{
		Hook: h, RunID: run.ID, Depth: run.Depth, Workdir: h.Workdir, HooksDir: e.cfg.HooksDir, Protected: e.cfg.Protected,
		Environ: envs.Base(), envs: envs, Records: e.cfg.Store, Redactor: red, Sandbox: e.ToolPolicy(h),
		Emit: replayEmit, Fire: replayFire,
	}
	if !opts.LiveTools {
		env.Replay = NewRecordedTools(rec.Tools)
	}
	req := &LLMRequest{Hook: h, Run: run, System: red.String(h.System), Env: env}
	modelOutcome(ctx, run, e.cfg.LLM.Complete(ctx, req))
	rp.Model = req.Model
	finish()
	if u := usageOf(run, req.Model); u != nil {
		u.Tag = budget.UsageReplay
		rp.Usage = u
	}
	return rp, nil
}

// renderRecorded renders h's prompt into run from the recorded run's
// steps and event, as the run would have had them. A step of h that the
// record has no result of (added since, or of another kind now) fails
// the replay: it needs --live-steps.
func (e *Engine) renderRecorded(h *Hook, rec, run *Run, prevStart time.Time, red *redact.Redactor) bool {
	scope, err := newScope(h, rec, prevStart, red)
	if err != nil {
		run.Status, run.Cause, run.Error = StatusFailed, CauseInternal, fmt.Sprintf("decode the recorded event payload: %v", err)
		return false
	}
	byIndex := make(map[int]*StepResult, len(rec.Steps))
	for _, s := range rec.Steps {
		byIndex[s.Index] = s
	}
	var missing []string
	for i, d := range h.Steps {
		s := byIndex[d.Index]
		switch {
		case s == nil:
			missing = append(missing, d.Label()+" ("+d.Type+"): not in the record")
		case s.Type != d.Type:
			missing = append(missing, fmt.Sprintf("%s: a %s step now, a %s step in the record", d.Label(), d.Type, s.Type))
		default:
			cp := *s
			scope.Steps[i] = &cp
		}
	}
	if len(missing) > 0 {
		run.Status, run.Cause = StatusFailed, CauseStepFailed
		run.Error = "needs --live-steps: " + strings.Join(missing, "; ")
		return false
	}
	prompt, err := e.cfg.Prompt.RenderPrompt(h, scope)
	if err != nil {
		run.Status, run.Cause, run.Error = StatusFailed, CausePrompt, fmt.Sprintf("render prompt: %v", err)
		return false
	}
	run.Prompt = red.String(prompt)
	return true
}

// prevStart is when the run of rec's hook before rec started, as the
// run had it for "last run" in its prompt ({{last_run_time}}): the record
// does not keep it (Run.PrevStart), so it is the start of the newest of
// the hook's earlier runs that started; zero when none did.
func (e *Engine) prevStart(ctx context.Context, rec *Run) (time.Time, error) {
	if !rec.PrevStart.IsZero() {
		return rec.PrevStart, nil
	}
	var prev time.Time
	err := EachRun(ctx, e.cfg.Store, RunFilter{Hook: rec.Hook, Before: rec.ID}, func(r *Run) (bool, error) {
		if !r.StartedAt.IsZero() && !r.StartedAt.After(rec.StartedAt) {
			prev = r.StartedAt
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("read the run before %s: %w", rec.ID, err)
	}
	return prev, nil
}

// EachRun calls fn with the runs f selects, newest first, a page of
// f.Limit (200 when 0) at a time, until fn says stop, returns an error
// or the runs run out.
func EachRun(ctx context.Context, r RecordReader, f RunFilter, fn func(*Run) (more bool, err error)) error {
	if f.Limit <= 0 {
		f.Limit = 200
	}
	for {
		page, err := r.ListRuns(ctx, f)
		if err != nil {
			return err
		}
		for _, run := range page {
			if more, err := fn(run); err != nil || !more {
				return err
			}
		}
		if len(page) < f.Limit {
			return nil
		}
		f.Before = page[len(page)-1].ID
	}
}

// replayBudget is the budget gate's answer for a replay of h, from the
// usage the store holds: a replay spends the same budgets as a run.
func (e *Engine) replayBudget(ctx context.Context, h *Hook) (*GateError, error) {
	if len(budget.Limits(h.Name, h.Source.File, h.Budget, e.cfg.Budget)) == 0 {
		return nil, nil
	}
	now := e.cfg.Clock.Now()
	recs, err := e.cfg.Store.UsageSince(ctx, now.Add(-budget.Day))
	if err != nil {
		return nil, fmt.Errorf("read token usage: %w", err)
	}
	l := budget.NewLedger(recs)
	return budgetGate(&l, h, e.cfg.Budget, now), nil
}

// AddUsage records what a replay spent (Replay.Usage) in the spend
// ledger, where the budgets count it, and in the store's; nil does
// nothing. The record gets an id of its own and the engine's time now,
// whatever u says (both are set in u): the store replaces a record with
// the same id, so a run's id would take the run's tokens out of the
// budgets, and a time far ahead would count forever and prune every
// record a year older than it.
func (e *Engine) AddUsage(ctx context.Context, u *budget.Usage) error {
	if u == nil {
		return nil
	}
	if err := CheckReplayUsage(u); err != nil {
		return err
	}
	u.RunID, u.At = NewID(), e.cfg.Clock.Now()
	cp := *u
	sctx, cancel := e.storeCtx(ctx)
	err := e.cfg.Store.AddUsage(sctx, &cp)
	cancel()
	if err != nil {
		return err
	}
	if e.cancel != nil {
		if err := e.do(ctx, func(s *state) { s.spend.Add(&cp) }); err != nil && !errors.Is(err, ErrStopped) {
			return err
		}
	}
	return nil
}

// MaxReplayTokens bounds each count of a replay's usage record: far
// above what any model call reports, and low enough that no sum of the
// ledger's records overflows (which would make a budget's use negative
// and let every run through).
const MaxReplayTokens = 1 << 40

// CheckReplayUsage says whether u can be recorded as a replay's usage
// (Engine.AddUsage, POST /v1/usage): tagged UsageReplay, naming its hook,
// with counts from 0 to MaxReplayTokens.
func CheckReplayUsage(u *budget.Usage) error {
	if u.Tag != budget.UsageReplay || u.Hook == "" || u.Prompt < 0 || u.Completion < 0 || u.Prompt > MaxReplayTokens || u.Completion > MaxReplayTokens {
		return fmt.Errorf(`only a replay's usage is taken: {"tag": "replay", "hook", "prompt", "completion"} with counts from 0 to %d`, int64(MaxReplayTokens))
	}
	return nil
}

// redactedContext lists where the context rec recorded had secrets
// redacted: its event and, when the replay reads them from the record
// (steps; not with --live-steps), its steps' outputs, fields and errors.
func redactedContext(rec *Run, steps bool) []string {
	var out []string
	note := func(where string, texts ...string) { out = appendRedacted(out, where, texts...) }
	note("event", string(rec.Event))
	if !steps {
		return out
	}
	for _, s := range rec.Steps {
		texts := []string{s.Output, s.Error}
		if len(s.Fields) > 0 {
			if b, err := json.Marshal(s.Fields); err == nil {
				texts = append(texts, string(b))
			}
		}
		where := fmt.Sprintf("step_%d", s.Index)
		if s.Name != "" {
			where += " (" + s.Name + ")"
		}
		note(where, texts...)
	}
	return out
}

// appendRedacted appends "where: NAME, ..." to out when texts hold the
// Redactor's marker, naming each secret once.
func appendRedacted(out []string, where string, texts ...string) []string {
	seen := map[string]bool{}
	var names []string
	for _, t := range texts {
		for _, m := range redact.Marked.FindAllStringSubmatch(t, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				names = append(names, m[1])
			}
		}
	}
	if len(names) == 0 {
		return out
	}
	sort.Strings(names)
	return append(out, where+": "+strings.Join(names, ", "))
}

// recordedCaps notes the recorded tool results that the record keeps cut
// (the model saw more of them than a replay can give).
func recordedCaps(rec *Run) []string {
	n := 0
	for _, u := range rec.Tools {
		if u.ResultBytes > len(u.Result) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%d recorded tool result(s) were kept cut in the record; the replay's model gets what was kept", n)}
}

// RecordedTools answers a replay's tool calls from a recorded run's: a
// call of the same tool with the same arguments (as JSON, whatever their
// spacing and key order) gets what the recorded call got. It is safe for
// concurrent use (it is only read).
type RecordedTools struct {
	calls map[string]ToolUse
}

// NewRecordedTools indexes the tool calls of a recorded run (Run.Tools).
// Calls that did not run (a limit stopped them) have no result and are
// left out.
func NewRecordedTools(uses []ToolUse) *RecordedTools {
	r := &RecordedTools{calls: make(map[string]ToolUse, len(uses))}
	for _, u := range uses {
		if u.Outcome == ToolNotRun || u.Outcome == ToolNotRecorded || u.Tool == "" {
			continue
		}
		r.calls[recordedKey(u.Tool, u.Arguments)] = u
	}
	return r
}

// Answer returns the recorded call of tool (as hooks list it) with args,
// and whether there is one.
func (r *RecordedTools) Answer(tool, args string) (ToolUse, bool) {
	u, ok := r.calls[recordedKey(tool, args)]
	return u, ok
}

func recordedKey(tool, args string) string {
	a := strings.TrimSpace(args)
	if a == "" {
		a = "{}"
	}
	if canon, ok := CanonicalJSON([]byte(a)); ok {
		a = string(canon)
	}
	return tool + "\x00" + a
}

// replaySecrets is h for redaction: with the secrets of the hook the
// recorded run belongs to (as e has it) besides its own, so that a replay
// with another definition (hookd replay --hook FILE) that lists fewer
// secrets still redacts every value the recorded hook kept secret.
func (e *Engine) replaySecrets(h *Hook, recorded string) *Hook {
	for _, rh := range e.hooks {
		if rh.Name != recorded || rh == h {
			continue
		}
		var more []string
		for _, s := range rh.Secrets {
			if !slices.Contains(h.Secrets, s) {
				more = append(more, s)
			}
		}
		if len(more) == 0 {
			return h
		}
		cp := *h
		cp.Secrets = append(slices.Clip(h.Secrets), more...)
		return &cp
	}
	return h
}
