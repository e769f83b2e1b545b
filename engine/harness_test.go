package engine_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/clock/clocktest"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/triggers"
)

// The engine tests run inside synctest bubbles: time is virtual and moves
// only when every goroutine is blocked, so schedules, cooldowns and
// timeouts are tested without sleeping on the wall clock. The store is a
// real SQLite file.

// harness is one engine on one database, in a bubble.
type harness struct {
	t      *testing.T
	dbPath string
	db     *store.DB
	eng    *engine.Engine
	clock  *clocktest.Clock
	cfg    engine.Config
	hooks  []*engine.Hook

	mu     sync.Mutex
	events []*engine.Event
}

func newHarness(t *testing.T, hooks []*engine.Hook, tweak ...func(*engine.Config)) *harness {
	t.Helper()
	h := &harness{t: t, dbPath: filepath.Join(t.TempDir(), "hookd.db"), clock: &clocktest.Clock{}, hooks: hooks}
	h.cfg = engine.Config{
		Clock:  h.clock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Tick:   time.Second,
	}
	for _, f := range tweak {
		f(&h.cfg)
	}
	h.start()
	return h
}

// start opens the store and starts an engine on it.
func (h *harness) start() {
	h.t.Helper()
	db, err := store.Open(h.dbPath)
	if err != nil {
		h.t.Fatal(err)
	}
	h.db = db
	cfg := h.cfg
	cfg.Store = db
	cfg.Events = triggers.NewEventIndex()
	eng, err := engine.New(cfg, h.hooks)
	if err != nil {
		h.t.Fatal(err)
	}
	eng.Subscribe(func(ev *engine.Event) {
		h.mu.Lock()
		h.events = append(h.events, ev)
		h.mu.Unlock()
	})
	if err := eng.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.eng = eng
}

// stop shuts the engine down (grace as configured) and closes the store.
func (h *harness) stop() {
	h.eng.Stop()
	h.db.Close()
}

// restart stops and starts again on the same database, as a new process
// would, after the wall clock moved by downtime.
func (h *harness) restart(downtime time.Duration) {
	h.stop()
	h.clock.Jump(downtime)
	h.start()
}

// settle waits until every goroutine of the bubble is blocked.
func (h *harness) settle() { synctest.Wait() }

// logged lets the engine's own events reach the event log: the store
// keeps them for the next commit of other writes, or commits them itself
// store.LaterDelay later.
func (h *harness) logged() { h.advance(2 * store.LaterDelay) }

// advance lets virtual time pass and then settles.
func (h *harness) advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func (h *harness) runs(hook string) []*engine.Run {
	h.t.Helper()
	runs, err := h.db.ListRuns(context.Background(), engine.RunFilter{Hook: hook, Limit: 1000})
	if err != nil {
		h.t.Fatal(err)
	}
	// oldest first reads better in tests
	for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
		runs[i], runs[j] = runs[j], runs[i]
	}
	return runs
}

func (h *harness) run(id string) *engine.Run {
	h.t.Helper()
	r, err := h.db.GetRun(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func (h *harness) fire(name string, opt engine.FireOptions) (*engine.Run, error) {
	return h.eng.Fire(context.Background(), name, opt)
}

func (h *harness) mustFire(name string) *engine.Run {
	h.t.Helper()
	r, err := h.fire(name, engine.FireOptions{})
	if err != nil {
		h.t.Fatalf("fire %s: %v", name, err)
	}
	return r
}

func (h *harness) eventsOf(typ string) []*engine.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*engine.Event
	for _, ev := range h.events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// gateOf returns the gate of a refusal, or "".
func gateOf(err error) string {
	var g *engine.GateError
	if errors.As(err, &g) {
		return g.Gate
	}
	return ""
}

// statuses lists the runs' statuses in order.
func statuses(runs []*engine.Run) []engine.Status {
	out := make([]engine.Status, len(runs))
	for i, r := range runs {
		out[i] = r.Status
	}
	return out
}

// newHook returns an enabled, steps-only hook.
func newHook(name string) *engine.Hook {
	return &engine.Hook{Name: name, Enabled: true, Overlap: engine.OverlapSkip, SkipLLM: true, Source: engine.Source{File: name + ".yaml"}}
}

// every gives h an interval trigger.
func every(h *engine.Hook, d time.Duration) *engine.Hook {
	h.Trigger = engine.Trigger{Kind: engine.TriggerEvery, Every: d}
	return compile(h)
}

func compile(h *engine.Hook) *engine.Hook {
	s, err := engine.CompileSchedule(&h.Trigger)
	if err != nil {
		panic(err)
	}
	h.Trigger.Schedule = s
	return h
}

// withSteps appends steps to h, numbering them.
func withSteps(h *engine.Hook, steps ...engine.Step) *engine.Hook {
	for _, s := range steps {
		h.Steps = append(h.Steps, &engine.StepDef{Index: len(h.Steps), Type: "test", Step: s})
	}
	return h
}

// blockStep blocks until released (or its context ends).
type blockStep struct {
	release chan struct{}
	started atomic.Int32
}

func newBlock() *blockStep { return &blockStep{release: make(chan struct{})} }

func (b *blockStep) Run(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
	b.started.Add(1)
	select {
	case <-b.release:
		return &engine.StepResult{Output: "released"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// funcStep runs a function as a step.
type funcStep func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error)

func (f funcStep) Run(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
	return f(ctx, env)
}

// dbAt opens the harness database directly.
func (h *harness) dbAt() *store.DB {
	h.t.Helper()
	db, err := store.Open(h.dbPath)
	if err != nil {
		h.t.Fatal(err)
	}
	return db
}
