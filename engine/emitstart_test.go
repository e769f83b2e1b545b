package engine_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/triggers"
)

// TestEmitSeveralStartsOneFailedStaysPending: an event without an ID
// that starts runs of two hooks, one of whose starts cannot be recorded,
// stays pending, recorded as having reached the hook whose run started;
// the next start dispatches it to the other hook only. Before, it was
// stored dispatched all the same: an accepted event that hook never saw.
func TestEmitSeveralStartsOneFailedStaysPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := &failingHookStart{DB: db, hook: "b"}
	st.fail.Store(1) // b's run for the event
	hook := func(name string) *engine.Hook {
		h := withSteps(newHook(name), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			return &engine.StepResult{Output: "ran"}, nil
		}))
		h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*"}
		return h
	}
	start := func() *engine.Engine {
		return startEventEngine(t, st, []*engine.Hook{hook("a"), hook("b")})
	}
	completed := func(name string) int {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: name, Status: engine.StatusCompleted, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return len(runs)
	}

	first := start()
	ev := &engine.Event{Type: "deploy.done"}
	if _, err := first.Emit(ctx, ev); err != nil {
		t.Fatalf("emit: %v (the event is stored: pending)", err)
	}
	poll(t, "a's run for the event", func() bool { return completed("a") == 1 })
	first.Stop()
	pend, err := db.PendingEvents(ctx, 10)
	if err != nil || len(pend) != 1 || pend[0].ID != ev.ID {
		t.Fatalf("pending after b's start failed: %+v %v, want the event %s", pend, err, ev.ID)
	}
	if reached, err := db.DispatchedTo(ctx, pend[0].Seq); err != nil || !slices.Equal(reached, []string{"a"}) {
		t.Errorf("the event reached %v %v, want [a]", reached, err)
	}
	if n := completed("b"); n != 0 {
		t.Fatalf("b ran %d times for the event, whose start was not recorded", n)
	}

	second := start()
	defer second.Stop()
	if _, err := second.DispatchPending(ctx); err != nil {
		t.Fatal(err)
	}
	poll(t, "b's run for the event at the next start", func() bool { return completed("b") == 1 })
	if n := completed("a"); n != 1 {
		t.Errorf("a ran %d times for the event, want once", n)
	}
	if p, err := db.PendingEvents(ctx, 10); err != nil || len(p) != 0 {
		t.Errorf("pending after the second start: %v %v", p, err)
	}
}

// heldHookStart is a real SQLite store whose starts of a run of hook wait
// until unhold is closed, held reporting that one does.
type heldHookStart struct {
	*store.DB
	hook   string
	held   chan struct{}
	unhold chan struct{}
}

func (s *heldHookStart) wait(r *engine.Run) {
	if r.Hook == s.hook {
		s.held <- struct{}{}
		<-s.unhold
	}
}

func (s *heldHookStart) StartRun(ctx context.Context, r *engine.Run) error {
	s.wait(r)
	return s.DB.StartRun(ctx, r)
}

func (s *heldHookStart) StartRunDispatched(ctx context.Context, r *engine.Run, seq int64) error {
	s.wait(r)
	return s.DB.StartRunDispatched(ctx, r, seq)
}

func (s *heldHookStart) StartRunWithEvent(ctx context.Context, r *engine.Run, ev *engine.Event) error {
	s.wait(r)
	return s.DB.StartRunWithEvent(ctx, r, ev)
}

// heldDecision is an event index whose first lookup of the listeners of
// typ, made by the loop deciding an event of that type, waits until
// unhold is closed, held reporting that it does.
type heldDecision struct {
	engine.EventIndex
	typ    string
	once   sync.Once
	held   chan struct{}
	unhold chan struct{}
}

func (x *heldDecision) Listeners(dst []string, typ string) []string {
	if typ == x.typ {
		x.once.Do(func() {
			x.held <- struct{}{}
			<-x.unhold
		})
	}
	return x.EventIndex.Listeners(dst, typ)
}

// goneClient is an engine for a test of a client that goes away while
// the engine works for it: one hook, a (trigger trig, a step that
// succeeds), on a real SQLite store, in the caller's synctest bubble.
// With gone "deciding" the loop's decision of an event of type decide is
// held, with "starting" the record of a's start; held says it is held,
// unhold lets it go.
type goneClient struct {
	eng          *engine.Engine
	db           *store.DB
	held, unhold chan struct{}
}

func newGoneClient(t *testing.T, gone, decide string, trig engine.Trigger) *goneClient {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := &heldHookStart{DB: db, hook: "none", held: make(chan struct{}, 1), unhold: make(chan struct{})}
	events := &heldDecision{EventIndex: triggers.NewEventIndex(), typ: "none", held: make(chan struct{}, 1), unhold: make(chan struct{})}
	g := &goneClient{db: db, held: st.held, unhold: st.unhold}
	switch gone {
	case "deciding":
		events.typ = decide
		g.held, g.unhold = events.held, events.unhold
	case "starting":
		st.hook = "a"
	}
	h := withSteps(newHook("a"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		return &engine.StepResult{Output: "ran"}, nil
	}))
	h.Trigger = trig
	if g.eng, err = engine.New(engine.Config{Store: st, Events: events, Clock: clock.System{}, Tick: time.Second,
		Grace: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, []*engine.Hook{h}); err != nil {
		t.Fatal(err)
	}
	if err := g.eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.eng.Stop)
	return g
}

// TestEmitOneOutlivesClient: an event without an ID that starts one run
// is stored with that run's start; a client that goes away once the loop
// has it (while the loop decides, or while the run's start is recorded)
// is still answered with the run, and one that retries on an error has
// it run twice. Emit waits for the start and answers with it; a client
// that went away before Emit gets its ctx's error, and nothing is stored
// or run. Before, Emit failed with "context canceled" while the run went
// ahead and stored the event: the client emitted it again, and it ran
// twice. An event with the client's ID takes the other path (stored
// pending, then dispatched) and is answered the same way; before, that
// client got "context canceled" for a run that went ahead (its retry was
// refused as a duplicate, so nothing ran twice, but the answer lied).
func TestEmitOneOutlivesClient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		gone string // when the client goes away: "before", "deciding", "starting"
		id   string // the event's ID, the client's; "" for none
	}{
		{"before Emit", "before", ""},
		{"while the loop decides", "deciding", ""},
		{"while the start is recorded", "starting", ""},
		{"with an ID, before Emit", "before", "evt-1"},
		{"with an ID, while the loop decides", "deciding", "evt-1"},
		{"with an ID, while the start is recorded", "starting", "evt-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				bg := context.Background()
				g := newGoneClient(t, tc.gone, "deploy.done", engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*"})
				eng, db, held, unhold := g.eng, g.db, g.held, g.unhold

				ctx, cancel := context.WithCancel(bg)
				type answer struct {
					runs []*engine.Run
					err  error
				}
				answered := make(chan answer, 1)
				emit := func(ctx context.Context) {
					runs, err := eng.Emit(ctx, &engine.Event{Type: "deploy.done", ID: tc.id})
					answered <- answer{runs, err}
				}
				if tc.gone == "before" {
					cancel()
					go emit(ctx)
				} else {
					go emit(ctx)
					<-held
					synctest.Wait() // Emit waits for the loop's decision or the start
					cancel()        // the client goes away
					synctest.Wait() // Emit answers now, if it does not wait for them
					close(unhold)
				}
				got := <-answered
				synctest.Wait() // the run, if one started, ended
				runs, err := db.ListRuns(bg, engine.RunFilter{Hook: "a", Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				stored, err := db.ListEvents(bg, "deploy.done", 10)
				if err != nil {
					t.Fatal(err)
				}
				if tc.gone == "before" {
					if !errors.Is(got.err, context.Canceled) || len(got.runs) != 0 || len(runs) != 0 || len(stored) != 0 {
						t.Fatalf("Emit of a client gone before: %d runs, %v; %d runs and %d events stored; want context canceled, nothing stored",
							len(got.runs), got.err, len(runs), len(stored))
					}
					return
				}
				if got.err != nil || len(got.runs) != 1 {
					t.Errorf("Emit after its client went away: %d runs, %v; want a's run", len(got.runs), got.err)
					// The client retries what failed.
					go emit(bg)
					<-answered
					synctest.Wait()
					if runs, err = db.ListRuns(bg, engine.RunFilter{Hook: "a", Limit: 10}); err != nil {
						t.Fatal(err)
					}
					if stored, err = db.ListEvents(bg, "deploy.done", 10); err != nil {
						t.Fatal(err)
					}
				}
				if len(runs) != 1 || runs[0].Status != engine.StatusCompleted || len(stored) != 1 {
					t.Errorf("after the client's emits: runs %v, %d events stored; want the event stored once and a's run completed once",
						statuses(runs), len(stored))
				}
				if len(got.runs) == 1 && len(runs) == 1 && got.runs[0].ID != runs[0].ID {
					t.Errorf("Emit answered run %s; the run stored is %s", got.runs[0].ID, runs[0].ID)
				}
			})
		})
	}
}

// TestEmitSeveralOutlivesClient: an event without an ID that several
// hooks take is stored pending, then dispatched; a client that goes away
// then (its ctx canceled while a start is recorded) does not make Emit
// fail with the event left pending for the next start — a client that
// emitted it again would have it twice. Emit answers once it is
// dispatched and marked. Before, it failed with "context canceled" and
// the event stayed pending.
func TestEmitSeveralOutlivesClient(t *testing.T) {
	t.Parallel()
	db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := &heldHookStart{DB: db, hook: "b", held: make(chan struct{}, 1), unhold: make(chan struct{})}
	hook := func(name string) *engine.Hook {
		h := withSteps(newHook(name), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
			return &engine.StepResult{Output: "ran"}, nil
		}))
		h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*"}
		return h
	}
	eng := startEventEngine(t, st, []*engine.Hook{hook("a"), hook("b")})
	defer eng.Stop()

	ctx, cancel := context.WithCancel(context.Background())
	type answer struct {
		runs []*engine.Run
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		runs, err := eng.Emit(ctx, &engine.Event{Type: "deploy.done"})
		answered <- answer{runs, err}
	}()
	<-st.held // stored pending, dispatched: b's start is being recorded
	cancel()  // the client goes away
	close(st.unhold)
	got := <-answered
	if got.err != nil || len(got.runs) != 2 {
		t.Errorf("Emit after its client went away: %d runs, %v; want a's and b's runs", len(got.runs), got.err)
	}
	if p, err := db.PendingEvents(context.Background(), 10); err != nil || len(p) != 0 {
		t.Errorf("pending events after Emit: %v %v; want none (dispatched and marked)", p, err)
	}
}
