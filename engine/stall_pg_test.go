package engine_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/triggers"
	"github.com/jackc/pgx/v5"
)

// TestStalledPostgresLoopAnswers stalls a real PostgreSQL: another
// connection holds the runs table (LOCK TABLE ... ACCESS EXCLUSIVE in an
// open transaction) while a hook fires every second. The engine's loop
// must go on answering fire, emit and status (it wrote its records with
// context.Background() and froze with the first: a fire never returned),
// say "store stalled since … (cause)", refuse what it cannot record, and
// once the lock is released record the slots it did not fire in one
// missed record with the cause, and the refusal it kept waiting.
func TestStalledPostgresLoopAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	tick := every(newHook("tick"), time.Second)
	deploy := newHook("deploy")
	deploy.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "deploy.*"}
	eng, err := engine.New(engine.Config{Store: db, StoreTimeout: time.Second, Tick: 100 * time.Millisecond, Events: triggers.NewEventIndex(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, []*engine.Hook{tick, newHook("manual"), deploy})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer eng.Stop()
	poll(t, "tick runs", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "tick", Status: engine.StatusCompleted})
		return err == nil && len(runs) > 0
	})

	locker, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "LOCK TABLE runs IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	locked := time.Now()
	poll(t, "the engine waits for the lock", func() bool {
		var n int
		err := locker.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&n)
		return err == nil && n > 0
	})

	// The loop answers while the lock is held. The bound is thirty
	// times the store's timeout; without one the loop waited forever.
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// A fire the loop takes before it knows of the stall starts a run
	// whose start cannot be recorded. Fire returns once that start
	// failed, but the run leaves the in-flight set only when the loop
	// hears of its end, a message later: until then the next fire is
	// refused in_flight, the gate before store_stalled. Wait for it.
	first, err := eng.Fire(qctx, "manual", engine.FireOptions{})
	if err != nil {
		if _, ok := errors.AsType[*engine.GateError](err); !ok {
			t.Fatalf("fire while the store is stalled: %v", err)
		}
	} else {
		r, err := eng.Wait(qctx, first.ID)
		if err != nil {
			t.Fatalf("wait for the run fired as the store stalled: %v", err)
		}
		if r.Status != engine.StatusFailed || !strings.Contains(r.Error, "record run start") {
			t.Fatalf("run fired as the store stalled: %s (%s), want failed: its start could not be recorded", r.Status, r.Error)
		}
	}
	if _, err := eng.Hooks(qctx); err != nil {
		t.Fatalf("hooks while the store is stalled: %v", err)
	}

	poll(t, "the engine says the store is stalled", func() bool { _, ok := eng.StoreStalled(); return ok })
	sum, err := eng.Summary(qctx)
	if err != nil {
		t.Fatalf("status while the store is stalled: %v", err)
	}
	if sum.Store == nil || sum.Store.Since.Before(locked.Add(-time.Second)) || !strings.Contains(sum.Store.Cause, "no answer within 1s") ||
		!strings.HasPrefix(sum.Store.String(), "store stalled since ") {
		t.Fatalf("status: store %+v, want stalled since the lock with its cause", sum.Store)
	}
	_, err = eng.Fire(qctx, "manual", engine.FireOptions{})
	g, ok := errors.AsType[*engine.GateError](err)
	if !ok || g.Gate != engine.GateStoreStalled || !strings.Contains(err.Error(), "store stalled since") {
		t.Fatalf("fire while stalled: %v, want refused store_stalled", err)
	}

	em, err := eng.EmitReport(qctx, &engine.Event{Type: "deploy.finished"})
	if err != nil || len(em.Refused) != 1 || em.Refused[0].Gate.Gate != engine.GateStoreStalled {
		t.Fatalf("emit while stalled: %+v %v, want deploy refused store_stalled", em, err)
	}

	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var missed *engine.Run
	poll(t, "one missed record of tick", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "tick", Status: engine.StatusSkipped})
		if err != nil {
			return false
		}
		for _, r := range runs {
			if r.Gate == engine.GateMissed {
				if missed != nil && missed.ID != r.ID {
					t.Fatalf("two missed records: %s and %s", missed.Reason, r.Reason)
				}
				missed = r
			}
		}
		return missed != nil
	})
	if !strings.Contains(missed.Reason, "not fired: the store could not record their start (no answer within 1s") {
		t.Errorf("missed record: %q, want the store's cause", missed.Reason)
	}
	t.Logf("missed record: %s", missed.Reason)
	poll(t, "the stall ends", func() bool { _, ok := eng.StoreStalled(); return !ok })
	poll(t, "the refused fire is recorded", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "manual", Status: engine.StatusSkipped})
		return err == nil && len(runs) > 0 && runs[0].Gate == engine.GateStoreStalled
	})
	poll(t, "the refused event is recorded", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "deploy", Status: engine.StatusSkipped})
		return err == nil && len(runs) == 1 && runs[0].Gate == engine.GateStoreStalled && runs[0].EventType == "deploy.finished"
	})
	poll(t, "tick runs again", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "tick", Limit: 1})
		return err == nil && len(runs) > 0 && runs[0].Status == engine.StatusCompleted && runs[0].Slot.After(missed.Slot)
	})
}
