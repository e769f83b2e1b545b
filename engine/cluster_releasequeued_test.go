package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
)

// refusedReleaseOf is a scheduler whose first release of a run of hook
// fails, as a database that drops the connection mid-commit does; it
// tells refused once it refused.
type refusedReleaseOf struct {
	*postgres.Member
	hook    string
	once    sync.Once
	refused chan string // the id of the run whose release failed
}

func (m *refusedReleaseOf) Release(ctx context.Context, r *engine.Run, markSeq int64) error {
	var err error
	if r.Hook == m.hook {
		m.once.Do(func() {
			err = errors.New("release run " + r.ID + ": connection reset by peer")
			m.refused <- r.ID
		})
	}
	if err != nil {
		return err
	}
	return m.Member.Release(ctx, r, markSeq)
}

// endedBeforeRelease is a scheduler that, at its first release of a run
// of hook, finds the run's record final already: it is ended (cancelled)
// just before the release, which then fails as no longer queued.
type endedBeforeRelease struct {
	*postgres.Member
	db      *postgres.DB
	hook    string
	once    sync.Once
	refused chan string
}

func (m *endedBeforeRelease) Release(ctx context.Context, r *engine.Run, markSeq int64) error {
	if r.Hook == m.hook {
		var err error
		m.once.Do(func() {
			ended := *r
			ended.Status, ended.Reason, ended.FinishedAt = engine.StatusCancelled, "ended elsewhere", time.Now()
			if err = m.db.FinishRun(ctx, &ended); err == nil {
				err = m.Member.Release(ctx, r, markSeq)
			}
			m.refused <- r.ID
		})
		if err != nil {
			return err
		}
	}
	return m.Member.Release(ctx, r, markSeq)
}

// queuedBehindBlock starts node-a as the scheduler on cl with
// MaxConcurrent 1 and three hooks: block, whose run for b1 holds the one
// place, q, of job.* events, whose runs record the id in their event's
// payload on ran, and off, disabled (written). It emits e1, waits until q's run for it is
// queued, then lets block's run end: q's run is released, and the
// returned channel of cl tells its id.
func queuedBehindBlock(ctx context.Context, t *testing.T, url string, db *postgres.DB, cl engine.Cluster, refused <-chan string, ran func(id string)) (*engine.Engine, string) {
	t.Helper()
	unblock := make(chan struct{})
	block := withSteps(newHook("block"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		select {
		case <-unblock:
		case <-ctx.Done():
		}
		return &engine.StepResult{Output: "ran"}, nil
	}))
	block.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "block.*"}
	q := withSteps(newHook("q"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		id, _ := env.Scope.Event["id"].(string)
		ran(id)
		return &engine.StepResult{Output: "ran"}, nil
	}))
	q.Trigger = engine.Trigger{Kind: engine.TriggerEvent, Event: "job.*"}
	off := newHook("off")
	off.Enabled = false
	lockNode(ctx, t, url, "node-a")
	a := startClusterNode(ctx, t, engine.Config{Store: db, Cluster: cl, MaxConcurrent: 1, StoreTimeout: time.Minute},
		[]*engine.Hook{block, q, off})
	poll(t, "node A leads", func() bool { self, _ := a.Scheduler(); return self })

	// block takes the one place; q's run for e1 waits queued.
	if _, err := a.Emit(ctx, &engine.Event{ID: "b1", Type: "block.x"}); err != nil {
		t.Fatal(err)
	}
	poll(t, "block's run executing", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "block", Limit: 10})
		return err == nil && len(runs) == 1 && runs[0].Status == engine.StatusRunning
	})
	if _, err := a.Emit(ctx, &engine.Event{ID: "e1", Type: "job.x", Data: map[string]any{"id": "e1"}}); err != nil {
		t.Fatal(err)
	}
	poll(t, "q's run for e1 queued", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "q", Limit: 10})
		return err == nil && len(runs) == 1 && runs[0].Status == engine.StatusQueued
	})
	// Its turn comes.
	close(unblock)
	select {
	case id := <-refused:
		return a, id
	case <-time.After(time.Minute):
		t.Fatal("q's queued run was not released within a minute of its turn")
	}
	return nil, ""
}

// TestClusterFailedReleaseOfQueuedRunEndsItsRecord: a queued run whose
// release the database refuses is not executed, and its record says so
// at once: failed, with the store's error, no longer queued (a next
// scheduler would take a queued record for a run that waits, and run
// it), as the single daemon's queued run whose start cannot be recorded
// ends, and as a queued run not released because its queued record was
// not stored in time does; the hook then runs for its next trigger. A
// record the release found no longer queued is left as it is. Before,
// the record stayed queued until the next takeover, while this scheduler
// had given the run up.
func TestClusterFailedReleaseOfQueuedRunEndsItsRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	var (
		mu  sync.Mutex
		ran []string // the ids of the events q's runs executed for
	)
	cl := &refusedReleaseOf{Member: db.Member("node-a", 4, 2*time.Second), hook: "q", refused: make(chan string, 1)}
	a, id := queuedBehindBlock(ctx, t, url, db, cl, cl.refused, func(id string) {
		mu.Lock()
		ran = append(ran, id)
		mu.Unlock()
	})

	poll(t, "q's run for e1 recorded failed, no longer queued", func() bool {
		r, err := db.GetRun(ctx, id)
		return err == nil && r.Status != engine.StatusQueued
	})
	if r, err := db.GetRun(ctx, id); err != nil || r.Status != engine.StatusFailed || !strings.Contains(r.Error, "connection reset by peer") {
		t.Fatalf("q's run for e1: %+v %v; want failed with the store's error", r, err)
	}
	if waiting, err := cl.Waiting(ctx); err != nil || len(waiting) != 0 {
		t.Errorf("runs a next scheduler would take as waiting: %d %v, want none", len(waiting), err)
	}

	// The hook is not held: its next trigger runs.
	if _, err := a.Emit(ctx, &engine.Event{ID: "e2", Type: "job.y", Data: map[string]any{"id": "e2"}}); err != nil {
		t.Fatal(err)
	}
	poll(t, "q's run for e2 completed", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "q", Limit: 10})
		return err == nil && len(runs) == 2 && runs[0].Status == engine.StatusCompleted
	})
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 1 || ran[0] != "e2" {
		t.Errorf("q's runs executed for %v, want [e2]", ran)
	}
}

// TestClusterFailedReleaseOfEndedRunKeepsItsRecord: a queued run whose
// release fails because its record is final already (no longer queued)
// is not executed, and its record is left as it was, not overwritten
// failed; the hook then runs for its next trigger.
func TestClusterFailedReleaseOfEndedRunKeepsItsRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	var ran atomic.Int32
	cl := &endedBeforeRelease{Member: db.Member("node-a", 4, 2*time.Second), db: db, hook: "q", refused: make(chan string, 1)}
	a, id := queuedBehindBlock(ctx, t, url, db, cl, cl.refused, func(string) { ran.Add(1) })

	// Whatever the failed release had written was handed to the
	// scheduler's writer before its hook was no longer in flight; a
	// record the loop hands it after (a fire of off, refused) is written
	// after it.
	poll(t, "q no longer in flight", func() bool {
		hooks, err := a.Hooks(ctx)
		if err != nil {
			return false
		}
		for _, h := range hooks {
			if h.Name == "q" {
				return h.InFlight == ""
			}
		}
		return false
	})
	if _, err := a.Fire(ctx, "off", engine.FireOptions{}); gateOf(err) != engine.GateDisabled {
		t.Fatalf("fire off: %v, want refused disabled", err)
	}
	poll(t, "off's refusal recorded", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "off", Limit: 10})
		return err == nil && len(runs) == 1
	})
	if r, err := db.GetRun(ctx, id); err != nil || r.Status != engine.StatusCancelled || r.Reason != "ended elsewhere" {
		t.Errorf("q's run for e1: %+v %v; want its record as it was (cancelled, ended elsewhere)", r, err)
	}

	// The hook runs for its next trigger.
	if _, err := a.Emit(ctx, &engine.Event{ID: "e2", Type: "job.y", Data: map[string]any{"id": "e2"}}); err != nil {
		t.Fatal(err)
	}
	poll(t, "q's run for e2 completed", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "q", Limit: 10})
		return err == nil && len(runs) == 2 && runs[0].Status == engine.StatusCompleted
	})
	if n := ran.Load(); n != 1 {
		t.Errorf("q's runs executed %d times, want 1 (e2's)", n)
	}
}
