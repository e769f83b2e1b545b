package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
	"github.com/jackc/pgx/v5"
)

// deposedBeforeMissed is a scheduler's PostgreSQL store that stalls
// (its records fail, as a store that does not answer) while stall is set,
// and whose node loses the lease to another just before it writes the
// record of the slots it did not fire meanwhile.
type deposedBeforeMissed struct {
	*postgres.DB
	stall   atomic.Bool
	depose  func(context.Context) error
	deposed atomic.Bool
}

var errStalled = errors.New("the store does not answer")

func (s *deposedBeforeMissed) InsertRun(ctx context.Context, r *engine.Run) error {
	if s.stall.Load() {
		return fmt.Errorf("insert run %s: %w", r.ID, errStalled)
	}
	if r.Gate == engine.GateMissed && strings.Contains(r.Reason, "the store could not record their start") {
		s.deposed.Store(true)
		if err := s.depose(ctx); err != nil {
			return err
		}
	}
	return s.DB.InsertRun(ctx, r)
}

// TestClusterMissedRecordFenced: the record of the slots a scheduler
// skipped while its store was stalled is fenced by the lease, as its
// other records are: written after another node took the lease over, it
// is refused, and the node stops scheduling. Before, it landed, a
// deposed scheduler's word on slots its successor decides.
func TestClusterMissedRecordFenced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db := newClusterDB(ctx, t)
	busy := heldHook(t, "busy")
	tick := every(newHook("tick"), 200*time.Millisecond)
	lockNode(ctx, t, url, "node-b") // b's process is alive: a cannot take the lease back
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) }) // after the node stops
	var mu sync.Mutex
	st := &deposedBeforeMissed{DB: db, depose: func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := conn.Exec(ctx, `UPDATE leases SET holder = 'node-b/x', token = token + 1,
			expires_at = now() + interval '1 hour' WHERE name = 'scheduler'`)
		return err
	}}
	a := leadWithHeldRun(ctx, t, url, db, engine.Config{Store: st, StoreTimeout: time.Second}, busy, tick)
	// The store stalls: the refusals of job events (busy is in flight)
	// wait, and tick's slots are skipped meanwhile, for one missed record
	// once the store answers. The end of a run of tick under way when the
	// stall began may end it (a write that succeeds): the next refusal
	// begins it again.
	st.stall.Store(true)
	n := 1
	poll(t, "tick's slots skipped while the store stalls", func() bool {
		stall, stalled := a.StoreStalled()
		if stalled && stall.Slots >= 1 {
			return true
		}
		n++
		go a.Emit(ctx, &engine.Event{ID: fmt.Sprintf("e%d", n), Type: "job.done"}) //nolint:errcheck // refused, recorded once the store answers
		time.Sleep(50 * time.Millisecond)
		return false
	})
	st.stall.Store(false)
	select {
	case err := <-a.Failed():
		if !errors.Is(err, engine.ErrLeaseLost) {
			t.Errorf("node A failed with %v, want ErrLeaseLost", err)
		}
	case <-time.After(time.Minute):
		t.Error("node A still schedules a minute after its missed record was refused for a lost lease")
	}
	if !st.deposed.Load() {
		t.Fatal("node A wrote no record of the slots it skipped while the store stalled")
	}
	runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "tick", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Gate == engine.GateMissed && strings.Contains(r.Reason, "the store could not record their start") {
			t.Errorf("the deposed scheduler's missed record landed: %s %q", r.ID, r.Reason)
		}
	}
}
