package engine_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/clock/clocktest"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/triggers"
)

// readCounter is the real store, counting the run records read back.
type readCounter struct {
	*store.DB
	reads atomic.Int64
}

func (c *readCounter) GetRun(ctx context.Context, id string) (*engine.Run, error) {
	c.reads.Add(1)
	return c.DB.GetRun(ctx, id)
}

// TestWaitAfterTheEndAnswersFromTheFinalRecord: a Wait that comes a
// moment after its run ended (GET /v1/runs/ID/wait after the POST that
// started a quick run) is answered with the final record the run's
// waiters were given, without reading it back from the store; a run
// whose record is large is read back, as before, so the engine does not
// keep large records. Both answers are the record as stored.
func TestWaitAfterTheEndAnswersFromTheFinalRecord(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		st := &readCounter{DB: db}
		output := func(s string) engine.Step {
			return funcStep(func(context.Context, *engine.StepEnv) (*engine.StepResult, error) {
				return &engine.StepResult{Output: s, Fields: map[string]any{"lines": []any{s}}}, nil
			})
		}
		hooks := []*engine.Hook{withSteps(newHook("small"), output("ok")), withSteps(newHook("large"), output(strings.Repeat("x", 64<<10)))}
		eng, err := engine.New(engine.Config{Clock: &clocktest.Clock{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Tick: time.Second, Store: st, Events: triggers.NewEventIndex()}, hooks)
		if err != nil {
			t.Fatal(err)
		}
		if err := eng.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer eng.Stop()
		ctx := context.Background()
		for _, c := range []struct {
			hook  string
			reads int64
		}{{"small", 0}, {"large", 1}} {
			run, err := eng.Fire(ctx, c.hook, engine.FireOptions{})
			if err != nil {
				t.Fatal(err)
			}
			synctest.Wait() // the run ended: no longer live
			before := st.reads.Load()
			final, err := eng.Wait(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if n := st.reads.Load() - before; n != c.reads {
				t.Errorf("%s: Wait after the run ended read %d records from the store; want %d", c.hook, n, c.reads)
			}
			stored, err := db.GetRun(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if final.Status != engine.StatusCompleted || final.Steps[0].Output != stored.Steps[0].Output || !final.FinishedAt.Equal(stored.FinishedAt) ||
				!reflect.DeepEqual(final.Steps[0].Fields, stored.Steps[0].Fields) {
				t.Errorf("%s: Wait answered %+v; stored %+v", c.hook, final, stored)
			}
		}
	})
}
