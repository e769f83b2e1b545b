package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
	"github.com/jackc/pgx/v5"
)

// slotReleases is a scheduler whose failed releases of schedule slots'
// runs are reported on errs, with their slot.
type slotReleases struct {
	*postgres.Member
	errs chan time.Time
}

func (m *slotReleases) Release(ctx context.Context, r *engine.Run, markSeq int64) error {
	err := m.Member.Release(ctx, r, markSeq)
	if err != nil && !r.Slot.IsZero() {
		select {
		case m.errs <- r.Slot:
		default:
		}
	}
	return err
}

// TestClusterReleaseStalledSlotMissed: a schedule slot whose release the
// database does not answer within StoreTimeout (here its transaction
// waits for the hook's state row, which another session holds locked)
// is recorded missed, with the store's error, once the database answers,
// as the single daemon records a slot whose start it could not record.
// Before, the failed release was only logged: the slot was dropped with
// no record.
func TestClusterReleaseStalledSlotMissed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	h := every(withSteps(newHook("tick"), funcStep(func(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
		return &engine.StepResult{Output: "ran"}, nil
	})), 3*time.Second)

	lockNode(ctx, t, url, "node-a")
	cl := &slotReleases{Member: db.Member("node-a", 4, 2*time.Second), errs: make(chan time.Time, 1)}
	startClusterNode(ctx, t, engine.Config{Store: db, Cluster: cl, MaxConcurrent: 8, StoreTimeout: time.Second}, []*engine.Hook{h})
	// A first slot runs: the hook's state row exists.
	poll(t, "a completed run of tick", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "tick", Limit: 10})
		return err == nil && len(runs) > 0 && runs[0].Status == engine.StatusCompleted
	})

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	lock, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx) // before the node stops
	if _, err := lock.Exec(ctx, `SELECT 1 FROM hook_state WHERE hook = 'tick' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	var slot time.Time
	select {
	case slot = <-cl.errs:
		t.Logf("the release of slot %s, stalled", slot.Format(time.RFC3339))
	case <-time.After(time.Minute):
		t.Fatal("no release of a slot of tick failed within a minute while its state row was locked (store timeout 1s)")
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	want := slot.Format(time.RFC3339)
	poll(t, "a missed record of slot "+want, func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "tick", Limit: 100})
		if err != nil {
			return false
		}
		for _, r := range runs {
			if r.Gate == engine.GateMissed && strings.Contains(r.Reason, want) {
				t.Logf("recorded: %s", r.Reason)
				return true
			}
		}
		return false
	})
}
