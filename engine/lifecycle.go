package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookd/hookd/redact"
)

// Point names a phase of a run (or of event dispatch) where lifecycle
// handlers are called.
type Point string

// Lifecycle points, in the order a run meets them; the daemon's own
// points come first (daemon:start) and last (daemon:stop).
const (
	PointDaemonStart       Point = "daemon:start"        // void: the daemon loaded its hooks and is about to trigger the first
	PointEventClaim        Point = "event:claim"         // claiming: an inbound event, before it is dispatched to hooks
	PointRunBefore         Point = "run:before"          // waterfall: cancel the run
	PointStepBefore        Point = "step:before"         // waterfall: skip the step, amend its env
	PointStepAfter         Point = "step:after"          // void: the step's result
	PointPromptRenderAfter Point = "prompt:render:after" // waterfall: amend the prompt
	PointLLMCallBefore     Point = "llm:call:before"     // waterfall: amend messages, or answer instead of the model
	PointLLMCallAfter      Point = "llm:call:after"      // void: the model's answer
	PointToolCallBefore    Point = "tool:call:before"    // waterfall: amend the arguments or deny the call
	PointToolCallAfter     Point = "tool:call:after"     // waterfall: amend the result
	PointRecordBefore      Point = "record:before"       // waterfall: drop fields of the final run record before it is stored
	PointRunAfter          Point = "run:after"           // void: the final run record
	PointNotifyBefore      Point = "notify:before"       // waterfall: amend a notification's summary, or cancel it
	PointNotifyDelivered   Point = "notify:delivered"    // void: a notification reached its target
	PointNotifyFailed      Point = "notify:failed"       // void: a notification was given up (undeliverable)
	PointDaemonStop        Point = "daemon:stop"         // void: the daemon stops triggering and is about to drain its runs
)

// points lists every point in the order List sorts them.
var points = [...]Point{PointDaemonStart, PointEventClaim, PointRunBefore, PointStepBefore, PointStepAfter, PointPromptRenderAfter,
	PointLLMCallBefore, PointLLMCallAfter, PointToolCallBefore, PointToolCallAfter, PointRecordBefore, PointRunAfter,
	PointNotifyBefore, PointNotifyDelivered, PointNotifyFailed, PointDaemonStop}

// Points lists the lifecycle points in the order a run meets them.
func Points() []Point { return points[:] }

func pointIndex(p Point) int {
	for i, q := range points {
		if q == p {
			return i
		}
	}
	return -1
}

// Model is how the handlers of a point are called.
type Model string

// Execution models.
const (
	// ModelVoid handlers observe: they run concurrently, and their
	// decisions and errors change nothing (errors are logged).
	ModelVoid Model = "void"
	// ModelWaterfall handlers run one after the other by priority; one
	// may cancel (the chain stops) or return changes (the first non-nil
	// value per key wins).
	ModelWaterfall Model = "waterfall"
	// ModelClaiming handlers run one after the other by priority; the
	// first that claims stops the chain.
	ModelClaiming Model = "claiming"
)

// Model returns the execution model of p; "" for an unknown point.
func (p Point) Model() Model {
	switch p {
	case PointRunAfter, PointStepAfter, PointLLMCallAfter, PointNotifyDelivered, PointNotifyFailed, PointDaemonStart, PointDaemonStop:
		return ModelVoid
	case PointEventClaim:
		return ModelClaiming
	case PointRunBefore, PointStepBefore, PointPromptRenderAfter, PointLLMCallBefore, PointToolCallBefore, PointToolCallAfter,
		PointRecordBefore, PointNotifyBefore:
		return ModelWaterfall
	}
	return ""
}

// Change keys a waterfall handler may return, by point.
const (
	ChangeEnv        = "env"         // step:before: map of NAME -> value added to the step's environment
	ChangePrompt     = "prompt"      // prompt:render:after: the new prompt (string)
	ChangeMessages   = "messages"    // llm:call:before: the chat messages (a JSON array in the chat-completions form)
	ChangeAnswer     = "answer"      // llm:call:before: an answer given instead of calling the model (string)
	ChangeToolInput  = "tool_input"  // tool:call:before: the tool's arguments (a JSON object)
	ChangeToolResult = "tool_result" // tool:call:after: what the model gets back (string)
	ChangeDropFields = "drop_fields" // record:before: the record's fields to store empty ([]string of RecordFields)
	ChangeSummary    = "summary"     // notify:before: the notification's summary (string)
)

// Payload is what a handler sees. Which fields are set depends on the
// point: Hook and RunID at every point but event:claim; Step (and
// StepResult after it) at step points; Prompt from prompt:render:after on;
// Messages, Round and Response at llm points; Tool* at tool points; Run at
// run points; Event at event:claim. Handlers must not modify it: changes
// are returned in a Decision.
type Payload struct {
	Point      Point
	Hook       *Hook
	RunID      string
	Run        *Run // run:before (as started), run:after (the final record)
	Step       *StepDef
	StepEnv    []string // step:before: the step's environment (KEY=VALUE)
	StepResult *StepResult
	Prompt     string
	Messages   json.RawMessage // llm:call:*: the chat messages so far
	Round      int             // llm:call:*: 1 for the first model call
	Model      string          // llm:call:*: the model called
	Response   string          // llm:call:after: the model's text
	// Usage (llm:call:after) is the token usage the server reported for
	// this call (Known false when it reported none).
	Usage      *Tokens
	ToolName   string // as hooks list it: run_command, github.search_issues
	ToolCallID string // tool:call:*: the id of the model's call (ToolUse.ID)
	ToolInput  json.RawMessage
	ToolResult string        // tool:call:after
	ToolError  string        // tool:call:after: the tool's error, if it failed
	ToolTime   time.Duration // tool:call:after: how long the tool ran
	Event      *Event        // event:claim
	// Notification is the message notify:* is about (JSON, the generic
	// webhook form), and NotifyTarget the name of the target it goes to.
	Notification json.RawMessage
	NotifyTarget string
	// NotifyAttempts (notify:delivered, notify:failed) is how many posts
	// were made, NotifyError (notify:failed) why it was given up.
	NotifyAttempts int
	NotifyError    string
	// Depth (notify:*) is the event chain depth of the run the
	// notification is about (Run.Depth). A command handler gets
	// HOOKD_DEPTH, one more, and `hookd fire` and `hookd emit` run from it
	// pass that on, so that a chain through handlers is cut by the
	// event_depth gate like any other.
	Depth int
	// Daemon describes the daemon at daemon:start and daemon:stop.
	Daemon *DaemonInfo

	// live and label are where Live finds the handler's live output
	// (Registry.invoke sets them for each handler it calls).
	live  liveSource
	label string
}

// liveSource gives the live output of a handler labelled label called
// with p, and the redactor of what goes there (Payload.Live).
type liveSource func(p *Payload, label string) (out func(stream string, b []byte), red *redact.Redactor)

// Live returns where the handler shows what its processes write, as
// they write it, to whoever follows the run (Engine.SubscribeOutput: the
// run's live output, under "handler LABEL (POINT)"), and the redactor of
// the hook's secrets that must redact it first, for process.Command's
// Live and LiveRedactor. out is nil when nobody can follow: at a point
// that is not of a run the engine executes now (event:claim, daemon:*,
// notify:*), or for a handler not called by a registry.
func (p *Payload) Live() (out func(stream string, b []byte), red *redact.Redactor) {
	if p.live == nil {
		return nil, nil
	}
	return p.live(p, p.label)
}

// DaemonInfo is what daemon:start and daemon:stop handlers (and the
// hookd.started and hookd.stopping events) are told.
type DaemonInfo struct {
	PID    int    `json:"pid"`
	Hooks  int    `json:"hooks"`            // hooks loaded
	Signal string `json:"signal,omitempty"` // daemon:stop: the signal that stops it
}

// Events the daemon publishes about itself, which hooks can react to
// (trigger: {event: hookd.started}).
const (
	EventDaemonStarted  = "hookd.started"  // after daemon:start, once the engine runs
	EventDaemonStopping = "hookd.stopping" // after daemon:stop, before the engine stops triggering
)

// Decision is a handler's answer. Void handlers' decisions are ignored.
type Decision struct {
	Cancel  bool           // waterfall: stop the chain and cancel what the point guards (deny a tool call, skip a step, ...)
	Reason  string         // why, for people
	Changes map[string]any // waterfall: amendments, by the Change* keys of the point
	Claimed bool           // claiming: this handler owns the event
}

// Handler is a lifecycle handler. ctx carries the handler's timeout. An
// error (or a panic, or running past the timeout) is handled by the
// handler's failure policy.
type Handler func(ctx context.Context, p *Payload) (Decision, error)

// DefaultPriority is a handler's priority when its options set none.
const DefaultPriority = 100

// HandlerOptions describe a registration.
type HandlerOptions struct {
	// Priority orders handlers of a point: lower first. Unless
	// PrioritySet, zero means DefaultPriority.
	Priority int
	// PrioritySet says Priority was given, so that 0 is a priority (it
	// runs before the default 100); only an absent priority is 100.
	PrioritySet bool
	// Label names the handler in logs, records and cancel reasons.
	// Default: "<point>#<n>".
	Label string
	// Plugin is the id of the plugin the handler belongs to; "" is a
	// built-in handler. A hook's plugins: list scopes plugin handlers.
	Plugin string
	// Timeout bounds one call; past it the call is an error. Zero means
	// none: the handler runs inline on the caller's goroutine.
	Timeout time.Duration
	// FailClosed makes an error cancel (fail_closed); the default skips
	// the handler (fail_open). Void points only log errors.
	FailClosed bool
	// Source says where the handler was declared (a file), for listings.
	Source string
}

// Registration describes one registered handler, for listings.
type Registration struct {
	Point      Point         `json:"point"`
	Model      Model         `json:"model"`
	Priority   int           `json:"priority"`
	Label      string        `json:"label"`
	Plugin     string        `json:"plugin,omitempty"`
	Timeout    time.Duration `json:"timeout_ns,omitempty"`
	FailClosed bool          `json:"fail_closed,omitempty"`
	Source     string        `json:"source,omitempty"`
}

// Outcome is what a point's handlers decided.
type Outcome struct {
	Cancelled bool   // a waterfall handler cancelled (or failed closed)
	Claimed   bool   // a claiming handler claimed
	By        string // the label of the handler that cancelled or claimed
	Reason    string
	// Changes holds the merged changes: per key, the value of the first
	// handler (by priority) that gave one. ChangedBy names that handler.
	Changes   map[string]any
	ChangedBy map[string]string
}

// String describes a cancel or claim as "label: reason".
func (o Outcome) String() string {
	if o.Reason == "" {
		return o.By
	}
	return o.By + ": " + o.Reason
}

// CancelError is the error of a stage that a lifecycle handler cancelled
// (an llm:call:before cancel, for one); the engine records the run as
// cancelled with its text as the reason.
type CancelError struct {
	Point   Point
	Outcome Outcome
}

// Error returns "point: label: reason".
func (e *CancelError) Error() string { return string(e.Point) + ": " + e.Outcome.String() }

type registration struct {
	Registration
	id int64
	h  Handler
}

// Registry holds the lifecycle handlers of an engine. It is safe for
// concurrent use; registering while points are called is allowed (a call
// sees the handlers as they were when it began).
type Registry struct {
	mu   sync.Mutex
	n    int64
	snap atomic.Pointer[[len(points)][]*registration]
	log  atomic.Pointer[slog.Logger]
	seq  atomic.Pointer[[len(points)]bool] // void points whose handlers run one at a time (SetSequential)
	live atomic.Pointer[liveSource]        // the engine's (Payload.Live); nil: none
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	r := &Registry{}
	r.snap.Store(&[len(points)][]*registration{})
	return r
}

// SetSequential makes the handlers of each void point in ps run one at
// a time, by priority (lower first), instead of concurrently; the other
// void points go back to concurrent (hookd.yaml's lifecycle: POINT:
// {sequential: true}). Waterfall and claiming points run one at a time
// already. It panics on a point that is not a void point.
func (r *Registry) SetSequential(ps []Point) {
	var seq [len(points)]bool
	for _, p := range ps {
		i := pointIndex(p)
		if i < 0 || p.Model() != ModelVoid {
			panic(fmt.Sprintf("engine: sequential handlers at %q, which is not a void point", p))
		}
		seq[i] = true
	}
	r.seq.Store(&seq)
}

// sequential reports whether the handlers of the point at index i run
// one at a time.
func (r *Registry) sequential(i int) bool {
	seq := r.seq.Load()
	return seq != nil && seq[i]
}

// SetLogger sets where handler errors are logged (default slog.Default()).
func (r *Registry) SetLogger(l *slog.Logger) { r.log.Store(l) }

func (r *Registry) logger() *slog.Logger {
	if l := r.log.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// On registers h at point and returns a function that unregisters it
// (safe to call more than once). It panics on an unknown point or a nil
// handler.
func (r *Registry) On(point Point, h Handler, opts HandlerOptions) (unsubscribe func()) {
	i := pointIndex(point)
	if point == "" || i < 0 {
		panic(fmt.Sprintf("engine: lifecycle handler on unknown point %q", point))
	}
	if h == nil {
		panic("engine: nil lifecycle handler")
	}
	if opts.Priority == 0 && !opts.PrioritySet {
		opts.Priority = DefaultPriority
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if opts.Label == "" {
		opts.Label = fmt.Sprintf("%s#%d", point, r.n)
	}
	reg := &registration{id: r.n, h: h, Registration: Registration{
		Point: point, Model: point.Model(), Priority: opts.Priority, Label: opts.Label, Plugin: opts.Plugin,
		Timeout: opts.Timeout, FailClosed: opts.FailClosed, Source: opts.Source,
	}}
	next := *r.snap.Load()
	list := append(slices.Clone(next[i]), reg)
	sort.SliceStable(list, func(a, b int) bool { return list[a].Priority < list[b].Priority })
	next[i] = list
	r.snap.Store(&next)
	id := reg.id
	return func() { r.remove(func(x *registration) bool { return x.id == id }) }
}

// UnregisterPlugin removes every handler of the plugin id.
func (r *Registry) UnregisterPlugin(id string) {
	r.remove(func(x *registration) bool { return x.Plugin == id })
}

func (r *Registry) remove(match func(*registration) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := *r.snap.Load()
	for i, list := range next {
		if slices.ContainsFunc(list, match) {
			next[i] = slices.DeleteFunc(slices.Clone(list), match)
		}
	}
	r.snap.Store(&next)
}

// List describes every registration, by point (in the order a run meets
// them) and then by priority.
func (r *Registry) List() []Registration {
	var out []Registration
	for _, list := range r.snap.Load() {
		for _, reg := range list {
			out = append(out, reg.Registration)
		}
	}
	return out
}

// Active reports whether any handler is registered at point. Callers use
// it to skip building a payload nobody reads.
func (r *Registry) Active(point Point) bool {
	if r == nil {
		return false
	}
	i := pointIndex(point)
	return i >= 0 && len(r.snap.Load()[i]) > 0
}

// inScope reports whether reg fires for a run of h: built-in handlers
// always do; plugin handlers unless h's plugins: list leaves them out.
func inScope(reg *registration, h *Hook) bool {
	if reg.Plugin == "" || h == nil || !h.PluginsSet {
		return true
	}
	return slices.Contains(h.Plugins, reg.Plugin)
}

// Call calls the handlers of point with p (p.Point is set), by the
// point's execution model, and returns what they decided. A nil registry
// has no handlers.
func (r *Registry) Call(ctx context.Context, point Point, p *Payload) Outcome {
	if r == nil {
		return Outcome{}
	}
	i := pointIndex(point)
	if i < 0 {
		return Outcome{}
	}
	list := r.snap.Load()[i]
	if len(list) == 0 {
		return Outcome{}
	}
	p.Point = point
	switch point.Model() {
	case ModelVoid:
		r.callVoid(ctx, list, p, r.sequential(i))
		return Outcome{}
	case ModelClaiming:
		return r.callClaiming(ctx, list, p)
	}
	return r.callWaterfall(ctx, list, p)
}

func (r *Registry) callWaterfall(ctx context.Context, list []*registration, p *Payload) Outcome {
	var out Outcome
	for _, reg := range list {
		if !inScope(reg, p.Hook) {
			continue
		}
		d, err := r.invoke(ctx, reg, p)
		if err != nil {
			r.logger().Warn("lifecycle handler failed", "point", p.Point, "handler", reg.Label,
				"hook", hookName(p.Hook), "run", p.RunID, "fail_closed", reg.FailClosed, "err", err)
			if reg.FailClosed {
				return Outcome{Cancelled: true, By: reg.Label, Reason: "handler failed (fail_closed): " + err.Error()}
			}
			continue
		}
		if d.Cancel {
			if d.Reason == "" {
				d.Reason = "cancelled"
			}
			return Outcome{Cancelled: true, By: reg.Label, Reason: d.Reason}
		}
		for k, v := range d.Changes {
			if v == nil {
				continue
			}
			if _, taken := out.Changes[k]; taken {
				continue
			}
			if out.Changes == nil {
				out.Changes, out.ChangedBy = map[string]any{}, map[string]string{}
			}
			out.Changes[k], out.ChangedBy[k] = v, reg.Label
		}
	}
	if p.Point == PointToolCallBefore {
		return r.rejudgeToolInput(ctx, list, p, out)
	}
	return out
}

// rejudgeToolInput makes the merged arguments of a tool call pass every
// fail_closed tool:call:before handler before the tool runs with them.
// Each handler of the chain saw the arguments as the model gave them, so
// an amendment by one is judged by none: a guard allows
// ["git","log","HEAD --output=x"] and a later handler splits it. When the
// merged arguments differ from those, each fail_closed handler (by
// priority) judges them once more; a denial or failure cancels the call,
// and so does an amendment of them, which nobody would have judged. The
// outcome's tool_input change becomes the canonical bytes they judged
// (ToolInputJSON), the arguments the tool runs with.
func (r *Registry) rejudgeToolInput(ctx context.Context, list []*registration, p *Payload, out Outcome) Outcome {
	v, ok := out.Changes[ChangeToolInput]
	if !ok {
		return out
	}
	amended, err := ToolInputJSON(v)
	if err != nil {
		return out // not JSON: the caller refuses it and the tool does not run
	}
	out.Changes[ChangeToolInput] = amended
	if bytes.Equal(amended, p.ToolInput) {
		return out
	}
	by := out.ChangedBy[ChangeToolInput]
	q := *p
	q.ToolInput = amended
	for _, reg := range list {
		if !reg.FailClosed || !inScope(reg, p.Hook) {
			continue
		}
		d, err := r.invoke(ctx, reg, &q)
		switch {
		case err != nil:
			r.logger().Warn("lifecycle handler failed", "point", p.Point, "handler", reg.Label,
				"hook", hookName(p.Hook), "run", p.RunID, "fail_closed", true, "amended_by", by, "err", err)
			return Outcome{Cancelled: true, By: reg.Label,
				Reason: fmt.Sprintf("handler failed (fail_closed) on the arguments as amended by %s: %s", by, err)}
		case d.Cancel:
			if d.Reason == "" {
				d.Reason = "cancelled"
			}
			return Outcome{Cancelled: true, By: reg.Label, Reason: fmt.Sprintf("%s (the arguments as amended by %s)", d.Reason, by)}
		}
		if c := d.Changes[ChangeToolInput]; c != nil {
			if again, err := ToolInputJSON(c); err != nil || !bytes.Equal(again, amended) {
				return Outcome{Cancelled: true, By: reg.Label,
					Reason: fmt.Sprintf("amended the arguments as amended by %s once more; arguments no fail_closed handler judged do not run", by)}
			}
		}
	}
	return out
}

func (r *Registry) callClaiming(ctx context.Context, list []*registration, p *Payload) Outcome {
	for _, reg := range list {
		if !inScope(reg, p.Hook) {
			continue
		}
		d, err := r.invoke(ctx, reg, p)
		if err != nil {
			r.logger().Warn("lifecycle handler failed; the event goes on to the next handler", "point", p.Point,
				"handler", reg.Label, "err", err)
			continue
		}
		if d.Claimed || d.Cancel {
			return Outcome{Claimed: true, By: reg.Label, Reason: d.Reason}
		}
	}
	return Outcome{}
}

// callVoid calls the handlers of a void point: concurrently, or one at a
// time in priority order when the point is sequential; it returns when
// all are done.
func (r *Registry) callVoid(ctx context.Context, list []*registration, p *Payload, sequential bool) {
	one := func(reg *registration) {
		if _, err := r.invoke(ctx, reg, p); err != nil {
			r.logger().Warn("lifecycle handler failed", "point", p.Point, "handler", reg.Label,
				"hook", hookName(p.Hook), "run", p.RunID, "err", err)
		}
	}
	if len(list) == 1 || sequential {
		for _, reg := range list {
			if inScope(reg, p.Hook) {
				one(reg)
			}
		}
		return
	}
	var wg sync.WaitGroup
	for _, reg := range list {
		if !inScope(reg, p.Hook) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			one(reg)
		}()
	}
	wg.Wait()
}

// errHandlerTimeout is the error of a handler that ran past its timeout.
var errHandlerTimeout = errors.New("engine: lifecycle handler timed out")

// invoke calls one handler, turning a panic into an error and, with a
// timeout, running it on its own goroutine so that a handler that ignores
// its context cannot hold the caller past the timeout.
func (r *Registry) invoke(ctx context.Context, reg *registration, p *Payload) (Decision, error) {
	if src := r.live.Load(); src != nil && p.RunID != "" {
		q := *p
		q.live, q.label = *src, reg.Label
		p = &q
	}
	if reg.Timeout <= 0 {
		return safeCall(ctx, reg.h, p)
	}
	hctx, cancel := context.WithTimeout(ctx, reg.Timeout)
	defer cancel()
	type result struct {
		d   Decision
		err error
	}
	ch := make(chan result, 1)
	go func() {
		d, err := safeCall(hctx, reg.h, p)
		ch <- result{d, err}
	}()
	select {
	case res := <-ch:
		if res.err != nil && hctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return res.d, fmt.Errorf("%w after %s: %w", errHandlerTimeout, reg.Timeout, res.err)
		}
		return res.d, res.err
	case <-hctx.Done():
		if ctx.Err() != nil {
			return Decision{}, context.Cause(ctx)
		}
		return Decision{}, fmt.Errorf("%w after %s", errHandlerTimeout, reg.Timeout)
	}
}

func safeCall(ctx context.Context, h Handler, p *Payload) (d Decision, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("handler panicked: %v", v)
		}
	}()
	return h(ctx, p)
}

func hookName(h *Hook) string {
	if h == nil {
		return ""
	}
	return h.Name
}
