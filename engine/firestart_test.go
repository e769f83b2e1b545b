package engine_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/hookd/hookd/engine"
)

// TestFireOutlivesClient: a fire the loop has (waiting for the loop,
// busy deciding something else, or while the run's start is recorded)
// goes ahead whatever becomes of its client's ctx, so Fire answers with
// the run; a client that went away before Fire gets its ctx's error, and
// nothing runs. Before, Fire answered "context canceled" while the run
// went ahead: the client (hookd fire, POST fire) fired it again, and it
// ran twice.
func TestFireOutlivesClient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		gone string // when the client goes away: "before", "deciding", "starting"
	}{
		{"before Fire", "before"},
		{"while the loop decides", "deciding"},
		{"while the start is recorded", "starting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				bg := context.Background()
				// With "deciding" the loop is busy deciding an event
				// (hold.now) when the fire reaches it.
				g := newGoneClient(t, tc.gone, "hold.now", engine.Trigger{})
				eng, db, held, unhold := g.eng, g.db, g.held, g.unhold

				ctx, cancel := context.WithCancel(bg)
				defer cancel()
				type answer struct {
					run *engine.Run
					err error
				}
				answered := make(chan answer, 1)
				fire := func(ctx context.Context) {
					run, err := eng.Fire(ctx, "a", engine.FireOptions{})
					answered <- answer{run, err}
				}
				switch tc.gone {
				case "before":
					cancel()
					go fire(ctx)
				case "deciding":
					go eng.Emit(bg, &engine.Event{Type: "hold.now"})
					<-held
					go fire(ctx)
				default:
					go fire(ctx)
					<-held
				}
				if tc.gone != "before" {
					synctest.Wait() // Fire waits for the loop's decision or the start
					cancel()        // the client goes away
					synctest.Wait() // Fire answers now, if it does not wait for them
					close(unhold)
				}
				got := <-answered
				synctest.Wait() // the run, if one started, ended
				runs, err := db.ListRuns(bg, engine.RunFilter{Hook: "a", Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				if tc.gone == "before" {
					if !errors.Is(got.err, context.Canceled) || got.run != nil || len(runs) != 0 {
						t.Fatalf("Fire of a client gone before: run %v, %v; runs %v; want context canceled, nothing run",
							got.run != nil, got.err, statuses(runs))
					}
					return
				}
				if got.err != nil || got.run == nil {
					t.Errorf("Fire after its client went away: run %v, %v; want a's run", got.run != nil, got.err)
					// The client retries what failed.
					go fire(bg)
					<-answered
					synctest.Wait()
					if runs, err = db.ListRuns(bg, engine.RunFilter{Hook: "a", Limit: 10}); err != nil {
						t.Fatal(err)
					}
				}
				if len(runs) != 1 || runs[0].Status != engine.StatusCompleted {
					t.Errorf("after the client's fires: runs %v; want a's run completed once", statuses(runs))
				}
				if got.run != nil && len(runs) == 1 && got.run.ID != runs[0].ID {
					t.Errorf("Fire answered run %s; the run stored is %s", got.run.ID, runs[0].ID)
				}
			})
		})
	}
}
