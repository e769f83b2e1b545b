package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/redact"
)

// execute runs one run to its end on its own goroutine and reports back to
// the loop. Everything it records goes through the store before the loop
// hears of it.
func (e *Engine) execute(ctx context.Context, ent *entry, h *Hook, act *active) {
	defer e.runs.Done()
	run := act.run
	bg := context.WithoutCancel(ctx)

	began := e.cfg.Clock.Now()
	if err := e.startRecord(bg, act); err != nil {
		act.startErr = err
		close(act.started)
		e.notStarted(bg, h, act, err, began)
		ev := RunEvent(run)
		ev.Time = e.cfg.Clock.Now()
		e.send(func(s *state) {
			s.finished(ent, act, nil)
			s.events = append(s.events, ev)
		})
		return
	}
	close(act.started)
	e.forgetStarted(act)
	// Let the caller waiting for the start (Emit, fire --wait) run first:
	// close makes it runnable on this P, but this goroutine would keep the
	// P through the step's fork/exec (vfork holds it) and its process
	// group's commit. With 8 publishers on 2 cores Emit waited 1.6 ms at
	// the median (of a 4.2 ms start p50) for the run to let go.
	runtime.Gosched()
	retry := e.perform(ctx, h, act, e.cfg.Store.FinishRun)
	ev := RunEvent(run)
	ev.Time = run.FinishedAt
	ev.Outcome.Intermediate = retry != nil && h.Retry.Notify != RetryNotifyEach
	// One message: the run leaves the in-flight set before its outcome is
	// dispatched, so a hook reacting to its own outcome is not refused as
	// in flight. The events the run still held (its last step's end) go
	// first, dispatched while it is in flight, as if sent before.
	held := act.out.take()
	e.send(func(s *state) {
		if len(held) > 0 {
			s.events = append(s.events, held...)
			s.flushEvents()
		}
		s.finished(ent, act, retry)
		s.events = append(s.events, ev)
	})
}

// notStarted records why act's run did not start: its start, begun at
// began, could not be recorded (err). A store that did not take it is
// stalled (writer.go): a schedule slot's run joins its hook's missed
// slots; another's failed record waits for the store with the loop's.
func (e *Engine) notStarted(ctx context.Context, h *Hook, act *active, err error, began time.Time) {
	run := act.run
	if errors.Is(err, ErrSlotTaken) {
		e.slotTaken(ctx, act)
		return
	}
	if _, ok := errors.AsType[*stalledError](err); !ok {
		e.wr.failed(err, began)
	}
	e.log.Error("cannot record the run's start; not running it", "hook", run.Hook, "run", run.ID, "err", err)
	run.FinishedAt = e.cfg.Clock.Now()
	if !run.Slot.IsZero() && !act.wasQueued {
		cause := stallCause(err, e.cfg.StoreTimeout)
		run.Status, run.Gate = StatusSkipped, GateMissed
		run.Reason = fmt.Sprintf("missed: the store could not record the start of slot %s (%s)", run.Slot.Format(time.RFC3339), cause)
		e.wr.missSlot(h, run.Slot, run.ID, cause, unfenced)
		return
	}
	run.Status, run.Cause = StatusFailed, CauseInternal
	run.Error = fmt.Sprintf("record run start: %v", err)
	if act.endsQueued() {
		// Its queued record ends failed once the store takes it. A run
		// that was not queued leaves none: who triggered it is told
		// (Emit's error; a Wait on the run Fire returned).
		cp := *run
		e.wr.submit("run record", run.Hook, run.ID, func(ctx context.Context) error { return e.cfg.Store.FinishRun(ctx, &cp) })
	}
}

// endsQueued reports whether act's queued record, if any, ends failed
// when its start (a cluster's release) cannot be recorded: not that of a
// stored pending rerun or retry (act.stored), which is still owed: its
// record stays queued, under the run id the stored follow-up keeps, and
// the next start, takeover (restoreQueue, then restoreReruns,
// restoreRetries) or poll (adoptStored) puts it back in line
// (storedWaits). Before, it ended failed under that id, and each of them
// took the record for the run's start and forgot the follow-up: it never
// ran.
func (act *active) endsQueued() bool {
	return act.wasQueued && act.stored == nil
}

// releaseFailed records why a run a cluster's scheduler admitted was not
// released to the nodes (err). A schedule slot's run that was not queued
// joins its hook's missed slots, fenced as the scheduler's records are
// (fence), as the single daemon's does when its start cannot be recorded
// (notStarted): a release the database refused, or did not answer in time
// (StoreTimeout) and did not make (read back: releaseEnded), would
// otherwise drop the slot with no record. A slot
// another run holds is recorded slot_taken; a release refused because the
// lease is lost records nothing: the next scheduler decides the slot. A
// queued run whose release failed ends failed, its queued record with
// it, written by the writer after the run's own records (so, when its
// queued record waits for the store, release: a stalledError, once that
// record is written), as the single daemon's queued run whose start
// could not be recorded does (notStarted); unless the lease is lost: its
// record stays queued, and the next scheduler, which holds it, releases
// it; or the record is no longer queued (ErrNotFound): it is not
// overwritten. Before, only the stalledError's did: a release the database
// refused or did not answer in time left the record queued, saying the
// run waits, while this scheduler had given it up; the next takeover ran
// it then (its hook's later run meanwhile or not), or requeue merged a
// later pending run into it (coalesceWaiting).
func (e *Engine) releaseFailed(ctx context.Context, h *Hook, act *active, err error, fence func(context.Context) context.Context) {
	run := act.run
	if errors.Is(err, ErrSlotTaken) {
		e.slotTaken(ctx, act)
		return
	}
	e.log.Error("cannot record the run's start; not running it", "hook", run.Hook, "run", run.ID, "err", err)
	run.FinishedAt = e.cfg.Clock.Now()
	if !run.Slot.IsZero() && !act.wasQueued && !errors.Is(err, ErrLeaseLost) {
		cause := stallCause(err, e.cfg.StoreTimeout)
		run.Status, run.Gate = StatusSkipped, GateMissed
		run.Reason = fmt.Sprintf("missed: the store could not record the release of slot %s (%s)", run.Slot.Format(time.RFC3339), cause)
		e.wr.missSlot(h, run.Slot, "", cause, fence)
		return
	}
	run.Status, run.Cause = StatusFailed, CauseInternal
	run.Error = fmt.Sprintf("record run start: %v", err)
	if act.endsQueued() && !errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrNotFound) {
		cp := *run
		e.wr.submit("run record", run.Hook, run.ID, func(ctx context.Context) error { return e.cfg.Store.FinishRun(fence(ctx), &cp) })
	}
}

// slotTaken records a run not started because its slot fired before.
func (e *Engine) slotTaken(ctx context.Context, act *active) {
	run := act.run
	log := e.log.With("hook", run.Hook, "run", run.ID)
	// The slot fired before (the clock moved back, or a restart raced):
	// record why this trigger did nothing.
	run.Status, run.Gate = StatusSkipped, GateSlotTaken
	run.Reason = fmt.Sprintf("slot_taken: slot %s already fired", run.Slot.Format(time.RFC3339))
	run.Slot = time.Time{}
	run.FinishedAt = e.cfg.Clock.Now()
	record := e.cfg.Store.InsertRun
	if act.wasQueued {
		record = e.cfg.Store.FinishRun
	}
	sctx, cancel := e.storeCtx(ctx)
	defer cancel()
	if err := record(sctx, run); err != nil {
		log.Error("store run record", "err", err)
	}
}

// perform executes a run whose start is recorded, to its end, and stores
// its final record with finish. It returns the retry it planned, if any.
func (e *Engine) perform(ctx context.Context, h *Hook, act *active, finish func(context.Context, *Run) error) *PendingRetry {
	run := act.run
	// The run's lines name its hook and run first, as With would, but
	// without building a logger each run: attributes given to LogAttrs
	// cost nothing when the level is off.
	who := [2]slog.Attr{slog.String("hook", h.Name), slog.String("run", run.ID)}
	bg := context.WithoutCancel(ctx)
	e.log.LogAttrs(bg, slog.LevelInfo, "run started", who[0], who[1], slog.String("trigger", run.Trigger))
	started := RunEvent(run)
	if late, ok := lateness(h, run); ok {
		started.Data["lateness_ms"] = float64(late.Microseconds()) / 1000
		started.Outcome.Lateness, started.Outcome.Scheduled = late, true
	}
	e.hold(&act.out, started) // sent with the first step's start (outbox.go)

	rctx, cancel := e.runContext(ctx, h)
	shared := act.shared
	if shared == nil || shared.hook != h {
		shared = e.newHookShared(h) // a run another node's scheduler released (clusterrun.go)
	}
	red := shared.red
	if lc := e.cfg.Lifecycle; lc.Active(PointRunBefore) {
		e.flush(&act.out)
		if o := lc.Call(rctx, PointRunBefore, &Payload{Hook: h, RunID: run.ID, Run: run}); o.Cancelled {
			run.Status, run.Cause, run.Reason = StatusCancelled, CauseHandler, "run:before: "+o.String()
			e.log.LogAttrs(bg, slog.LevelInfo, "run cancelled by a lifecycle handler", who[0], who[1],
				slog.String("handler", o.By), slog.String("reason", red.String(o.Reason)))
		}
	}
	var model string
	if run.Status != StatusCancelled {
		model = e.pipeline(rctx, h, run, run.PrevStart, red, shared.envs, &act.out)
	}
	cancel()

	redactRun(red, run)
	run.FinishedAt = e.cfg.Clock.Now()
	retry := e.planRetry(bg, h, run, run.FinishedAt)
	if e.cfg.Lifecycle.Active(PointRecordBefore) {
		e.flush(&act.out)
	}
	e.beforeRecord(bg, h, run)
	final := *run // the writer's, should the store be stalled (persist)
	if err := e.persist(bg, "run result", run.Hook, run.ID, func(ctx context.Context) error { return finish(ctx, &final) }); err != nil {
		e.log.LogAttrs(bg, slog.LevelError, "store run result", who[0], who[1], slog.Any("err", err))
	}
	act.usage = usageOf(run, model)
	e.recordUsage(bg, act.usage)
	if lc := e.cfg.Lifecycle; lc.Active(PointRunAfter) {
		e.flush(&act.out)
		cp := *run
		lc.Call(bg, PointRunAfter, &Payload{Hook: h, RunID: run.ID, Run: &cp})
	}
	e.log.LogAttrs(bg, slog.LevelInfo, "run finished", who[0], who[1], slog.Any("status", run.Status),
		slog.String("reason", run.Reason), slog.Duration("duration", run.Duration()))
	return retry
}

// startRecord records the start of act's run and, when the run is the
// one its stored event started, marks the event dispatched with it; when
// it carries an event not stored yet, stores that event with it.
func (e *Engine) startRecord(parent context.Context, act *active) error {
	if wr := act.after; wr != nil {
		// The loop's records made before the start go first: a queued
		// run's record precedes its start.
		e.wr.awaitWritten(wr)
		if st, ok := e.wr.stalled(); ok {
			return &stalledError{st}
		}
	}
	ctx, cancel := e.storeCtx(parent)
	defer cancel()
	if err := e.recordStart(ctx, act); err != nil {
		return err
	}
	e.wr.ok()
	return nil
}

// recordStart stores act's start (startRecord).
func (e *Engine) recordStart(ctx context.Context, act *active) error {
	if act.carry != nil {
		if err := e.cfg.Store.StartRunWithEvent(ctx, act.run, act.carry); err != nil {
			return err
		}
		act.marked = true
		return nil
	}
	if act.markSeq != 0 {
		if err := e.cfg.Store.StartRunDispatched(ctx, act.run, act.markSeq); err != nil {
			return err
		}
		act.marked = true
		return nil
	}
	return e.cfg.Store.StartRun(ctx, act.run)
}

// pipeline executes the steps, the short-circuits and the model stage,
// leaving the outcome in run. It returns the model the stage called ("":
// none was called).
func (e *Engine) pipeline(ctx context.Context, h *Hook, run *Run, prevStart time.Time, red *redact.Redactor, envs *ChildEnvs, out *outbox) (model string) {
	envs = envs.ForRun(run) // its processes continue its trace ($TRACEPARENT)
	toModel := e.prepare(ctx, h, run, prevStart, red, envs, out)
	if !toModel {
		return ""
	}
	if e.cfg.LLM == nil {
		run.Status, run.Cause = StatusFailed, CauseNoModel
		run.Error = "no model client: this hook has a prompt and needs a model, but hookd has no LLM client configured; " +
			"set skip_llm: true to run its steps only"
		return ""
	}
	req := &LLMRequest{Hook: h, Run: run, System: red.String(h.System), Env: e.toolEnv(h, run, envs, red)}
	e.flush(out)
	modelOutcome(ctx, run, e.cfg.LLM.Complete(ctx, req))
	return req.Model
}

// modelOutcome sets run's status from how its model stage ended, err
// being what the LLM's Complete returned: a run and a replay end alike.
func modelOutcome(ctx context.Context, run *Run, err error) {
	switch {
	case stopped(ctx, run):
	case err == nil:
		run.Status = StatusCompleted
	default:
		if ce, ok := errors.AsType[*CancelError](err); ok {
			run.Status, run.Cause, run.Reason = StatusCancelled, CauseHandler, ce.Error()
			return
		}
		run.Status, run.Error = StatusFailed, err.Error()
		if run.Cause == "" {
			run.Cause = CauseModelError
		}
	}
}

// prepare runs everything before the model stage: the steps, the
// fingerprint, the short-circuits and the prompt. It returns whether the
// model is to be called; when not, the outcome is in run. envs are the
// environments of the hook's processes (h.ChildEnvs), shared by its runs:
// read only. A preview (Engine.Preview) publishes no events from
// steps and renders the prompt even when a short-circuit or skip_llm
// decided the run. out holds the progress events of a run (outbox.go);
// a preview (nil) publishes none.
func (e *Engine) prepare(ctx context.Context, h *Hook, run *Run, prevStart time.Time, red *redact.Redactor, envs *ChildEnvs, out *outbox) (toModel bool) {
	preview := out == nil
	policy := e.SandboxPolicy(h)
	scope, err := newScope(h, run, prevStart, red)
	if err != nil {
		run.Status, run.Cause, run.Error = StatusFailed, CauseInternal, fmt.Sprintf("decode event payload: %v", err)
		return false
	}
	emit := e.emitFrom(run, red)
	if preview {
		emit = previewEmit
	}

	for i, def := range h.Steps {
		if stopped(ctx, run) {
			return false
		}
		if def.If != nil {
			ok, err := def.If.Eval(scope)
			if err != nil || !ok {
				res := &StepResult{Index: def.Index, Name: def.Name, Type: def.Type, Started: e.cfg.Clock.Now(), Skipped: err == nil}
				if err != nil {
					res.Error = "if: " + err.Error()
				}
				scope.Steps[i] = res
				run.Steps = append(run.Steps, res)
				if why, fails := stepFailure(h, def, res); fails {
					run.Status, run.Cause, run.Reason, run.Error = StatusFailed, CauseStepFailed, why, def.Label()+": "+res.Error
					return false
				}
				continue
			}
		}
		var output func(string, []byte)
		if !preview {
			output = e.stepOutput(run, def)
			e.stepStarted(out, run, def, e.cfg.Clock.Now())
			e.flush(out) // the step (and its handlers) may take a while
		}
		res := e.lifecycleStep(ctx, h, run, def, &StepEnv{
			Hook: h, RunID: run.ID, Workdir: h.Workdir, Env: envs.Step(def.Index), Scope: scope, Def: def, Now: e.cfg.Clock.Now(),
			Records: e.cfg.Store, Emit: emit, Redactor: red, Database: e.cfg.Database,
			TrackProcess: e.tracker(run, def.Index, preview), Sandbox: StepPolicy(policy, def),
			Output: output,
		})
		scope.Steps[i] = res
		run.Steps = append(run.Steps, res)
		if res.Error != "" {
			// Redacted: a step's error may quote a secret (a URL, a command).
			e.log.Warn("step failed", "hook", h.Name, "run", run.ID, "step", def.Label(), "err", res.Error)
		}
		why, fails := stepFailure(h, def, res)
		if !preview {
			e.stepFinished(out, run, def, res, fails)
		}
		if fails {
			if stopped(ctx, run) {
				return false
			}
			run.Status, run.Cause, run.Reason = StatusFailed, CauseStepFailed, why
			if res.Error != "" {
				run.Error = def.Label() + ": " + res.Error
			}
			return false
		}
	}
	if stopped(ctx, run) {
		return false
	}

	run.Fingerprint = fingerprint(run.Steps)
	run.CheckFailed = checkFailed(h, run.Steps)
	reason, skip := e.shortCircuit(ctx, h, run, scope)
	switch {
	case skip:
		run.Status, run.Cause, run.Reason = StatusCompleted, CauseShortCircuit, "short-circuit: "+reason
	case !h.NeedsModel():
		run.Status = StatusCompleted
	}
	decided := skip || !h.NeedsModel()
	// A preview renders the prompt whenever the hook has one, to show it.
	if decided && (!preview || strings.TrimSpace(h.Prompt) == "") {
		return false
	}

	prompt, err := e.cfg.Prompt.RenderPrompt(h, scope)
	if err != nil {
		run.Error = fmt.Sprintf("render prompt: %v", err)
		if !decided {
			run.Status, run.Cause = StatusFailed, CausePrompt
		}
		return false
	}
	if lc := e.cfg.Lifecycle; lc.Active(PointPromptRenderAfter) {
		e.flush(out)
		o := lc.Call(ctx, PointPromptRenderAfter, &Payload{Hook: h, RunID: run.ID, Prompt: prompt})
		if o.Cancelled {
			run.Prompt = red.String(prompt)
			if !decided {
				run.Status, run.Cause, run.Reason = StatusCancelled, CauseHandler, "prompt:render:after: "+o.String()
			}
			return false
		}
		if v, ok := o.Changes[ChangePrompt]; ok {
			if s, ok := v.(string); ok {
				prompt = s
			} else {
				e.log.Warn("lifecycle handler amended the prompt with a non-string; ignored",
					"hook", h.Name, "run", run.ID, "handler", o.ChangedBy[ChangePrompt])
			}
		}
	}
	run.Prompt = red.String(prompt)
	return !decided
}

// newScope is the scope h's steps and prompt render in for run (a run,
// or the record a replay renders from): its event, decoded and redacted
// before anything derives from it (steps, the prompt, which quotes and
// caps values, and events the run publishes), its time, the hook's last
// start and its steps' names; the steps' results are filled in as they
// come.
func newScope(h *Hook, run *Run, prevStart time.Time, red *redact.Redactor) (*Scope, error) {
	scope := &Scope{
		Hook: h.Name, RunID: run.ID, Trigger: run.Trigger, Now: run.StartedAt, LastRunTime: prevStart,
		Steps: make([]*StepResult, len(h.Steps)), StepNames: make(map[string]int, len(h.Steps)),
		Redactor: red,
	}
	if len(run.Event) > 0 {
		if err := json.Unmarshal(run.Event, &scope.Event); err != nil {
			return nil, err
		}
		scope.Event = red.Map(scope.Event)
	}
	for _, d := range h.Steps {
		if d.Name != "" {
			scope.StepNames[d.Name] = d.Index
		}
	}
	return scope, nil
}

// stepFailure decides whether a step's result fails its run, and says
// why ("step_0 (backup): exit code 12"). A step fails the run when it is
// required, or when the hook has no model stage and the step does not
// allow failure: then it fails by an error (it could not run), by a
// command's non-zero exit, or by an HTTP answer of 4xx or 5xx (as curl
// -f reads it: a webhook that answered 503 did not take the post, and a
// retry: should run it again). In a hook with a model stage, a
// non-required step's exit code, status and error are data for the model.
func stepFailure(h *Hook, def *StepDef, res *StepResult) (string, bool) {
	if !def.Required && (h.NeedsModel() || def.AllowFailure) {
		return "", false
	}
	switch OutcomeOfStep(res) {
	case StepFailed:
		return def.Label() + ": " + res.Error, true
	case StepExit:
		return fmt.Sprintf("%s: exit code %d", def.Label(), *res.ExitCode), true
	case StepHTTP:
		return fmt.Sprintf("%s: status %d", def.Label(), res.StatusCode), true
	}
	return "", false
}

// runContext bounds a run by its hook's timeout (or the default); when it
// passes, the run fails naming the timeout.
func (e *Engine) runContext(ctx context.Context, h *Hook) (context.Context, context.CancelFunc) {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = e.cfg.DefaultTimeout
	}
	return context.WithTimeoutCause(ctx, timeout,
		&cancelCause{StatusFailed, CauseTimeout, fmt.Sprintf("timeout: the run exceeded its %s timeout", timeout)})
}

// emitFrom returns a publisher of events raised by run's steps: their
// source names the hook (or, for a run a model's tool call started, that
// origin, so the mark carries down the chain), their depth is one more
// than the run's and the hook's secrets are redacted from their data
// before it is stored or sent.
func (e *Engine) emitFrom(run *Run, red *redact.Redactor) func(ctx context.Context, typ string, data map[string]any) (*Emitted, error) {
	source := "hook:" + run.Hook
	if _, ok := FromTool(run.Trigger); ok {
		source = run.Trigger
	}
	return e.emitAs(run, red, source)
}

// emitAs returns a publisher of events raised by run with this source.
func (e *Engine) emitAs(run *Run, red *redact.Redactor, source string) func(ctx context.Context, typ string, data map[string]any) (*Emitted, error) {
	return func(ctx context.Context, typ string, data map[string]any) (*Emitted, error) {
		return e.EmitReport(ctx, &Event{Type: typ, Data: red.Map(data), Source: source, Depth: run.Depth + 1, TraceLink: run.Span()})
	}
}

// lifecycleStep runs one step between its step:before and step:after
// handlers. A step:before cancel skips the step, which then fails with
// an error naming the handler (so required: true fails the run); an
// "env" change adds variables to the step's environment.
func (e *Engine) lifecycleStep(ctx context.Context, h *Hook, run *Run, def *StepDef, env *StepEnv) *StepResult {
	lc := e.cfg.Lifecycle
	var res *StepResult
	if lc.Active(PointStepBefore) {
		// A copy: the environment is shared by the hook's runs.
		o := lc.Call(ctx, PointStepBefore, &Payload{Hook: h, RunID: run.ID, Step: def, StepEnv: slices.Clone(env.Env)})
		if o.Cancelled {
			res = &StepResult{Index: def.Index, Name: def.Name, Type: def.Type, Started: e.cfg.Clock.Now(),
				Error: "step:before: " + o.String()}
		}
		if v, ok := o.Changes[ChangeEnv]; ok && res == nil {
			add, err := envChange(v)
			if err != nil {
				e.log.Warn("lifecycle handler amended a step's env with a bad value; ignored", "hook", h.Name,
					"run", run.ID, "step", def.Label(), "handler", o.ChangedBy[ChangeEnv], "err", err)
			} else {
				env.Env = append(append([]string(nil), env.Env...), add...)
			}
		}
	}
	if res == nil {
		res = e.runStep(ctx, h, run, def, env)
	}
	// Redacted before a handler, later steps, the prompt or the log see it.
	redactStep(env.Redactor, res)
	if lc.Active(PointStepAfter) {
		cp := *res
		lc.Call(ctx, PointStepAfter, &Payload{Hook: h, RunID: run.ID, Step: def, StepResult: &cp})
	}
	return res
}

// envChange reads an "env" change: a map of NAME -> scalar.
func envChange(v any) ([]string, error) {
	var out []string
	switch m := v.(type) {
	case map[string]string:
		for k, x := range m {
			out = append(out, k+"="+x)
		}
	case map[string]any:
		for k, x := range m {
			switch x.(type) {
			case string, float64, int, int64, bool:
				out = append(out, fmt.Sprintf("%s=%v", k, x))
			default:
				return nil, fmt.Errorf("env %s: want a scalar, got %T", k, x)
			}
		}
	default:
		return nil, fmt.Errorf("want a map of NAME: value, got %T", v)
	}
	sort.Strings(out)
	return out, nil
}

// runStep runs one step under its own timeout and always returns a result.
func (e *Engine) runStep(ctx context.Context, h *Hook, run *Run, def *StepDef, env *StepEnv) *StepResult {
	sctx := ctx
	if def.Timeout > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, def.Timeout)
		defer cancel()
	}
	start, mono := e.cfg.Clock.Now(), e.cfg.Clock.Mono()
	res, err := runStepSafely(sctx, def, env)
	if res == nil {
		res = &StepResult{}
	}
	// The step's timing is the engine's, on its clock (the duration on
	// its monotonic reading): what a step says of its own start and
	// duration is not used.
	res.Index, res.Name, res.Type = def.Index, def.Name, def.Type
	res.Started, res.Duration = start, clock.Since(e.cfg.Clock, mono)
	if err != nil && res.Error == "" {
		res.Error = err.Error()
	}
	return res
}

// runStepSafely turns a panicking step into a step error.
func runStepSafely(ctx context.Context, def *StepDef, env *StepEnv) (res *StepResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("step panicked: %v", p)
		}
	}()
	if def.Step == nil {
		return nil, fmt.Errorf("step type %q was not built", def.Type)
	}
	return def.Step.Run(ctx, env)
}

// stopped reports whether the run's context ended, and if so records how.
func stopped(ctx context.Context, run *Run) bool {
	if ctx.Err() == nil {
		return false
	}
	if cc, ok := errors.AsType[*cancelCause](context.Cause(ctx)); ok {
		run.Status, run.Cause = cc.status, cc.cause
		if cc.status == StatusFailed {
			run.Error, run.Reason = cc.reason, string(cc.cause)
		} else {
			run.Reason = cc.reason
		}
		return true
	}
	run.Status, run.Reason = StatusCancelled, context.Cause(ctx).Error()
	return true
}

// shortCircuit checks the steps' skip_llm_if_* conditions in order; the
// first that holds skips the model.
func (e *Engine) shortCircuit(ctx context.Context, h *Hook, run *Run, scope *Scope) (string, bool) {
	var prevPrint *string
	for i, def := range h.Steps {
		res := run.Steps[i]
		if res.Skipped {
			continue // its if: was false: nothing it gathered can decide
		}
		sk := def.Skip
		why := ""
		switch {
		case sk.IfExitZero && passedExit(res):
			why = "exit code 0"
		case sk.IfStatusOK && passedStatus(res):
			why = fmt.Sprintf("status %d", res.StatusCode)
		case sk.IfEmpty && res.Error == "" && isEmptyResult(res):
			why = "output is empty"
		case sk.IfUnchanged:
			if prevPrint == nil {
				p, err := e.cfg.Store.LastFingerprint(ctx, h.Name)
				if err != nil {
					e.log.Warn("read last fingerprint", "hook", h.Name, "err", err)
				}
				prevPrint = &p
			}
			if *prevPrint != "" && *prevPrint == run.Fingerprint {
				why = "context unchanged since the last run"
			}
		}
		if why == "" && sk.If != "" {
			v, err := Expand(sk.If, scope, nil)
			if err == nil && truthy(v) {
				why = "skip_llm_if " + sk.If + " is true"
			}
		}
		if why == "" && sk.Cond != nil && !res.Skipped {
			ok, err := sk.Cond.Eval(scope)
			switch {
			case err != nil:
				run.Notes = append(run.Notes, def.Label()+": skip_llm_if not evaluated, so the model runs: "+err.Error())
			case ok:
				why = "skip_llm_if " + sk.Cond.Source + " holds"
			}
		}
		if why != "" {
			return def.Label() + ": " + why, true
		}
	}
	return "", false
}

func exitZero(r *StepResult) bool { return r.ExitCode != nil && *r.ExitCode == 0 }

func status2xx(r *StepResult) bool { return r.StatusCode >= 200 && r.StatusCode < 300 }

// isEmptyResult reports whether a step gathered nothing: the count it
// reports is zero, or, for a kind that counts nothing, its primary output
// is blank.
func isEmptyResult(r *StepResult) bool {
	if r.Count != nil {
		return *r.Count == 0
	}
	return strings.TrimSpace(r.Output) == ""
}

func truthy(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes", "1":
		return true
	}
	return false
}

// fingerprint hashes what the steps gathered (outputs and errors, not
// timings), for skip_llm_if_unchanged.
func fingerprint(steps []*StepResult) string {
	if len(steps) == 0 {
		return ""
	}
	h := sha256.New()
	// The bytes fmt.Fprintf(h, "%d\x00%d\x00%s\x00%d\x00%s\x00", ...)
	// wrote, without its copy of the output into its own buffer (a 1 MB
	// copy a run that printed 1 MB): the texts go to the hash through a
	// small buffer (sha256's digest has no WriteString, and io.WriteString
	// would convert a whole output to bytes).
	var num []byte
	var chunk [4096]byte
	writeString := func(s string) {
		for len(s) > 0 {
			n := copy(chunk[:], s)
			h.Write(chunk[:n])
			s = s[n:]
		}
	}
	for _, s := range steps {
		num = strconv.AppendInt(num[:0], int64(s.Index), 10)
		num = append(num, 0)
		num = strconv.AppendInt(num, int64(len(s.Output)), 10)
		num = append(num, 0)
		h.Write(num)
		writeString(s.Output)
		num = append(num[:0], 0)
		num = strconv.AppendInt(num, int64(len(s.Error)), 10)
		num = append(num, 0)
		h.Write(num)
		writeString(s.Error)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func finalEventType(s Status) string {
	switch s {
	case StatusCompleted:
		return EventRunCompleted
	case StatusSkipped, StatusDropped:
		return EventRunSkipped
	case StatusCancelled:
		return EventRunCancelled
	}
	return EventRunFailed
}

// RunEvent describes a run's lifecycle step as the engine publishes it:
// hook.run.started for a running run, else the event of its final status
// (completed, failed, skipped for skipped and dropped, cancelled). It
// carries the outcome as typed values (Outcome) for subscribers, and as
// Data for the store and the hooks that react to it.
func RunEvent(run *Run) *Event {
	typ := EventRunStarted
	if run.Status != StatusRunning {
		typ = finalEventType(run.Status)
	}
	data := map[string]any{
		"hook": run.Hook, "run_id": run.ID, "status": string(run.Status), "trigger": run.Trigger,
		"reason": run.Reason, "error": run.Error, "duration_ms": run.Duration().Milliseconds(),
	}
	runEventExtras(run, data)
	snap := *run
	snap.Event = nil // the payload is not an outcome, and may be large
	return &Event{ID: NewID(), Type: typ, Data: data, Source: "engine", Depth: run.Depth + 1, TraceLink: run.Span(),
		Outcome: &RunOutcome{Run: &snap}}
}

// publish logs an engine event and hands it to the loop for dispatch.
func (e *Engine) publish(ev *Event) {
	ev.Time = e.cfg.Clock.Now()
	e.send(func(s *state) { s.events = append(s.events, ev) })
}

// logEvent queues an engine event for the store without blocking the
// loop. The writer takes whatever is waiting in one transaction, so the
// queue only fills when the disk cannot keep up at all; then the event is
// still dispatched and streamed, and its loss is logged.
func (e *Engine) logEvent(ev *Event) {
	if ev.Time.IsZero() {
		ev.Time = e.cfg.Clock.Now()
	}
	select {
	case e.eventLog <- ev:
	default:
		e.log.Warn("event log full; engine event not stored", "type", ev.Type)
	}
}

// maxEventBatch bounds one transaction of the event writer.
const maxEventBatch = 512

// eventWriter stores engine events in order, in batches, until the log is
// closed, with AppendEventsLater: a store that can stores them with its
// next commit of other writes, so a run's events cost no transaction of
// their own.
func (e *Engine) eventWriter() {
	defer close(e.eventLogDone)
	appendEvents := e.cfg.Store.AppendEventsLater
	batch := make([]*Event, 0, maxEventBatch)
	for ev := range e.eventLog {
		batch = append(batch[:0], ev)
	fill:
		for len(batch) < maxEventBatch {
			select {
			case ev, ok := <-e.eventLog:
				if !ok {
					break fill
				}
				batch = append(batch, ev)
			default:
				break fill
			}
		}
		if err := e.appendEvents(appendEvents, batch); err != nil {
			e.log.Error("store engine events", "count", len(batch), "err", err)
		} else if e.cfg.Cluster != nil {
			e.tell(WakeEvents, "") // the other nodes' live streams read them
		}
	}
}

// appendEvents stores a batch of engine events within StoreTimeout. While
// the store is stalled it waits for it to answer and tries again
// (writer.go), so that a stall delays the event log and loses none of
// it; a batch is given up when the store refuses it outright or the
// engine stops with the store stalled.
func (e *Engine) appendEvents(appendEvents func(context.Context, []*Event) error, batch []*Event) error {
	for {
		if !e.wr.whenAnswering() {
			if _, stalled := e.wr.stalled(); stalled {
				return errors.New("engine: stopped with the store stalled")
			}
		}
		began := e.cfg.Clock.Now()
		ctx, cancel := e.storeCtx(context.Background())
		err := appendEvents(ctx, batch)
		cancel()
		if err == nil {
			e.wr.ok()
			return nil
		}
		if permanent(err) {
			return err
		}
		e.wr.failed(err, began)
		if e.wr.isClosing() {
			return err
		}
	}
}
