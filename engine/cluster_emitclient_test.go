package engine_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
	"github.com/hookd/hookd/triggers"
)

// heldRelease is a scheduler whose releases of a run of hook wait until
// unhold is closed, held reporting that one does.
type heldRelease struct {
	*postgres.Member
	hook   string
	held   chan struct{}
	unhold chan struct{}
}

func (m *heldRelease) Release(ctx context.Context, r *engine.Run, markSeq int64) error {
	if r.Hook == m.hook {
		m.held <- struct{}{}
		<-m.unhold
	}
	return m.Member.Release(ctx, r, markSeq)
}

// TestClusterEmitOutlivesClient: on a cluster's scheduler, an event
// without an ID is stored pending under an ID Emit made, then
// dispatched; a client that goes away once it is stored (while the loop
// decides, or while the run's release is recorded) is still answered
// with the run, and one that retries on an error has it run twice. Emit
// carries the dispatch through and answers with it; a client that went
// away before Emit gets its ctx's error, and nothing is stored. Before,
// Emit failed with "context canceled" while the event went on to be
// dispatched: the client published it again, under a new ID, and it ran
// twice (and an Emit that gave up while the loop decided left the
// scheduler's sweep free to dispatch the event again before its run's
// release was stored).
func TestClusterEmitOutlivesClient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		gone string // when the client goes away: "before", "deciding", "starting"
	}{
		{"before Emit", "before"},
		{"while the loop decides", "deciding"},
		{"while the release is recorded", "starting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bg := context.Background()
			url, db := newClusterDB(bg, t)
			lockNode(bg, t, url, "node-a")
			cl := &heldRelease{Member: db.Member("node-a", 4, 2*time.Second), hook: "none", held: make(chan struct{}, 1), unhold: make(chan struct{})}
			events := &heldDecision{EventIndex: triggers.NewEventIndex(), typ: "none", held: make(chan struct{}, 1), unhold: make(chan struct{})}
			held, unhold := cl.held, cl.unhold
			switch tc.gone {
			case "deciding":
				events.typ = "job.done"
				held, unhold = events.held, events.unhold
			case "starting":
				cl.hook = "a"
			}
			h := withSteps(newHook("a"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
				return &engine.StepResult{Output: "ran"}, nil
			}))
			h.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "job.*"}
			eng, err := engine.New(engine.Config{Store: db, Cluster: cl, Events: events, MaxConcurrent: 8,
				Grace: 50 * time.Millisecond, Tick: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, []*engine.Hook{h})
			if err != nil {
				t.Fatal(err)
			}
			if err := eng.Start(bg); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(eng.Stop)
			poll(t, "node A leads", func() bool { self, _ := eng.Scheduler(); return self })

			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			type answer struct {
				runs []*engine.Run
				err  error
			}
			answered := make(chan answer, 1)
			emit := func(ctx context.Context) {
				runs, err := eng.Emit(ctx, &engine.Event{Type: "job.done"})
				answered <- answer{runs, err}
			}
			if tc.gone == "before" {
				cancel()
				go emit(ctx)
			} else {
				go emit(ctx)
				<-held   // stored pending; the loop decides, or the release is recorded
				cancel() // the client goes away
				close(unhold)
			}
			got := <-answered
			var (
				runs   []*engine.Run
				stored []*engine.Event
			)
			// settled reads a's runs and the events stored once none is
			// pending and every run of a is final.
			settled := func() bool {
				if p, err := pendingOthers(bg, db); err != nil || len(p) != 0 {
					return false
				}
				if runs, err = db.ListRuns(bg, engine.RunFilter{Hook: "a", Limit: 10}); err != nil {
					return false
				}
				for _, r := range runs {
					if !r.Status.Final() {
						return false
					}
				}
				stored, err = db.ListEvents(bg, "job.done", 10)
				return err == nil
			}
			if tc.gone == "before" {
				poll(t, "nothing pending", settled)
				if !errors.Is(got.err, context.Canceled) || len(got.runs) != 0 || len(runs) != 0 || len(stored) != 0 {
					t.Fatalf("Emit of a client gone before: %d runs, %v; %d runs and %d events stored; want context canceled, nothing stored",
						len(got.runs), got.err, len(runs), len(stored))
				}
				return
			}
			poll(t, "the event dispatched and a's runs final", func() bool { return settled() && len(runs) > 0 })
			if got.err != nil || len(got.runs) != 1 {
				t.Errorf("Emit after its client went away: %d runs, %v; want a's run", len(got.runs), got.err)
				// The client retries what failed.
				go emit(bg)
				<-answered
				poll(t, "the event emitted again dispatched and a's runs final", func() bool { return settled() && len(stored) > 1 })
			}
			if len(runs) != 1 || runs[0].Status != engine.StatusCompleted || len(stored) != 1 {
				t.Errorf("after the client's emits: runs %v, %d events stored; want the event stored once and a's run completed once",
					statuses(runs), len(stored))
			}
			if len(got.runs) == 1 && len(runs) == 1 && got.runs[0].ID != runs[0].ID {
				t.Errorf("Emit answered run %s; the run stored is %s", got.runs[0].ID, runs[0].ID)
			}
		})
	}
}
