package engine_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookd/hookd/clock/clocktest"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
	"github.com/hookd/hookd/triggers"
)

// slowRecords is a store whose records of one hook take wait to write
// while slow is set: a store that answers, slowly (a lock held by
// another process for most of a second, a disk that syncs slowly).
type slowRecords struct {
	*store.DB
	hook string
	wait time.Duration
	slow atomic.Bool
}

func (s *slowRecords) InsertRun(ctx context.Context, r *engine.Run) error {
	if s.slow.Load() && r.Hook == s.hook {
		select {
		case <-time.After(s.wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.DB.InsertRun(ctx, r)
}

// TestMissedSlotsSayWhy: the record of the slots the loop passed says
// why it did not fire them. When the loop was held waiting for the
// store to take its records (each under the second it waits for one,
// so the store never counts as stalled), it says so; when the wall
// clock moved on without the monotonic clock (a suspend, a clock step),
// it says that. (Before, both said "suspended or the clock jumped":
// untrue of a hookd that was running, waiting for its database.)
func TestMissedSlotsSayWhy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		hold      func(t *testing.T, eng *engine.Engine, st *slowRecords, clk *clocktest.Clock)
		want, not string
	}{
		{
			name: "store",
			// Eight refusals of a paused hook reach the loop at once; it
			// waits 900ms for each record: 7.2s in which tick's slots of
			// 00:00:04 and :06 pass.
			hold: func(t *testing.T, eng *engine.Engine, st *slowRecords, _ *clocktest.Clock) {
				st.slow.Store(true)
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						if _, err := eng.Fire(context.Background(), "m", engine.FireOptions{}); gateOf(err) != engine.GatePaused {
							t.Errorf("fire paused m: %v, want refused paused", err)
						}
					})
				}
				wg.Wait()
				st.slow.Store(false)
			},
			want: "passed while the store was slow or stalled (hookd waited 7.2s for it)",
			not:  "suspended",
		},
		{
			name: "clock",
			// The wall clock steps 7.2s ahead, the monotonic clock not.
			hold: func(_ *testing.T, _ *engine.Engine, _ *slowRecords, clk *clocktest.Clock) {
				clk.Jump(7200 * time.Millisecond)
			},
			want: "passed while hookd was suspended or the clock jumped",
			not:  "store",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				st := &slowRecords{DB: db, hook: "m", wait: 900 * time.Millisecond}
				clk := &clocktest.Clock{}
				eng, err := engine.New(engine.Config{Store: st, Events: triggers.NewEventIndex(), Clock: clk, Tick: time.Second,
					Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, []*engine.Hook{every(newHook("tick"), 2*time.Second), newHook("m")})
				if err != nil {
					t.Fatal(err)
				}
				if err := eng.Start(ctx); err != nil {
					t.Fatal(err)
				}
				defer eng.Stop()
				if err := eng.SetPaused(ctx, "m", true); err != nil {
					t.Fatal(err)
				}
				time.Sleep(2500 * time.Millisecond) // tick runs for 00:00:02
				synctest.Wait()
				c.hold(t, eng, st, clk)
				time.Sleep(5 * time.Second)
				synctest.Wait()

				runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "tick", Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				var missed []string
				for _, r := range runs {
					if r.Gate == engine.GateMissed {
						missed = append(missed, r.Reason)
					}
				}
				if len(missed) != 1 {
					t.Fatalf("tick's missed records: %q, want one", missed)
				}
				if !strings.Contains(missed[0], c.want) || strings.Contains(missed[0], c.not) {
					t.Errorf("missed record: %q\nwant it to say %q", missed[0], c.want)
				}
			})
		})
	}
}
