package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
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

// downStore is a SQLite store whose writes of records fail while down
// is set, as a database another process holds locked fails them: a run's
// records and its start, the removal of a pending rerun or retry, and the
// event log. (What a start stores in one transaction, RecoverInterrupted
// and Follow, answers: the daemon starts.)
type downStore struct {
	*store.DB
	down   atomic.Bool
	failed atomic.Int32
}

func (s *downStore) refuse(what, id string) error {
	s.failed.Add(1)
	return fmt.Errorf("%s %s: %w", what, id, errors.New("database is locked"))
}

func (s *downStore) InsertRun(ctx context.Context, r *engine.Run) error {
	if s.down.Load() {
		return s.refuse("insert run", r.ID)
	}
	return s.DB.InsertRun(ctx, r)
}

func (s *downStore) FinishRun(ctx context.Context, r *engine.Run) error {
	if s.down.Load() {
		return s.refuse("finish run", r.ID)
	}
	return s.DB.FinishRun(ctx, r)
}

func (s *downStore) StartRun(ctx context.Context, r *engine.Run) error {
	if s.down.Load() {
		return s.refuse("start run", r.ID)
	}
	return s.DB.StartRun(ctx, r)
}

func (s *downStore) AppendEventsLater(ctx context.Context, evs []*engine.Event) error {
	if s.down.Load() {
		return s.refuse("append events", fmt.Sprint(len(evs)))
	}
	return s.DB.AppendEventsLater(ctx, evs)
}

func (s *downStore) DeleteRetry(ctx context.Context, runID string) error {
	if s.down.Load() {
		return s.refuse("delete retry", runID)
	}
	return s.DB.DeleteRetry(ctx, runID)
}

func (s *downStore) DeleteRerun(ctx context.Context, runID string) error {
	if s.down.Load() {
		return s.refuse("delete rerun", runID)
	}
	return s.DB.DeleteRerun(ctx, runID)
}

// TestStoredFollowUpKeptWhileStoreStalled: a stored rerun (on_interrupted:
// rerun) or retry (retry:) that comes due while the store is stalled is
// not refused for good by the store_stalled gate, which says nothing of
// its hook: it stays stored, with its run id free, and starts once, when
// the store takes writes again in the same hookd, or at the next start.
// Before, it was refused, its refusal recorded with its run id and the
// pending rerun or retry removed once the store answered: it never ran.
//
//   - crash follow-ups: a crash left runs of again (on_interrupted:
//     rerun) and retried (retry.on: [interrupted]); hookd starts with the
//     store down (the interrupted record of retried, written at the
//     start, fails and stalls it), the rerun is due at once and the retry
//     after its backoff;
//   - failed run's retry: flaky fails, the store goes down (a refusal's
//     record fails), and flaky's retry comes due;
//   - stopped while stalled: as the first, but hookd stops before the
//     store answers; the next hookd runs them.
//
// Each case ends with one more hookd, which runs nothing again.
func TestStoredFollowUpKeptWhileStoreStalled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		crash   bool // else flaky's failed run is retried
		stopped bool // hookd stops while the store is stalled
	}{
		{name: "crash follow-ups", crash: true},
		{name: "failed run's retry"},
		{name: "stopped while stalled", crash: true, stopped: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				path := filepath.Join(t.TempDir(), "hookd.db")
				var reruns, retries, flaky atomic.Int32
				again := withSteps(newHook("again"), failing(0, &reruns))
				again.OnInterrupted = engine.InterruptedRerun
				off := newHook("off")
				off.Enabled = false
				hooks := []*engine.Hook{again, retryHook("retried", 2, failing(0, &retries)),
					retryHook("flaky", 2, failing(1, &flaky)), off}
				open := func() *store.DB {
					db, err := store.Open(path)
					if err != nil {
						t.Fatal(err)
					}
					return db
				}
				start := func(st engine.Store) *engine.Engine {
					eng, err := engine.New(engine.Config{Store: st, Events: triggers.NewEventIndex(), Clock: &clocktest.Clock{}, Tick: time.Second,
						Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, hooks)
					if err != nil {
						t.Fatal(err)
					}
					if err := eng.Start(ctx); err != nil {
						t.Fatal(err)
					}
					return eng
				}
				executed := func() [3]int32 { return [3]int32{reruns.Load(), retries.Load(), flaky.Load()} }
				var want [3]int32 // executed at the end: again's rerun, retried's retry, flaky's runs
				if tc.crash {
					// What a crash leaves: a run of again and of retried, still running.
					db := open()
					for _, name := range []string{"again", "retried"} {
						if err := db.StartRun(ctx, &engine.Run{ID: engine.NewID(), Hook: name, Trigger: "manual",
							Status: engine.StatusRunning, StartedAt: time.Now()}); err != nil {
							t.Fatal(err)
						}
					}
					db.Close()
					want = [3]int32{1, 1, 0}
				} else {
					want = [3]int32{0, 0, 2}
				}

				db := open()
				st := &downStore{DB: db}
				if tc.crash {
					st.down.Store(true)
				}
				eng := start(st)
				defer func() { eng.Stop() }() // the latest, when the test fails
				if !tc.crash {
					if _, err := eng.Fire(ctx, "flaky", engine.FireOptions{}); err != nil {
						t.Fatal(err)
					}
					synctest.Wait()
					if ps, err := db.PendingRetries(ctx); err != nil || len(ps) != 1 {
						t.Fatalf("pending retries after flaky failed: %+v %v; want its retry", ps, err)
					}
					st.down.Store(true)
					if _, err := eng.Fire(ctx, "off", engine.FireOptions{}); gateOf(err) != engine.GateDisabled {
						t.Fatalf("fire off: %v, want refused disabled", err)
					}
				}
				time.Sleep(time.Minute) // the rerun and the retries come due
				synctest.Wait()
				if _, ok := eng.StoreStalled(); !ok || st.failed.Load() == 0 {
					t.Fatalf("store stalled: %v after %d failed writes; want stalled", ok, st.failed.Load())
				}
				if got, due := executed(), [3]int32{0, 0, max(want[2]-1, 0)}; got != due {
					t.Fatalf("executed while the store was stalled (rerun, retry, flaky): %v, want %v", got, due)
				}
				if tc.stopped {
					eng.Stop()
					db.Close()
					db = open()
					eng = start(db)
				} else {
					st.down.Store(false)
				}
				time.Sleep(time.Hour) // the store takes writes again
				synctest.Wait()
				if _, ok := eng.StoreStalled(); ok {
					t.Fatal("store still stalled")
				}
				if got := executed(); got != want {
					t.Errorf("executed once the store answered (rerun, retry, flaky): %v, want %v", got, want)
				}
				eng.Stop()
				db.Close()

				// One more hookd: nothing runs again.
				db = open()
				defer db.Close()
				eng = start(db)
				time.Sleep(time.Hour)
				synctest.Wait()
				eng.Stop()
				if got := executed(); got != want {
					t.Errorf("executed after one more start (rerun, retry, flaky): %v, want %v", got, want)
				}
				check := func(hook, trigger string) {
					t.Helper()
					runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: hook, Limit: 10})
					if err != nil {
						t.Fatal(err)
					}
					var ran, held int
					var sum []string
					for _, r := range runs {
						sum = append(sum, fmt.Sprintf("%s %s %s", r.Trigger, r.Status, r.Reason))
						switch {
						case r.Trigger != trigger:
						case r.Status == engine.StatusCompleted:
							ran++
						case r.Gate == engine.GateStoreStalled && strings.Contains(r.Reason, "is kept"):
							held++
						case r.Status == engine.StatusSkipped:
							t.Errorf("%s: the %s refused for good: %s", hook, trigger, r.Reason)
						}
					}
					if ran != 1 {
						t.Errorf("runs of %s: %q; want its %s completed once", hook, sum, trigger)
					}
					if !tc.stopped && held == 0 {
						t.Errorf("runs of %s: %q; want a store_stalled record saying its %s is kept", hook, sum, trigger)
					}
				}
				if tc.crash {
					check("again", engine.TriggerRerun)
					check("retried", engine.TriggerRetry)
				} else {
					check("flaky", engine.TriggerRetry)
				}
				if ps, err := db.PendingReruns(ctx); err != nil || len(ps) != 0 {
					t.Errorf("pending reruns at the end: %+v %v", ps, err)
				}
				if ps, err := db.PendingRetries(ctx); err != nil || len(ps) != 0 {
					t.Errorf("pending retries at the end: %+v %v", ps, err)
				}
			})
		})
	}
}
