package engine_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
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

// TestStalledSQLiteSlotsOnRecord holds a real SQLite file with another
// connection (BEGIN EXCLUSIVE) while a hook fires every second, as
// another process holding the database does. Every slot must end on
// record: the slots that could not start are recorded in one missed
// record with the store's error once the file is released, and the skip
// records made meanwhile are written then, not dropped. (Before, the
// loop wrote its records itself: each waited out the busy timeout and
// was dropped, the slots whose start failed left no record, and the
// missed record that came blamed a suspend.)
func TestStalledSQLiteSlotsOnRecord(t *testing.T) {
	t.Parallel() // it waits out SQLite's busy timeout, real seconds, several times
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h := newHarness(t, []*engine.Hook{every(newHook("tick"), time.Second), newHook("m")})
		defer h.stop()
		h.advance(2500 * time.Millisecond) // tick runs for 00:00:01 and 00:00:02
		if err := h.eng.SetPaused(ctx, "m", true); err != nil {
			t.Fatal(err)
		}

		locker, err := sql.Open("sqlite3", "file:"+h.dbPath)
		if err != nil {
			t.Fatal(err)
		}
		defer locker.Close()
		conn, err := locker.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
			t.Fatal(err)
		}
		h.advance(time.Second) // the slot of 00:00:03 cannot claim its start
		st, ok := h.eng.StoreStalled()
		if !ok || !strings.Contains(st.Cause, "database is locked") {
			t.Fatalf("store stalled: %+v %v, want stalled: database is locked", st, ok)
		}

		// Triggers made while the file is held are answered at once and
		// their records wait.
		if _, err := h.fire("m", engine.FireOptions{}); gateOf(err) != engine.GatePaused {
			t.Fatalf("fire paused m: %v, want refused paused", err)
		}
		if _, err := h.fire("tick", engine.FireOptions{}); gateOf(err) != engine.GateStoreStalled {
			t.Fatalf("fire tick: %v, want refused store_stalled", err)
		}
		h.advance(time.Second) // the slot of 00:00:04 comes and goes
		sum, err := h.eng.Summary(ctx)
		if err != nil || sum.Store == nil || sum.Store.Waiting != 2 || sum.Store.Slots == 0 {
			t.Fatalf("status: %+v %v, want the stall with 2 records waiting and slots missed", sum.Store, err)
		}

		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		locker.Close()
		h.advance(time.Minute)
		if st, ok := h.eng.StoreStalled(); ok {
			t.Fatalf("store still stalled after the file was released: %+v", st)
		}

		checkSlotsOnRecord(t, h.runs("tick"), "database is locked")

		// The refusals made meanwhile are on record.
		if m := h.runs("m"); len(m) != 1 || m[0].Gate != engine.GatePaused {
			t.Errorf("m: %v, want its paused record", statuses(m))
		}
		var stalled int
		for _, r := range h.runs("tick") {
			if r.Gate == engine.GateStoreStalled {
				stalled++
			}
		}
		if stalled != 1 {
			t.Errorf("tick: %d store_stalled records, want the refused fire's", stalled)
		}
	})
}

// checkSlotsOnRecord checks that every slot of an every-second hook from
// 00:00:01 to its latest run has exactly one record: a run, or its part
// in the one missed record, which begins with 00:00:03 (the first slot
// after the store failed) and names the store's error, cause.
func checkSlotsOnRecord(t *testing.T, runs []*engine.Run, cause string) {
	t.Helper()
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	slots := map[time.Time]string{}
	var missed []*engine.Run
	for _, r := range runs {
		switch {
		case r.Gate == engine.GateMissed:
			missed = append(missed, r)
			first, n := slotsOf(t, r.Reason)
			for i := range n {
				slots[first.Add(time.Duration(i)*time.Second)] += "missed "
			}
			if !strings.Contains(r.Reason, "not fired: the store could not record their start (") || !strings.Contains(r.Reason, cause) {
				t.Errorf("missed record: %q, want the store's error %q", r.Reason, cause)
			}
		case !r.Slot.IsZero():
			slots[r.Slot] += string(r.Status) + " "
		case r.Gate != engine.GateStoreStalled:
			t.Errorf("unexpected record %s %s %q", r.Status, r.Gate, r.Reason)
		}
	}
	if len(missed) != 1 {
		t.Fatalf("%d missed records, want 1", len(missed))
	}
	if !strings.Contains(missed[0].Reason, "from 2000-01-01T00:00:03Z") {
		t.Errorf("missed record: %q, want the gap to begin with the first slot not started", missed[0].Reason)
	}
	last := runs[len(runs)-1].Slot
	for at := t0.Add(time.Second); !at.After(last); at = at.Add(time.Second) {
		if got := slots[at]; strings.Count(got, " ") != 1 {
			t.Errorf("slot %s: records %q, want exactly one", at.Format(time.TimeOnly), got)
		}
	}
	if got := slots[last]; got != "completed " {
		t.Errorf("latest slot %s: %q, want completed once the store answers", last.Format(time.TimeOnly), got)
	}
}

// fullDisk is a store whose writes fail as SQLite's do on a full disk
// while full is set.
type fullDisk struct {
	*store.DB
	full atomic.Bool
}

var errDiskFull = errors.New("database or disk is full")

func (d *fullDisk) check() error {
	if d.full.Load() {
		return errDiskFull
	}
	return nil
}

func (d *fullDisk) InsertRun(ctx context.Context, r *engine.Run) error {
	if err := d.check(); err != nil {
		return fmt.Errorf("insert run %s: %w", r.ID, err)
	}
	return d.DB.InsertRun(ctx, r)
}

func (d *fullDisk) StartRun(ctx context.Context, r *engine.Run) error {
	if err := d.check(); err != nil {
		return fmt.Errorf("start run %s: %w", r.ID, err)
	}
	return d.DB.StartRun(ctx, r)
}

func (d *fullDisk) FinishRun(ctx context.Context, r *engine.Run) error {
	if err := d.check(); err != nil {
		return fmt.Errorf("finish run %s: %w", r.ID, err)
	}
	return d.DB.FinishRun(ctx, r)
}

func (d *fullDisk) AppendEventsLater(ctx context.Context, evs []*engine.Event) error {
	if err := d.check(); err != nil {
		return fmt.Errorf("append %d events: %w", len(evs), err)
	}
	return d.DB.AppendEventsLater(ctx, evs)
}

// TestFullDiskSlotsOnRecord: while the disk is full (an injected write
// failure) a hook firing every second gets no run, and once space is
// back one missed record for the gap names the error. (Before, those
// slots had no record and no missed record when space came back.)
func TestFullDiskSlotsOnRecord(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		disk := &fullDisk{DB: db}
		eng, err := engine.New(engine.Config{Store: disk, Events: triggers.NewEventIndex(), Clock: &clocktest.Clock{}, Tick: time.Second,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, []*engine.Hook{every(newHook("tick"), time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if err := eng.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer eng.Stop()
		time.Sleep(2500 * time.Millisecond) // tick runs for 00:00:01 and 00:00:02
		synctest.Wait()
		disk.full.Store(true)
		time.Sleep(45 * time.Second)
		synctest.Wait()
		st, ok := eng.StoreStalled()
		if !ok || !strings.Contains(st.Cause, "disk is full") || st.Slots != 45 {
			t.Fatalf("store stalled: %+v %v, want stalled: disk is full, 45 slots missed", st, ok)
		}
		disk.full.Store(false)
		time.Sleep(time.Minute)
		synctest.Wait()
		if st, ok := eng.StoreStalled(); ok {
			t.Fatalf("store still stalled with space back: %+v", st)
		}
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "tick", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		slices.Reverse(runs)
		checkSlotsOnRecord(t, runs, "start run")
		checkSlotsOnRecord(t, runs, "database or disk is full")
	})
}

// slotsOf reads the first slot and the count from a missed record's
// reason: "missed: N slot(s) from T to T …".
func slotsOf(t *testing.T, reason string) (time.Time, int) {
	t.Helper()
	var n int
	var from string
	if _, err := fmt.Sscanf(reason, "missed: %d slot(s) from %s", &n, &from); err != nil {
		t.Fatalf("missed record %q: %v", reason, err)
	}
	first, err := time.Parse(time.RFC3339, from)
	if err != nil {
		t.Fatalf("missed record %q: %v", reason, err)
	}
	return first, n
}

// TestFullDiskRunResultKept: a run that ends while the disk is full (an
// injected write failure) keeps its result: the final record waits for
// the store and is written once space is back. (Before, it was logged
// and lost: the run stayed running in the store, and became interrupted
// at the next start.)
func TestFullDiskRunResultKept(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		disk := &fullDisk{DB: db}
		blk := newBlock()
		eng, err := engine.New(engine.Config{Store: disk, Events: triggers.NewEventIndex(), Clock: &clocktest.Clock{}, Tick: time.Second,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, []*engine.Hook{withSteps(newHook("slow"), blk)})
		if err != nil {
			t.Fatal(err)
		}
		if err := eng.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer eng.Stop()
		run, err := eng.Fire(ctx, "slow", engine.FireOptions{})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		disk.full.Store(true)
		close(blk.release)
		synctest.Wait()
		if st, ok := eng.StoreStalled(); !ok || !strings.Contains(st.Cause, "disk is full") || st.Waiting != 1 {
			t.Fatalf("store stalled: %+v %v, want stalled: disk is full, the run's result waiting", st, ok)
		}
		if got, err := db.GetRun(ctx, run.ID); err != nil || got.Status != engine.StatusRunning {
			t.Fatalf("run while the disk is full: %+v %v, want still running on record", got, err)
		}
		disk.full.Store(false)
		time.Sleep(time.Minute)
		synctest.Wait()
		if got, err := db.GetRun(ctx, run.ID); err != nil || got.Status != engine.StatusCompleted {
			t.Fatalf("run once space is back: %+v %v, want completed", got, err)
		}
		if st, ok := eng.StoreStalled(); ok {
			t.Fatalf("store still stalled with space back: %+v", st)
		}
	})
}
