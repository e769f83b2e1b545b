package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/internal/suggest"
	"github.com/hookd/hookd/sandbox"
)

// Config holds what an Engine is built from. Store is required; the rest
// have defaults.
type Config struct {
	Store  Store
	Events EventIndex // needed by hooks with event triggers
	LLM    LLM        // nil: hooks that need a model fail with a clear error
	Prompt PromptRenderer
	Clock  clock.Clock
	Logger *slog.Logger

	MaxConcurrent  int           // runs executing at once (default 4)
	Tick           time.Duration // the loop re-reads the clock at least this often (default 1s)
	QueueSize      int           // runs that may wait for a concurrency slot (default 100)
	Grace          time.Duration // how long shutdown waits for runs (default 30s)
	DefaultTimeout time.Duration // a run's timeout when its hook sets none (default 30m)
	MaxCatchup     int           // bound of on_missed: all when the hook sets none (default 10)
	MaxEventDepth  int           // event chains deeper than this are cut (default DefaultMaxEventDepth)
	Environ        []string      // the environment runs inherit (default os.Environ())
	HooksDir       string        // the hooks directory; tools may not write inside it
	Protected      []string      // more paths tools may not write or read (the settings file, token file, state directory, database files); hidden from every process a hook starts
	CacheDir       string        // where each hook's persistent cache directory is made (default: the user's cache directory, hookd/hooks)
	Database       string        // hookd's own database file, which steps may not open (db_query reads it through Records)
	Credentials    []string      // variables holding hookd's own credentials: redacted from every run, like a hook's secrets
	// CredentialValues are hookd's own credentials read from elsewhere
	// than the environment (the API token of token_file), by the name
	// redaction shows them under: redacted from every run like
	// Credentials.
	CredentialValues map[string]string
	Budget           budget.Daemon // tokens all hooks together may use per hour and day, and prices (package budget)

	// StoreTimeout bounds each store write the engine makes for its
	// scheduling loop and each run's start (default 10s): one that has
	// not returned by then fails, and the store counts as stalled until a
	// write succeeds (writer.go, Engine.StoreStalled).
	StoreTimeout time.Duration

	// Lifecycle holds the lifecycle handlers the engine calls at each
	// point of a run (nil: an empty registry of the engine's own).
	Lifecycle *Registry

	// Guard, when set, is called by the loop at most once a Tick (on the
	// wake-ups it has anyway). An error means the engine must not trigger
	// anything more: it stops triggering at once, logs the error and
	// reports it on Failed. The daemon checks there that its database and
	// lock are still the files at their paths.
	Guard func() error

	// Reap, when set, kills what is left of a process group a step of a
	// run interrupted by a crash started (recorded through Store.AddRunProc),
	// and returns the processes it killed ("4242 (sleep)"). The engine
	// calls it at start, before anything runs.
	Reap func(ProcGroup) (killed []string, err error)

	// Procs, when set, keeps the process groups of running steps (the
	// daemon's file in its state directory, internal/procjournal) instead
	// of the store; at start the engine kills what the groups recorded
	// there for the interrupted runs left, as with the store's.
	Procs ProcJournal

	// Manual makes an engine that only runs what is fired or emitted
	// through it: no schedules, no catch-up, and queued runs are left for
	// the daemon. `hookd fire` and `hookd emit` use it when no daemon runs.
	Manual bool

	// Cluster, when set, makes the engine one node of several sharing the
	// store (cluster.go). Not with Manual.
	Cluster Cluster
	// OthersStored, when set, is called when another node stored events
	// (for the live stream, which reads the shared event log).
	OthersStored func()

	// Sandbox is which containment the hooks' processes get (nil: that of
	// sandbox.Default()). Where files or the network cannot be confined
	// and the sandbox is not off on purpose, hooks that start processes
	// from untrusted input are refused (GateSandboxUnavailable).
	Sandbox *sandbox.Status
}

// PromptRenderer renders a hook's prompt from the gathered context.
type PromptRenderer interface {
	RenderPrompt(h *Hook, scope *Scope) (string, error)
}

// expandRenderer renders a prompt by plain placeholder expansion.
type expandRenderer struct{}

func (expandRenderer) RenderPrompt(h *Hook, scope *Scope) (string, error) {
	return Expand(h.Prompt, scope, nil)
}

func (c *Config) setDefaults() {
	if c.Clock == nil {
		c.Clock = clock.Wall{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Prompt == nil {
		c.Prompt = expandRenderer{}
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 4
	}
	if c.Tick <= 0 {
		c.Tick = time.Second
	}
	if c.QueueSize <= 0 {
		c.QueueSize = 100
	}
	if c.Grace <= 0 {
		c.Grace = 30 * time.Second
	}
	if c.CacheDir == "" {
		c.CacheDir = defaultCacheDir()
	}
	if c.Sandbox == nil {
		st := sandbox.Default().Status()
		c.Sandbox = &st
	}
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = 30 * time.Minute
	}
	if c.MaxCatchup <= 0 {
		c.MaxCatchup = 10
	}
	if c.StoreTimeout <= 0 {
		c.StoreTimeout = 10 * time.Second
	}
	if c.MaxEventDepth <= 0 {
		c.MaxEventDepth = DefaultMaxEventDepth
	}
	if c.Environ == nil {
		c.Environ = os.Environ()
	}
	if c.Lifecycle == nil {
		c.Lifecycle = NewRegistry()
	}
	if c.Lifecycle.log.Load() == nil {
		c.Lifecycle.SetLogger(c.Logger)
	}
}

// Engine schedules hooks, applies the gates and executes runs. Its loop
// goroutine owns all scheduling and gate state; every other method talks
// to it over a channel.
type Engine struct {
	cfg   Config
	log   *slog.Logger
	msgs  chan func(*state)
	hooks []*Hook

	startOnce   sync.Once
	stopOnce    sync.Once
	stopping    chan struct{} // closed when shutdown begins: no new triggers
	haltOnce    sync.Once
	failed      chan error // Guard's error, once
	loopDone    chan struct{}
	cancel      context.CancelFunc
	runs        sync.WaitGroup // runs executing
	jobs        chan runJob    // runs handed to a waiting run goroutine (runworker.go)
	idleWorkers atomic.Int32   // run goroutines waiting on jobs
	// maxConcurrent is how many runs execute at once: Config.MaxConcurrent
	// at first, then what SetMaxConcurrent sets (a reloaded hookd.yaml).
	maxConcurrent atomic.Int32
	runCtx        context.Context
	runCancel     context.CancelCauseFunc

	wr *storeWriter // writes the loop's records (writer.go)
	// decided is what the loop decided for stored events still pending
	// (dispatch.go).
	decided decisions

	eventLog     chan *Event // engine events on their way to the store
	eventLogDone chan struct{}

	// live hands running steps' output to its followers (SubscribeOutput).
	live liveHub

	subMu sync.Mutex
	subs  map[int]func(*Event)
	subN  int

	// st is the loop's state, set before the loop starts. Only its live
	// runs and their waiters are read off the loop, under waitMu (Wait).
	st     atomic.Pointer[state]
	waitMu sync.Mutex

	clusterNode // the node's side of a cluster (clusterrun.go); unused without Config.Cluster
}

// Lifecycle returns the engine's lifecycle handler registry.
func (e *Engine) Lifecycle() *Registry { return e.cfg.Lifecycle }

// ErrStopped is returned by calls made after shutdown began.
var ErrStopped = errors.New("engine: stopped")

// New builds an engine for hooks. Hook names must be unique.
func New(cfg Config, hooks []*Hook) (*Engine, error) {
	if cfg.Store == nil {
		return nil, errors.New("engine: Config.Store is required")
	}
	if cfg.Cluster != nil && cfg.Manual {
		return nil, errors.New("engine: a Manual engine is not a cluster node")
	}
	cfg.setDefaults()
	seen := make(map[string]bool, len(hooks))
	for _, h := range hooks {
		if seen[h.Name] {
			return nil, fmt.Errorf("engine: hook %q given twice", h.Name)
		}
		seen[h.Name] = true
		if h.Trigger.Kind == TriggerEvent && cfg.Events == nil {
			return nil, fmt.Errorf("engine: hook %q has an event trigger but Config.Events is nil", h.Name)
		}
	}
	e := &Engine{
		cfg:      cfg,
		log:      cfg.Logger,
		msgs:     make(chan func(*state), 256),
		hooks:    hooks,
		stopping: make(chan struct{}),
		failed:   make(chan error, 1),
		loopDone: make(chan struct{}),
		subs:     map[int]func(*Event){},
		jobs:     make(chan runJob),

		eventLog:     make(chan *Event, 4096),
		eventLogDone: make(chan struct{}),
	}
	e.maxConcurrent.Store(int32(cfg.MaxConcurrent))
	e.wr = e.newWriter()
	e.runCtx, e.runCancel = context.WithCancelCause(context.Background())
	e.initCluster()
	src := liveSource(e.handlerOutput)
	cfg.Lifecycle.live.Store(&src)
	return e, nil
}

// Start recovers state from the store (runs left running by a crash become
// interrupted; queued runs are queued again; missed slots are handled by
// each hook's on_missed) and starts the loop. It does not block.
func (e *Engine) Start(ctx context.Context) error {
	err := errors.New("engine: started twice")
	e.startOnce.Do(func() { err = e.start(ctx) })
	return err
}

func (e *Engine) start(ctx context.Context) error {
	e.wr.start() // newState records what passed while hookd was down
	st, err := e.newState(ctx)
	if err != nil {
		e.wr.close()
		return err
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.st.Store(st)
	go e.eventWriter()
	go func() {
		defer close(e.loopDone)
		st.loop(loopCtx)
	}()
	if e.cfg.Cluster != nil {
		return e.startCluster(ctx, loopCtx)
	}
	return nil
}

// Stop shuts down with the configured grace period. It is safe to call
// more than once; later calls wait for the first to finish.
func (e *Engine) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.Grace)
	defer cancel()
	e.Shutdown(ctx)
}

// Shutdown stops triggering at once, lets runs in flight finish until ctx
// is done, then cancels the rest (recorded cancelled) and waits for their
// records. Queued runs stay queued in the store for the next start.
func (e *Engine) Shutdown(ctx context.Context) {
	e.stopOnce.Do(func() {
		// Close stopping on the loop, the only goroutine that starts runs,
		// so no run starts after runs.Wait begins.
		if e.cancel == nil || e.do(context.Background(), func(*state) { e.halt() }) != nil {
			e.halt()
		}
		e.claimBarrier()
		done := make(chan struct{})
		go func() { e.runs.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			e.log.Warn("grace period over; cancelling runs in flight")
			e.runCancel(&cancelCause{StatusCancelled, CauseShutdown, "shutdown: hookd stopped before the run finished"})
			<-done
		}
		if e.cancel != nil {
			e.cancel()
			<-e.loopDone
			e.wr.close()
			close(e.eventLog)
			<-e.eventLogDone
		}
		e.runCancel(ErrStopped)
	})
	if e.cancel != nil {
		<-e.loopDone
	}
}

// halt stops triggering: it closes stopping, once.
func (e *Engine) halt() { e.haltOnce.Do(func() { close(e.stopping) }) }

// Failed delivers the error of Config.Guard when it failed; the engine has
// stopped triggering by then. The caller should Abort or Shutdown.
func (e *Engine) Failed() <-chan error { return e.failed }

// Abort cancels every run in flight at once (recorded cancelled, their
// commands' process groups killed with SIGKILL, no grace: the cause
// matches ErrForcedStop), for a forced stop. A Shutdown under way then
// finishes without waiting for the grace period.
func (e *Engine) Abort() {
	e.runCancel(forcedStop{&cancelCause{StatusCancelled, CauseShutdown, "shutdown: hookd was stopped by force"}})
}

// do runs f on the loop goroutine and waits for it, or for ctx.
func (e *Engine) do(ctx context.Context, f func(*state)) error {
	return e.handOff(ctx, f, ctx.Done())
}

// doTaken is do for a decision that stands once the loop has it: ctx
// ends only the wait for the loop to take f (f then never runs, and
// doTaken returns ctx's error, as it does for a ctx that ended before).
// Once taken, f is waited for whatever becomes of ctx: the loop runs it
// or stops (ErrStopped: f did not run).
func (e *Engine) doTaken(ctx context.Context, f func(*state)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return e.handOff(ctx, f, nil)
}

// handOff hands f to the loop unless ctx ends first, and waits for it to
// run; giveUp (ctx's Done, or nil: never) ends that wait with ctx's error.
func (e *Engine) handOff(ctx context.Context, f func(*state), giveUp <-chan struct{}) error {
	done := make(chan struct{})
	wrapped := func(s *state) { f(s); close(done) }
	select {
	case e.msgs <- wrapped:
	case <-ctx.Done():
		return ctx.Err()
	case <-e.loopDone:
		return ErrStopped
	}
	select {
	case <-done:
		return nil
	case <-giveUp:
		return ctx.Err()
	case <-e.loopDone:
		select {
		case <-done: // it ran before the loop ended
			return nil
		default:
			return ErrStopped
		}
	}
}

// send hands f to the loop without waiting for it to run.
func (e *Engine) send(f func(*state)) {
	select {
	case e.msgs <- f:
	case <-e.loopDone:
	}
}

// SetMaxConcurrent sets how many runs execute at once (hookd.yaml's
// max_concurrent, reloaded). Lowering it cancels nothing: the runs in
// flight go on, and new starts wait until fewer than n run. Raising it
// starts queued runs at once.
func (e *Engine) SetMaxConcurrent(ctx context.Context, n int) error {
	if n < 1 {
		return fmt.Errorf("engine: max_concurrent must be >= 1 (got %d)", n)
	}
	e.maxConcurrent.Store(int32(n))
	err := e.do(ctx, func(s *state) { s.drainQueue() })
	if errors.Is(err, ErrStopped) {
		return nil
	}
	return err
}

// FireOptions say how a hook is fired by hand.
type FireOptions struct {
	Event map[string]any // payload, visible as {{event}}
	Force bool           // skip the cooldown (never the in-flight gate)
	// EvenDisabled runs a hook that has enabled: false (agent-queue's
	// fire_hook did); every other gate applies. Force does not imply it.
	EvenDisabled bool
	// IgnoreWhere fires with Event although the hook's where: rejects it;
	// without it, a fire with an Event the hook's where: rejects is
	// refused (GateWhere) and leaves no record. A fire without an Event
	// is not judged by where:.
	IgnoreWhere bool
	Trigger     string      // recorded trigger reason (default "manual")
	Depth       int         // event chain depth of the run (a hook fired by another run's tool)
	TraceParent TraceParent // the caller's trace the run continues
	TraceLink   TraceParent // the span of the run that fired it (fire_hook), which the run links to unless TraceParent

	id string // the run's id: a fire another node forwarded (clusterfire.go)
}

// Fire triggers a hook through the gates, like any trigger. It returns the
// run (running or queued) once it is recorded, or a *GateError naming the
// gate that refused it. On a cluster node that does not schedule, the
// scheduler decides it (clusterfire.go).
func (e *Engine) Fire(ctx context.Context, name string, opt FireOptions) (*Run, error) {
	select {
	case <-e.stopping:
		return nil, ErrStopped
	default:
	}
	var (
		run     *Run
		err     error
		act     *active
		forward bool
	)
	reason := opt.Trigger
	if reason == "" {
		reason = "manual"
	}
	// What the loop decides stands once it has the fire (doTaken): a run
	// it starts goes ahead whatever becomes of ctx, so Fire answers with
	// it. A client answered with ctx's error then would fire it again,
	// and have it run twice. A ctx that ended before the loop took the
	// fire gets its error, and nothing is fired.
	if derr := e.doTaken(ctx, func(s *state) {
		ent := s.hooks[name]
		if ent == nil {
			err = s.noHook(name)
			return
		}
		if !s.schedules() {
			// A fire decided for another node is left for the next
			// scheduler; one made here is forwarded to the scheduler.
			forward = opt.id == ""
			err = e.notScheduler()
			return
		}
		if opt.Event != nil && !opt.IgnoreWhere {
			if ok, werr := s.accepts(ent, opt.Event); !ok {
				err = whereRefusal(ent.hook, werr)
				return
			}
		}
		data := withPeriodic(ent.hook, reason, opt.Event, s.cfg.Clock.Now(), ent.lastStart)
		res := s.trigger(ent, trig{reason: reason, data: data, force: opt.Force, disabled: opt.EvenDisabled, manual: true, depth: opt.Depth, id: opt.id,
			traceParent: opt.TraceParent, traceLink: opt.TraceLink})
		cp := *res.run // a snapshot: a started run belongs to its goroutine
		run, err, act = &cp, res.err, res.act
	}); derr != nil {
		return nil, derr
	}
	if forward {
		return e.forwardFire(ctx, name, opt)
	}
	if run == nil {
		return nil, err
	}
	if act != nil {
		// Its start is recorded within StoreTimeout, whatever becomes of
		// ctx, and the run goes ahead: Fire waits for it and answers
		// with the run.
		<-act.started
	}
	return run, err
}

// DefaultMaxEventDepth is how deep a chain of runs may go, each started
// by an event, a tool or a handler of the run before, before the
// event_depth gate cuts it.
const DefaultMaxEventDepth = 8

// Emit stores ev and then dispatches it to the hooks whose event trigger
// matches. It returns the runs it started or queued (a copy of each, as
// it was when the loop decided). The event is kept
// pending until it is dispatched, so a crash in between does not lose it
// (see DispatchPending); an event emitted while the engine stops gives
// ErrStopped and stays pending for the next start. EmitReport also says
// which matching hooks a gate refused.
func (e *Engine) Emit(ctx context.Context, ev *Event) ([]*Run, error) {
	em, err := e.EmitReport(ctx, ev)
	return em.Runs, err
}

// Refusal is the trigger of a hook an event matched that a gate refused:
// the record it left (skipped, or dropped by queue_full) and the gate.
type Refusal struct {
	Run  *Run
	Gate *GateError
}

// Emitted is what Emit did with an event, for each hook it matched.
type Emitted struct {
	// Fate is what became of the event (nil when Elsewhere): the runs
	// below, and why it ran nothing.
	Fate    *EventFate
	Runs    []*Run    // started, or queued for a slot (Status queued)
	Refused []Refusal // refused by a gate
	// Elsewhere: stored pending on a cluster node that does not schedule;
	// the scheduler dispatches it, so its runs are not known here.
	Elsewhere bool
}

// EmitReport is Emit that returns, besides the runs, the gates that
// refused a matching hook. It never returns nil.
func (e *Engine) EmitReport(ctx context.Context, ev *Event) (*Emitted, error) {
	out, err := e.emit(ctx, ev)
	em := &Emitted{}
	if out != nil {
		em.Runs, em.Refused, em.Elsewhere = out.fired, out.gated, out.elsewhere
		if !out.elsewhere {
			em.Fate = out.fate()
		}
	}
	return em, err
}

func (e *Engine) emit(ctx context.Context, ev *Event) (*dispatched, error) {
	if err := ValidateEventType(ev.Type); err != nil {
		return nil, err
	}
	if ReservedEventType(ev.Type) {
		return nil, fmt.Errorf("event %s: %w", ev.Type, ErrReservedEvent)
	}
	if ev.Time.IsZero() {
		ev.Time = e.cfg.Clock.Now()
	}
	fresh := ev.ID == "" // an ID made here was never stored: no duplicate to look for
	if fresh {
		ev.ID = NewID()
	}
	if fresh && e.cfg.Cluster == nil {
		return e.emitWithStart(ctx, ev)
	}
	return e.emitStored(ctx, ev)
}

// emitStored is Emit of an event stored pending first, then dispatched:
// one with the client's ID (a duplicate is refused when it is stored),
// and every event on a cluster node, whose other nodes are told; the
// scheduler dispatches it (here, at once, when this node schedules).
//
// Once stored, the event is dispatched whatever becomes of ctx (here, or
// at the next start, or by the scheduler's next sweep), so it is stored
// (within StoreTimeout) and dispatched whatever becomes of ctx, and Emit
// answers with what was done: a client answered with ctx's error would
// publish it again (on a cluster under a new ID, and have it run twice).
// And an Emit on a cluster's scheduler that gave up while the loop
// decided would leave what the loop decided unread (not kept:
// keepDecisions) with dispatchMu free: the scheduler's sweep, woken by
// the event's store, would dispatch it again before the run's release
// was stored, and reach its hooks twice. A ctx that ended before Emit
// gets its error, and nothing is stored.
func (e *Engine) emitStored(ctx context.Context, ev *Event) (*dispatched, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	cluster := e.cfg.Cluster != nil
	leading := !cluster || e.lease.Leading()
	if cluster && leading {
		e.dispatchMu.Lock()
		defer e.dispatchMu.Unlock()
	}
	if err := e.storeEvent(ctx, ev, e.cfg.Store.AppendPendingEvent); err != nil {
		if errors.Is(err, ErrDuplicateEvent) {
			return nil, err
		}
		return nil, fmt.Errorf("store event: %w", err)
	}
	if !cluster {
		return e.dispatchDurable(ctx, ev, false)
	}
	e.tell(WakeEvents, "")
	if !leading {
		e.notify(ev)
		return &dispatched{elsewhere: true}, nil
	}
	out, err := e.dispatchDurable(ctx, ev, false)
	if errors.Is(err, ErrNotScheduler) {
		return &dispatched{elsewhere: true}, nil
	}
	return out, err
}

// Dispatch matches ev against the event triggers in memory and fires the
// hooks it matches, without storing it. It returns once the loop decided.
func (e *Engine) Dispatch(ctx context.Context, ev *Event) ([]*Run, error) {
	out, err := e.dispatch(ctx, ev)
	if out == nil {
		return nil, err
	}
	return out.fired, err
}

func (e *Engine) dispatch(ctx context.Context, ev *Event) (*dispatched, error) {
	out, err := e.dispatchOnLoop(ctx, ev, false, nil, nil)
	if errors.Is(err, ErrNotScheduler) {
		return nil, nil // a cluster's other nodes dispatch only what is stored
	}
	if err != nil {
		return nil, err // the loop may still be deciding: out is not ours to read
	}
	return out, nil
}

// emitWithStart is Emit of an event whose ID Emit made: the store stores
// it in the transaction of the run it starts. The loop
// decides first; when the event starts exactly one run at once, that
// run's start stores the event (marked dispatched) in its transaction,
// and Emit returns once that commit did. When several hooks take it, it
// is stored pending and dispatched as an event with an ID is
// (dispatchDurable): each record of what it did to a hook names it, and
// a start that was not recorded leaves it pending for the hooks it did
// not reach (settle). Otherwise (it starts no run at once) it is stored,
// marked dispatched, once the loop decided — or left pending for the
// next start when the engine is stopping. Either way the event is
// acknowledged only once it is stored, and it is never stored pending
// when a run carried it. Once the loop has ev (doTaken), all of this is
// carried through and answered whatever becomes of ctx; ctx's error
// answers only an event the loop never had, of which nothing is stored.
func (e *Engine) emitWithStart(ctx context.Context, ev *Event) (*dispatched, error) {
	carry := *ev // the carrier's copy: its store sets Seq on another goroutine
	out, err := e.dispatchOnLoop(ctx, ev, false, &carry, nil)
	// The event is stored whatever becomes of ctx, within StoreTimeout.
	switch {
	case errors.Is(err, ErrStopped) || err == nil && out.stopping:
		if err := e.storeEvent(ctx, ev, e.cfg.Store.AppendPendingEvent); err != nil {
			return nil, fmt.Errorf("store event: %w", err)
		}
		return nil, ErrStopped
	case err != nil:
		return nil, err
	case out.several:
		if err := e.storeEvent(ctx, ev, e.cfg.Store.AppendPendingEvent); err != nil {
			return nil, fmt.Errorf("store event: %w", err)
		}
		// Its subscribers were told and no handler claimed it: the loop
		// decides again, for the stored event. Stored, it is dispatched
		// and answered whatever becomes of ctx: a client that went away
		// here and emitted it again would have it twice. Each wait on
		// that path is bounded (the loop answers or stops; a start's
		// record, the writer's records and the mark within StoreTimeout).
		ctx := context.WithoutCancel(ctx)
		out = &dispatched{claim: out.claim}
		if err := e.decide(ctx, ev, true, nil, nil, out); err != nil {
			return nil, err
		}
		return e.settle(ctx, ev, out)
	}
	ev.Fate = out.fate() // stored with it (the carrier stores carry's, the same)
	if c := out.carrier; c != nil {
		// Its start stores the event and goes ahead whatever becomes of
		// ctx: Emit waits for it (within StoreTimeout) and answers with
		// it. A client that went away here and emitted the event again
		// would have it run twice.
		<-c.started
		if c.startErr != nil {
			return nil, fmt.Errorf("store event: %w", c.startErr)
		}
		ev.Seq = carry.Seq
		return out, nil
	}
	// It started no run at once: several hooks went above, and the run
	// of its one hook that starts at once is its carrier.
	if err := e.storeEvent(ctx, ev, e.cfg.Store.AppendEvent); err != nil {
		return nil, fmt.Errorf("store event: %w", err)
	}
	return out, nil
}

// storeEvent stores ev with store, within StoreTimeout, whatever becomes
// of ctx.
func (e *Engine) storeEvent(ctx context.Context, ev *Event, store func(context.Context, *Event) error) error {
	ctx, cancel := e.storeCtx(ctx)
	defer cancel()
	return store(ctx, ev)
}

// dispatchOnLoop streams ev to subscribers, offers it to the event:claim
// handlers and, unless one claims it or the engine is stopping, has the
// loop fire the hooks it matches. It returns copies of the runs it
// started or queued and the active runs of those that started (whose
// started channels are closed once their start is recorded). With mark,
// a run that is the only one ev starts marks it dispatched with its
// start (active.marked); with carry (ev not stored yet), such a run
// stores carry with its start and is the carrier. reached are the hooks
// ev reached before (Engine.reachedBefore): passed by.
func (e *Engine) dispatchOnLoop(ctx context.Context, ev *Event, mark bool, carry *Event, reached []string) (*dispatched, error) {
	e.notify(ev)
	out := &dispatched{}
	if out.claim = e.claimed(ctx, ev); out.claim.Claimed {
		return out, nil
	}
	return out, e.decide(ctx, ev, mark, carry, reached, out)
}

// decide has the loop fire the hooks ev matches (dispatchOnLoop, once its
// subscribers were told and no handler claimed it), into out.
func (e *Engine) decide(ctx context.Context, ev *Event, mark bool, carry *Event, reached []string, out *dispatched) error {
	do := e.do
	if carry != nil {
		// ev is not stored: what the loop decides for it (a run whose
		// start stores it) stands once the loop has it (emitWithStart).
		do = e.doTaken
	}
	err := do(ctx, func(s *state) {
		if out.stopping = s.stopping(); out.stopping {
			return
		}
		if !s.schedules() {
			out.refused = e.notScheduler()
			return
		}
		d := s.dispatch(ev, mark, carry, reached)
		// The records of what it did to each hook: its mark waits for
		// each of them (settle).
		out.records = d.records
		out.gated, out.carrier, out.rejected, out.unheard, out.several = d.refused, d.carrier, d.rejected, d.unheard, d.several
		if d.unheard {
			out.nearest = NearestTypes(ev.Type, s.cfg.Events.Patterns())
		}
		for _, r := range d.fired {
			var start *active
			if ent := s.hooks[r.Hook]; ent != nil && ent.active != nil && ent.active.run.ID == r.ID {
				start = ent.active
				out.starts = append(out.starts, start)
				out.startHooks = append(out.startHooks, r.Hook)
			}
			if mark {
				out.decided = append(out.decided, decision{hook: r.Hook, start: start})
			}
			if start != nil && r != start.run {
				out.fired = append(out.fired, r) // startRun's snapshot: the caller's already
				continue
			}
			cp := *r // queued: the loop's record
			out.fired = append(out.fired, &cp)
		}
		if mark {
			for _, g := range d.refused {
				out.decided = append(out.decided, decision{hook: g.Run.Hook})
			}
		}
	})
	if err == nil {
		err = out.refused
	}
	return err
}

// dispatched is what the loop decided for one event (dispatchOnLoop).
type dispatched struct {
	fired  []*Run
	gated  []Refusal // matching hooks a gate refused
	starts []*active
	// startHooks are the hooks of starts, read where act.run is not: the
	// loop replaces it once the run ends (remoteFinished), and a run whose
	// release is in doubt may end before its start is read.
	startHooks []string
	carrier    *active // the run that stores the event with its start
	// claim is the event:claim handlers' outcome: Claimed, an event not
	// dispatched, By the handler that took it and Reason its reason;
	// rejected the hooks whose where: rejected it; unheard: no hook
	// listens to its type, and nearest what hooks listen to nearest to it
	// (EventFate).
	claim    Outcome
	rejected []string
	// decided is what it did to each hook it reached, for a stored event
	// (mark; decisions).
	decided []decision
	// records are the writer's records of what it did to each hook, for
	// a stored event (mark): a run that waits, a refusal, a merge into a
	// pending run. Its mark waits until each of them is stored (settle).
	records  []*write
	unheard  bool
	nearest  []string
	stopping bool
	refused  error // ErrNotScheduler: a cluster node that does not schedule
	// elsewhere: stored for a cluster's scheduler to dispatch (emitStored)
	elsewhere bool
	// several: ev, not stored yet (carry), is taken by several hooks,
	// and fired none (emitWithStart stores it pending and dispatches it)
	several bool
}

// fate is the event's fate as d says it.
func (d *dispatched) fate() *EventFate {
	f := &EventFate{Unheard: d.unheard, Nearest: d.nearest, Rejected: d.rejected}
	if d.claim.Claimed {
		f.ClaimedBy, f.ClaimReason = d.claim.By, d.claim.Reason
	}
	for _, r := range d.fired {
		f.Runs = append(f.Runs, FateRun{ID: r.ID, Hook: r.Hook})
	}
	for _, r := range d.gated {
		f.Runs = append(f.Runs, FateRun{ID: r.Run.ID, Hook: r.Run.Hook, Gate: r.Gate.Gate})
	}
	return f
}

// claimed calls the event:claim handlers for an inbound event and reports
// whether one claimed it, which, and why; a claimed event is not
// dispatched to hooks.
func (e *Engine) claimed(ctx context.Context, ev *Event) Outcome {
	lc := e.cfg.Lifecycle
	if !lc.Active(PointEventClaim) {
		return Outcome{}
	}
	o := lc.Call(ctx, PointEventClaim, &Payload{Event: ev})
	if o.Claimed {
		e.log.Info("event claimed by a lifecycle handler; not dispatched to hooks",
			"event", ev.ID, "type", ev.Type, "handler", o.By, "reason", o.Reason)
	}
	return o
}

// SetPaused pauses or resumes a hook. The state is stored, so it survives
// restarts.
func (e *Engine) SetPaused(ctx context.Context, name string, paused bool) error {
	var missing error
	if err := e.do(ctx, func(s *state) {
		if s.hooks[name] == nil {
			missing = s.noHook(name)
		}
	}); err != nil {
		return err
	}
	if missing != nil {
		return missing
	}
	if err := e.cfg.Store.SetPaused(ctx, name, paused); err != nil {
		return fmt.Errorf("store paused state: %w", err)
	}
	e.tellScheduler() // a cluster's scheduler reads it back
	return e.do(ctx, func(s *state) {
		if ent := s.hooks[name]; ent != nil {
			ent.paused = paused
		}
	})
}

// HookStatus is a hook's live state, for `hookd list`.
type HookStatus struct {
	Name       string    `json:"name"`
	Project    string    `json:"project_id,omitempty"` // agent-queue's project_id, a label
	Trigger    string    `json:"trigger"`
	Enabled    bool      `json:"enabled"`
	Paused     bool      `json:"paused"`
	NextDue    time.Time `json:"next_due,omitzero"`
	InFlight   string    `json:"in_flight,omitempty"` // run id
	Queued     int       `json:"queued"`              // runs of this hook waiting
	LastRunID  string    `json:"last_run_id,omitempty"`
	LastStatus Status    `json:"last_status,omitempty"`
	// LastCheckFailed is the check the latest run did not pass
	// (Run.CheckFailed): its status alone would look green.
	LastCheckFailed string    `json:"last_check_failed,omitempty"`
	LastStart       time.Time `json:"last_start,omitzero"`
	File            string    `json:"file"`
	Version         string    `json:"version"`
	// Budget is the hook's token usage in the last hour and day against
	// its budget (package budget), when it has a budget or used tokens.
	Budget *budget.SpendWindows `json:"budget,omitempty"`
	// Sandbox says what the sandbox cannot give the hook here: its
	// triggers are refused (sandbox_unavailable), or its limits: are not
	// enforced. "" when neither.
	Sandbox string `json:"sandbox,omitempty"`
	// Broken is set when the hook's file does not load (SetBroken): with
	// Previous when this version of the hook still runs meanwhile, else
	// the row stands for the file alone, with only Name and File set.
	Broken *BrokenFile `json:"broken,omitempty"`
}

// Hooks returns the live state of every hook, and the hook files that do
// not load (SetBroken), sorted by name.
func (e *Engine) Hooks(ctx context.Context) ([]HookStatus, error) {
	var out []HookStatus
	err := e.do(ctx, func(s *state) { out = s.statuses() })
	return out, err
}

// Summary is the engine-wide summary for `hookd status`. Overdue hooks
// are Overdue's to say.
type Summary struct {
	InFlight []string `json:"in_flight"` // run ids
	Queued   []string `json:"queued"`    // run ids, in queue order
	// Retries are the retries of failed runs waiting for their time,
	// earliest first.
	Retries []RetryInfo `json:"retries"`
	// Spend is the token usage against the budgets (package budget).
	Spend budget.Spend `json:"spend"`
	// Store is set while the store does not take writes: `hookd
	// status` shows "store stalled since … (cause)" (writer.go).
	Store *StoreStall `json:"store_stalled,omitempty"`
	// Broken are the hook files that do not load (SetBroken), by file:
	// hookd status counts them, and exits non-zero while there are any.
	Broken []BrokenFile `json:"broken,omitempty"`
}

// Summary reports runs in flight and the queue.
func (e *Engine) Summary(ctx context.Context) (Summary, error) {
	var out Summary
	err := e.do(ctx, func(s *state) { out = s.summary() })
	return out, err
}

// Wait blocks until the run is final and returns its record.
func (e *Engine) Wait(ctx context.Context, runID string) (*Run, error) {
	ch := make(chan *Run, 1)
	// A run the loop has live takes the waiter at once, without a message
	// to the loop (a wake-up a run), and one that ended a moment ago
	// answers it with its final record (recentFinals); any other is asked
	// of the loop, after what it has in hand: a run that just ended has
	// its record final then.
	st := e.st.Load()
	live := st != nil && st.addWaiter(runID, ch)
	if !live {
		if err := e.do(ctx, func(s *state) { live = s.addWaiter(runID, ch) }); err != nil && !errors.Is(err, ErrStopped) {
			return nil, err
		}
	}
	if live {
		select {
		case r := <-ch:
			return r, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-e.loopDone:
		}
	}
	if e.cfg.Cluster != nil {
		return e.waitStored(ctx, runID) // decided, or executed, by another node
	}
	return e.cfg.Store.GetRun(ctx, runID)
}

// Subscribe calls f with every event the engine publishes or dispatches
// (f must not block). The returned function unsubscribes.
func (e *Engine) Subscribe(f func(*Event)) (cancel func()) {
	e.subMu.Lock()
	id := e.subN
	e.subN++
	e.subs[id] = f
	e.subMu.Unlock()
	return func() {
		e.subMu.Lock()
		delete(e.subs, id)
		e.subMu.Unlock()
	}
}

func (e *Engine) notify(ev *Event) {
	e.subMu.Lock()
	defer e.subMu.Unlock()
	for _, f := range e.subs {
		f(ev)
	}
}

// FireTimes returns the next n times h's schedule fires after from, with
// its jitter applied. A hook without a schedule has none.
func FireTimes(h *Hook, from time.Time, n int) []time.Time {
	s := h.Trigger.Schedule
	if s == nil || !h.Trigger.Periodic() {
		return nil
	}
	var out []time.Time
	for slot := s.Next(from); !slot.IsZero() && len(out) < n; slot = s.Next(slot) {
		out = append(out, dueAt(h, slot))
	}
	return out
}

// noHook is the error for a hook name no hook has: ErrNotFound, with the
// name the user most likely meant among names.
func noHook(name string, names []string) error {
	if s := suggest.Closest(name, names); s != "" {
		return fmt.Errorf("%w: no hook named %q; did you mean %s?", ErrNotFound, name, s)
	}
	return fmt.Errorf("%w: no hook named %q", ErrNotFound, name)
}

// noHook is noHook among the loop's hooks.
func (s *state) noHook(name string) error {
	names := make([]string, 0, len(s.hooks))
	for n := range s.hooks {
		names = append(names, n)
	}
	return noHook(name, names)
}
