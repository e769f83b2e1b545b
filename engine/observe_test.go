package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/clock/clocktest"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/triggers"
)

// TestEmitIsDurable: an emitted event is stored pending, dispatched, and
// marked dispatched once the run it started is recorded.
func TestEmitIsDurable(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hk := newHook("deploy")
		hk.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*"}
		h := newHarness(t, []*engine.Hook{hk})
		defer h.stop()
		ctx := context.Background()

		ev := &engine.Event{ID: "e1", Type: "deploy.finished"}
		runs, err := h.eng.Emit(ctx, ev)
		if err != nil || len(runs) != 1 {
			t.Fatalf("emit: %v %v", runs, err)
		}
		// The run's start is recorded before Emit returns.
		if r := h.run(runs[0].ID); r.Status != engine.StatusRunning && !r.Status.Final() {
			t.Errorf("run %s is %s when Emit returned", r.ID, r.Status)
		}
		if p, _ := h.db.PendingEvents(ctx, 10); len(p) != 0 {
			t.Errorf("pending after dispatch: %+v", p)
		}
		// A duplicate is refused with the first seq, and not dispatched.
		dup := &engine.Event{ID: "e1", Type: "deploy.finished"}
		if runs, err := h.eng.Emit(ctx, dup); !errors.Is(err, engine.ErrDuplicateEvent) || len(runs) != 0 || dup.Seq != ev.Seq {
			t.Errorf("duplicate: %v %v seq %d", runs, err, dup.Seq)
		}
		h.settle()
		if n := len(h.runs("deploy")); n != 1 {
			t.Errorf("%d runs, want 1", n)
		}
	})
}

// TestDispatchPending: an event stored but not dispatched when the
// process died is dispatched by the next engine, once.
func TestDispatchPending(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hk := newHook("deploy")
		hk.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*"}
		h := newHarness(t, []*engine.Hook{hk})
		h.stop()
		ctx := context.Background()

		// The crash: stored, never dispatched.
		db := h.dbAt()
		for _, id := range []string{"lost-1", "lost-2"} {
			if err := db.AppendPendingEvent(ctx, &engine.Event{ID: id, Type: "deploy.finished", Source: "api", Data: map[string]any{"id": id}}); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()

		h.start()
		defer h.stop()
		n, err := h.eng.DispatchPending(ctx)
		if err != nil || n != 2 {
			t.Fatalf("DispatchPending: %d %v", n, err)
		}
		h.settle()
		runs := h.runs("deploy")
		if len(runs) != 2 {
			t.Fatalf("%d runs, want 2", len(runs))
		}
		// In order: the first ran, the second found it in flight or ran after.
		var first map[string]any
		json.Unmarshal(runs[0].Event, &first)
		if first["id"] != "lost-1" || runs[0].Trigger != "event" {
			t.Errorf("first run: %s %s", runs[0].Event, runs[0].Trigger)
		}
		if n, err := h.eng.DispatchPending(ctx); err != nil || n != 0 {
			t.Errorf("second DispatchPending: %d %v", n, err)
		}
	})
}

// TestEmitWhileStopping: an event published while the engine stops is
// stored and left pending for the next start, with or without an ID.
func TestEmitWhileStopping(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		blk := newBlock()
		slow := withSteps(newHook("slow"), blk)
		hk := newHook("deploy")
		hk.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*"}
		h := newHarness(t, []*engine.Hook{slow, hk}, func(c *engine.Config) { c.Grace = time.Hour })
		ctx := context.Background()
		h.mustFire("slow")
		h.settle()
		stopped := make(chan struct{})
		go func() { h.eng.Stop(); close(stopped) }()
		h.settle() // shutdown began; the slow run holds it open

		ev := &engine.Event{ID: "late", Type: "deploy.finished"}
		if _, err := h.eng.Emit(ctx, ev); !errors.Is(err, engine.ErrStopped) || ev.Seq == 0 {
			t.Fatalf("emit while stopping: %v, seq %d", err, ev.Seq)
		}
		// Without an ID (not stored before dispatch when hookd runs).
		ev2 := &engine.Event{Type: "deploy.finished"}
		if _, err := h.eng.Emit(ctx, ev2); !errors.Is(err, engine.ErrStopped) || ev2.Seq == 0 {
			t.Fatalf("emit without an id while stopping: %v, seq %d", err, ev2.Seq)
		}
		close(blk.release)
		<-stopped
		h.db.Close()
		db := h.dbAt()
		defer db.Close()
		if p, _ := db.PendingEvents(ctx, 10); len(p) != 2 || p[0].ID != "late" || p[1].ID != ev2.ID {
			t.Errorf("pending: %+v", p)
		}
	})
}

// fakeLLM answers with a transcript of tool calls and token counts.
type fakeLLM struct{}

func (fakeLLM) Complete(ctx context.Context, req *engine.LLMRequest) error {
	req.Run.Response = "done"
	req.Run.Tokens = engine.Tokens{Prompt: 120, Completion: 30, Cached: 5, Known: true}
	req.Run.Tools = []engine.ToolUse{
		{Round: 1, Name: "read_file", Tool: "read_file", Outcome: engine.ToolOK},
		{Round: 1, Name: "http_get", Tool: "http_get", Outcome: engine.ToolError, Error: "404"},
		{Round: 2, Name: "write_file", Tool: "write_file", Outcome: engine.ToolDenied, DeniedBy: "guard"},
		{Round: 2, Name: "rm_rf", Outcome: engine.ToolUnknown},
	}
	return nil
}

// TestRunEventExtras: the started event of a scheduled run says its slot
// and how late it started; the final event carries tokens and the tool
// chain.
func TestRunEventExtras(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hk := every(newHook("tick"), time.Minute)
		hk.Trigger.Jitter = 20 * time.Second
		hk.SkipLLM, hk.Prompt = false, "go"
		h := newHarness(t, []*engine.Hook{hk}, func(c *engine.Config) { c.LLM = fakeLLM{} })
		defer h.stop()
		h.advance(3 * time.Minute)

		started := h.eventsOf(engine.EventRunStarted)
		if len(started) < 2 {
			t.Fatalf("%d started events", len(started))
		}
		for _, ev := range started {
			late, ok := ev.Data["lateness_ms"].(float64)
			if !ok || late < 0 || late > 1000 {
				t.Errorf("lateness_ms = %v (%T); want 0..1000 (the loop wakes at the jittered time)", ev.Data["lateness_ms"], ev.Data["lateness_ms"])
			}
			slot, err := time.Parse(time.RFC3339Nano, ev.Data["slot"].(string))
			if err != nil || slot.Second() != 0 {
				t.Errorf("slot %v: %v", ev.Data["slot"], err)
			}
			if _, ok := ev.Data["started_at"].(string); !ok {
				t.Errorf("no started_at: %v", ev.Data)
			}
		}
		done := h.eventsOf(engine.EventRunCompleted)
		if len(done) == 0 {
			t.Fatal("no completed event")
		}
		d := done[0].Data
		if tok, _ := d["tokens"].(map[string]any); tok["prompt"] != int64(120) || tok["completion"] != int64(30) || tok["cached"] != int64(5) {
			t.Errorf("tokens: %v", d["tokens"])
		}
		want := []any{
			map[string]any{"tool": "read_file", "outcome": "ok"},
			map[string]any{"tool": "http_get", "outcome": "error"},
			map[string]any{"tool": "write_file", "outcome": "denied"},
			map[string]any{"tool": "rm_rf", "outcome": "unknown"},
		}
		if !reflect.DeepEqual(d["tools"], want) {
			t.Errorf("tools: %v", d["tools"])
		}
		// Subscribers read the same outcome typed, as stored.
		o := done[0].Outcome
		if o == nil || o.Run.Status != engine.StatusCompleted || len(o.Run.Tools) != 4 || o.Run.Tools[2].DeniedBy != "guard" ||
			o.Run.Tokens.Prompt != 120 || o.Scheduled {
			t.Errorf("typed outcome: %+v", o)
		}
		if stored := h.run(o.Run.ID); !reflect.DeepEqual(stored.Tools, o.Run.Tools) {
			t.Errorf("stored tools %+v, event's %+v", stored.Tools, o.Run.Tools)
		}
		if o := started[0].Outcome; o == nil || !o.Scheduled || o.Lateness < 0 || o.Lateness > time.Second || o.Run.Status != engine.StatusRunning {
			t.Errorf("started outcome: %+v", o)
		}
		// Manual runs have no lateness.
		r := h.mustFire("tick")
		h.settle()
		for _, ev := range h.eventsOf(engine.EventRunStarted) {
			if ev.Data["run_id"] == r.ID {
				if _, ok := ev.Data["lateness_ms"]; ok || ev.Data["slot"] != nil {
					t.Errorf("manual run's started event: %v", ev.Data)
				}
			}
		}
	})
}

// TestOverdue: a periodic hook whose slots a long run keeps refusing is
// overdue once the grace has passed since the first refused slot.
func TestOverdue(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		blk := newBlock()
		hk := withSteps(every(newHook("busy"), time.Minute), blk)
		other := every(newHook("fine"), time.Minute)
		h := newHarness(t, []*engine.Hook{hk, other})
		defer h.stop()
		ctx := context.Background()
		overdue := func(grace time.Duration) []string {
			t.Helper()
			o, err := h.eng.Overdue(ctx, grace)
			if err != nil {
				t.Fatal(err)
			}
			return o
		}
		h.advance(time.Minute + time.Second) // the first run starts and blocks
		if o := overdue(0); len(o) != 0 {
			t.Errorf("overdue while the first run runs: %v", o)
		}
		h.advance(time.Minute) // its next slot is refused: in flight
		if o := overdue(5 * time.Minute); len(o) != 0 {
			t.Errorf("overdue within the grace: %v", o)
		}
		h.advance(5 * time.Minute)
		if o := overdue(5 * time.Minute); !reflect.DeepEqual(o, []string{"busy"}) {
			t.Errorf("overdue = %v, want [busy]", o)
		}
		close(blk.release)
		h.advance(time.Minute) // the next slot runs
		if o := overdue(5 * time.Minute); len(o) != 0 {
			t.Errorf("overdue after a run: %v", o)
		}
	})
}

// markCounter counts the store's MarkDispatched, AppendPendingEvent and
// AppendEvent calls.
type markCounter struct {
	*store.DB
	marks, pendings, appends atomic.Int64
}

func (m *markCounter) MarkDispatched(ctx context.Context, seq int64) error {
	m.marks.Add(1)
	return m.DB.MarkDispatched(ctx, seq)
}

func (m *markCounter) AppendPendingEvent(ctx context.Context, ev *engine.Event) error {
	m.pendings.Add(1)
	return m.DB.AppendPendingEvent(ctx, ev)
}

func (m *markCounter) AppendEvent(ctx context.Context, ev *engine.Event) error {
	m.appends.Add(1)
	return m.DB.AppendEvent(ctx, ev)
}

// TestEmitMarksWithTheStart: an event with a client's ID is stored
// pending first (its ID may have been stored before); when it starts one
// run it is marked dispatched in the transaction of that run's start
// (one write less), when it starts two it is marked once both starts are
// recorded. An event without an ID (Emit makes one, never stored before)
// that starts one run is stored in the transaction of that run's start —
// no write of its own — and one that starts two is stored pending first
// and marked once both starts are recorded, as one with an ID (so that
// each start records that it reached its hook). Either way nothing is
// left pending, and the run's start is recorded when Emit returns.
func TestEmitMarksWithTheStart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		mc := &markCounter{DB: db}
		one := newHook("one")
		one.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "one.*"}
		a, b := newHook("a"), newHook("b")
		a.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "two.*"}
		b.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "two.*"}
		eng, err := engine.New(engine.Config{Store: mc, Events: triggers.NewEventIndex(), Clock: &clocktest.Clock{},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Tick: time.Second}, []*engine.Hook{one, a, b})
		if err != nil {
			t.Fatal(err)
		}
		if err := eng.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer eng.Stop()
		ctx := context.Background()
		pending := func() int {
			p, err := db.PendingEvents(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			return len(p)
		}
		type counts struct{ marks, pendings, appends int64 }
		for _, c := range []struct {
			id, typ string
			runs    int
			want    counts
		}{
			{"client-1", "one.go", 1, counts{0, 1, 0}},
			{"client-2", "two.go", 2, counts{1, 1, 0}},
			{"", "one.go", 1, counts{0, 0, 0}},
			{"", "two.go", 2, counts{1, 1, 0}},
		} {
			mc.marks.Store(0)
			mc.pendings.Store(0)
			mc.appends.Store(0)
			ev := &engine.Event{ID: c.id, Type: c.typ}
			runs, err := eng.Emit(ctx, ev)
			if err != nil || len(runs) != c.runs {
				t.Fatalf("emit %s (id %q): %v %v, want %d runs", c.typ, c.id, runs, err, c.runs)
			}
			got := counts{mc.marks.Load(), mc.pendings.Load(), mc.appends.Load()}
			if got != c.want {
				t.Errorf("emit %s (id %q): MarkDispatched, AppendPendingEvent, AppendEvent called %v times, want %v",
					c.typ, c.id, got, c.want)
			}
			if n := pending(); n != 0 {
				t.Errorf("emit %s (id %q): %d events pending, want 0", c.typ, c.id, n)
			}
			stored, err := db.ListEvents(ctx, c.typ, 10)
			if err != nil || len(stored) == 0 || stored[0].ID != ev.ID || stored[0].Seq != ev.Seq || ev.Seq == 0 {
				t.Errorf("emit %s (id %q): event %s seq %d; stored %+v %v", c.typ, c.id, ev.ID, ev.Seq, stored, err)
			}
			for _, r := range runs {
				if got, err := db.GetRun(ctx, r.ID); err != nil || (got.Status != engine.StatusRunning && !got.Status.Final()) {
					t.Errorf("emit %s (id %q): the start is not recorded when Emit returned: %+v %v", c.typ, c.id, got, err)
				}
			}
			synctest.Wait()
		}
	})
}

// failingStarter is a store whose starts that store an event fail.
type failingStarter struct{ *store.DB }

var errStartRefused = errors.New("disk full")

func (f *failingStarter) StartRunWithEvent(ctx context.Context, r *engine.Run, ev *engine.Event) error {
	return errStartRefused
}

// TestEmitStoredWithTheStartFails: when the start that would store an
// event with it fails, Emit fails — the event is not acknowledged — and
// nothing is stored: neither the event, nor a pending copy of it, nor the
// run, which does not run.
func TestEmitStoredWithTheStartFails(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		blk := newBlock()
		hk := withSteps(newHook("deploy"), blk)
		hk.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*"}
		eng, err := engine.New(engine.Config{Store: &failingStarter{db}, Events: triggers.NewEventIndex(), Clock: &clocktest.Clock{},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Tick: time.Second}, []*engine.Hook{hk})
		if err != nil {
			t.Fatal(err)
		}
		if err := eng.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer eng.Stop()
		ctx := context.Background()
		runs, err := eng.Emit(ctx, &engine.Event{Type: "deploy.finished"})
		if !errors.Is(err, errStartRefused) {
			t.Errorf("emit: %v %v, want the start's error", runs, err)
		}
		synctest.Wait()
		if evs, err := db.ListEvents(ctx, "deploy.finished", 10); err != nil || len(evs) != 0 {
			t.Errorf("events stored: %+v %v, want none", evs, err)
		}
		if p, err := db.PendingEvents(ctx, 10); err != nil || len(p) != 0 {
			t.Errorf("pending: %+v %v, want none", p, err)
		}
		if got, err := db.ListRuns(ctx, engine.RunFilter{Hook: "deploy"}); err != nil || len(got) != 0 {
			t.Errorf("runs stored: %+v %v, want none", got, err)
		}
		if n := blk.started.Load(); n != 0 {
			t.Errorf("the step ran %d times although the start was not recorded", n)
		}
	})
}
