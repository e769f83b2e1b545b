package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	sqlite3 "github.com/mattn/go-sqlite3"
)

const day = 24 * time.Hour

// defaultRetention is the documented default.
var defaultRetention = engine.Retention{Runs: 30 * day, KeepLast: 100, Events: 7 * day, Skipped: 3 * day}

// record stores a final run of hook with status st that finished at t.
func record(t testing.TB, d *DB, hook string, st engine.Status, at time.Time, mod ...func(*engine.Run)) *engine.Run {
	t.Helper()
	r := &engine.Run{ID: engine.NewID(), Hook: hook, Trigger: "manual", Status: st, QueuedAt: at, FinishedAt: at}
	if st == engine.StatusSkipped || st == engine.StatusDropped {
		r.Gate, r.Reason = engine.GateCooldown, fmt.Sprintf("cooldown: %s left", at.Format(time.StampNano))
	} else {
		r.StartedAt = at
	}
	for _, f := range mod {
		f(r)
	}
	ctx := context.Background()
	if st.Final() && r.StartedAt.IsZero() || st == engine.StatusQueued {
		mustRun(t, d.InsertRun(ctx, r))
		return r
	}
	fin := *r
	r.Status, r.FinishedAt = engine.StatusRunning, time.Time{}
	mustRun(t, d.StartRun(ctx, r))
	if st == engine.StatusRunning {
		return r
	}
	mustRun(t, d.FinishRun(ctx, &fin))
	return &fin
}

func ids(t *testing.T, d *DB, hook string) map[string]bool {
	t.Helper()
	runs, err := d.ListRuns(context.Background(), engine.RunFilter{Hook: hook, Limit: 100000})
	mustRun(t, err)
	out := map[string]bool{}
	for _, r := range runs {
		out[r.ID] = true
	}
	return out
}

// TestPruneKeepsWhatMatters builds a history older than every retention
// and checks what Prune deletes and what it must keep: each hook's newest
// keep_last runs, queued and running runs, pending events, hook state,
// the hook's latest start and slot, its latest fingerprint, a hook's own
// longer retention, and anything younger than its retention.
func TestPruneKeepsWhatMatters(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	now := t0.Add(100 * day)
	old := now.Add(-40 * day)

	// a: 150 old completed runs; the newest 100 stay. (Record times go
	// forward, as the seqs do.)
	var a []*engine.Run
	for i := range 150 {
		a = append(a, record(t, d, "a", engine.StatusCompleted, old.Add(time.Duration(i)*time.Minute)))
	}
	// Old but alive, or young: kept.
	queued := record(t, d, "a", engine.StatusQueued, old)
	running := record(t, d, "q", engine.StatusRunning, old)
	young := record(t, d, "y", engine.StatusFailed, now.Add(-29*day))
	// b keeps its runs 90 days.
	var b []*engine.Run
	for range 3 {
		b = append(b, record(t, d, "b", engine.StatusCompleted, old))
	}
	// c: skip and drop records age out after 3 days.
	oldSkip := record(t, d, "c", engine.StatusSkipped, now.Add(-4*day))
	oldDrop := record(t, d, "c", engine.StatusDropped, now.Add(-4*day))
	// f keeps no run for its count, only what the gates need: the latest
	// fingerprint (then two runs without one), the run holding the last
	// slot, and the latest start (a cancelled run started before).
	fOld := record(t, d, "f", engine.StatusCompleted, old, func(r *engine.Run) { r.Fingerprint = "sha256:1" })
	fPrint := record(t, d, "f", engine.StatusCompleted, old.Add(time.Minute), func(r *engine.Run) { r.Fingerprint = "sha256:2" })
	fSlot := record(t, d, "f", engine.StatusCompleted, old.Add(2*time.Minute), func(r *engine.Run) { r.Slot = old })
	fLast := record(t, d, "f", engine.StatusCancelled, old.Add(3*time.Minute))
	// Records are made in time order (the scan relies on it, and stops at
	// the first record too young for any retention).
	newSkip := record(t, d, "c", engine.StatusSkipped, now.Add(-2*day))
	// Events: old dispatched go; old pending and young stay.
	oldEv := &engine.Event{Type: "x", Time: now.Add(-8 * day)}
	pendingEv := &engine.Event{Type: "x", Time: now.Add(-8 * day)}
	youngEv := &engine.Event{Type: "x", Time: now.Add(-6 * day)}
	mustRun(t, d.AppendEvent(ctx, oldEv))
	mustRun(t, d.AppendPendingEvent(ctx, pendingEv))
	mustRun(t, d.AppendEvent(ctx, youngEv))
	statesBefore, err := d.HookStates(ctx)
	mustRun(t, err)

	ninety, none := 90*day, 0
	pol := PrunePolicy{Retention: defaultRetention, Hooks: map[string]engine.HookRetention{
		"b": {Runs: &ninety},
		"f": {KeepLast: &none},
	}}
	dry := pol
	dry.DryRun = true
	want := PruneStats{Runs: 50 + 0 + 1, Skipped: 2, Events: 1}
	got, err := d.Prune(ctx, now, dry)
	mustRun(t, err)
	if got.Runs != want.Runs || got.Skipped != want.Skipped || got.Events != want.Events {
		t.Errorf("dry run: %+v, want runs %d skipped %d events %d", got, want.Runs, want.Skipped, want.Events)
	}
	if n := len(ids(t, d, "a")); n != 151 {
		t.Fatalf("dry run deleted runs: a has %d", n)
	}

	got, err = d.Prune(ctx, now, pol)
	mustRun(t, err)
	if got.Runs != want.Runs || got.Skipped != want.Skipped || got.Events != want.Events {
		t.Errorf("prune: %+v, want runs %d skipped %d events %d", got, want.Runs, want.Skipped, want.Events)
	}
	left := ids(t, d, "a")
	for i, r := range a {
		if kept := left[r.ID]; kept != (i >= 50) {
			t.Errorf("a run %d: kept %v, want %v", i, kept, i >= 50)
		}
	}
	check := func(what string, r *engine.Run, want bool) {
		t.Helper()
		_, err := d.GetRun(ctx, r.ID)
		if kept := err == nil; kept != want {
			t.Errorf("%s: kept %v, want %v (%v)", what, kept, want, err)
		}
	}
	check("old queued run", queued, true)
	check("old running run", running, true)
	check("young failed run", young, true)
	for i, r := range b {
		check(fmt.Sprintf("b run %d (runs: 90d)", i), r, true)
	}
	check("old skip record", oldSkip, false)
	check("old drop record", oldDrop, false)
	check("young skip record", newSkip, true)
	check("f: an older fingerprint", fOld, false)
	check("f: the latest fingerprint", fPrint, true)
	check("f: the run holding the last slot", fSlot, true)
	check("f: the latest start", fLast, true)

	evs, err := d.ListEvents(ctx, "", 100)
	mustRun(t, err)
	gotEv := map[string]bool{}
	for _, ev := range evs {
		gotEv[ev.ID] = true
	}
	if gotEv[oldEv.ID] || !gotEv[pendingEv.ID] || !gotEv[youngEv.ID] {
		t.Errorf("events left %v; want only the pending %s and the young %s", gotEv, pendingEv.ID, youngEv.ID)
	}
	statesAfter, err := d.HookStates(ctx)
	mustRun(t, err)
	if fmt.Sprint(statesAfter) != fmt.Sprint(statesBefore) {
		t.Errorf("hook state changed:\n got %v\nwant %v", statesAfter, statesBefore)
	}

	// Nothing more to do the second time.
	got, err = d.Prune(ctx, now, pol)
	mustRun(t, err)
	if got.Runs+got.Skipped+got.Events != 0 {
		t.Errorf("second prune deleted %+v", got)
	}
}

// commitLog observes the write connection: how many rows of runs each
// committed transaction deleted.
type commitLog struct {
	mu      sync.Mutex
	pending int
	commits []int
}

var (
	observed     = &commitLog{}
	registerOnce sync.Once
)

// observeWrites makes Open use a driver that feeds observed, for the
// rest of the test.
func observeWrites(t *testing.T) *commitLog {
	registerOnce.Do(func() {
		sql.Register("sqlite3_observed", &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
			c.RegisterUpdateHook(func(op int, db, table string, rowid int64) {
				if op == sqliteDelete && table == "runs" {
					observed.mu.Lock()
					observed.pending++
					observed.mu.Unlock()
				}
			})
			c.RegisterCommitHook(func() int {
				observed.mu.Lock()
				observed.commits = append(observed.commits, observed.pending)
				observed.pending = 0
				observed.mu.Unlock()
				return 0
			})
			return nil
		}})
	})
	old := writeDriver
	writeDriver = "sqlite3_observed"
	t.Cleanup(func() { writeDriver = old })
	observed.mu.Lock()
	observed.pending, observed.commits = 0, nil
	observed.mu.Unlock()
	return observed
}

// TestPruneDeletesInSmallTransactions: Prune never holds the write lock
// for more than Batch rows. SQLite's own update and commit hooks count the
// rows of runs each committed transaction deleted.
func TestPruneDeletesInSmallTransactions(t *testing.T) {
	ctx := context.Background()
	log := observeWrites(t)
	d, _ := openTest(t)
	now := t0.Add(100 * day)
	for i := range 100 {
		record(t, d, "h", engine.StatusCompleted, now.Add(-40*day+time.Duration(i)*time.Second))
	}
	pol := PrunePolicy{Retention: engine.Retention{Runs: 30 * day, KeepLast: 10}, Batch: 7}
	st, err := d.Prune(ctx, now, pol)
	mustRun(t, err)
	if st.Runs != 90 {
		t.Fatalf("pruned %d runs, want 90", st.Runs)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	total, txs := 0, 0
	for _, n := range log.commits {
		if n > pol.Batch {
			t.Errorf("a transaction deleted %d runs, more than the batch of %d", n, pol.Batch)
		}
		if n > 0 {
			total += n
			txs++
		}
	}
	if total != 90 || txs < 13 {
		t.Errorf("%d runs deleted in %d transactions, want 90 in at least 13", total, txs)
	}
}

// TestSkipRecordsCollapse: the skip records of a paused or disabled hook,
// one per trigger, collapse into one record with a count and a time
// range, as long as nothing else happens to the hook; other skips do not.
func TestSkipRecordsCollapse(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	paused := func(i int) *engine.Run {
		at := t0.Add(time.Duration(i) * time.Minute)
		return &engine.Run{ID: engine.NewID(), Hook: "p", Trigger: "schedule", Slot: at, Status: engine.StatusSkipped,
			Gate: engine.GatePaused, Reason: "paused: hook p is paused", QueuedAt: at, FinishedAt: at}
	}
	var first string
	for i := range 5 {
		r := paused(i)
		mustRun(t, d.InsertRun(ctx, r))
		if i == 0 {
			first = r.ID
		}
		if r.ID != first || r.Repeats != max(i+1, 1) && i > 0 {
			t.Fatalf("skip %d: id %s repeats %d, want id %s repeats %d", i, r.ID, r.Repeats, first, i+1)
		}
	}
	runs, err := d.ListRuns(ctx, engine.RunFilter{Hook: "p"})
	mustRun(t, err)
	if len(runs) != 1 {
		t.Fatalf("%d records, want 1", len(runs))
	}
	r := runs[0]
	if r.Repeats != 5 || !r.QueuedAt.Equal(t0) || !r.FinishedAt.Equal(t0.Add(4*time.Minute)) || !r.Slot.Equal(t0.Add(4*time.Minute)) {
		t.Errorf("collapsed record: repeats %d, %s to %s, slot %s", r.Repeats, r.QueuedAt, r.FinishedAt, r.Slot)
	}
	// Every slot is still claimed, by the one record.
	var slots int
	mustRun(t, d.r.QueryRow(`SELECT count(*) FROM slots WHERE hook = 'p' AND run_id = ?`, first).Scan(&slots))
	if slots != 5 {
		t.Errorf("%d slots held by the collapsed record, want 5", slots)
	}
	states, err := d.HookStates(ctx)
	mustRun(t, err)
	if !states["p"].LastSlot.Equal(t0.Add(4 * time.Minute)) {
		t.Errorf("last slot %s", states["p"].LastSlot)
	}

	// A disabled hook's record differs: a new record, which collapses in turn.
	dis := paused(5)
	dis.Gate, dis.Reason = engine.GateDisabled, "disabled: hook p has enabled: false"
	mustRun(t, d.InsertRun(ctx, dis))
	dis2 := paused(6)
	dis2.Gate, dis2.Reason = engine.GateDisabled, "disabled: hook p has enabled: false"
	mustRun(t, d.InsertRun(ctx, dis2))
	if dis2.ID != dis.ID || dis2.Repeats != 2 {
		t.Errorf("second disabled record: id %s repeats %d, want %s and 2", dis2.ID, dis2.Repeats, dis.ID)
	}
	// A run in between starts a new record.
	record(t, d, "p", engine.StatusCompleted, t0.Add(10*time.Minute))
	again := paused(11)
	mustRun(t, d.InsertRun(ctx, again))
	if again.ID == first || again.Repeats > 1 {
		t.Errorf("a skip after a run merged into the record before it (id %s repeats %d)", again.ID, again.Repeats)
	}
	// Other gates' records stay one per trigger.
	for range 2 {
		record(t, d, "c", engine.StatusSkipped, t0, func(r *engine.Run) {
			r.Gate, r.Reason = engine.GateInFlight, "in_flight: run X was still running"
		})
	}
	if n := len(ids(t, d, "c")); n != 2 {
		t.Errorf("in_flight records: %d, want 2", n)
	}
}

// TestIncrementalVacuum: a database made before retention (auto_vacuum
// none) is converted by one VACUUM; after it, Prune gives the pages it
// emptied back to the file system.
func TestIncrementalVacuum(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	raw, err := sql.Open("sqlite3", path+"?_auto_vacuum=none")
	mustRun(t, err)
	_, err = raw.Exec(`CREATE TABLE filler (x TEXT)`)
	mustRun(t, err)
	mustRun(t, raw.Close())

	d, err := Open(path)
	mustRun(t, err)
	defer d.Close()
	if mode, _ := d.pragma(ctx, "auto_vacuum"); mode == autoVacuumIncremental {
		t.Fatal("the old database is already incremental: the test proves nothing")
	}
	ran, err := d.EnableIncrementalVacuum(ctx)
	mustRun(t, err)
	if mode, _ := d.pragma(ctx, "auto_vacuum"); !ran || mode != autoVacuumIncremental {
		t.Fatalf("after EnableIncrementalVacuum: ran %v, auto_vacuum %d", ran, mode)
	}
	if ran, err := d.EnableIncrementalVacuum(ctx); ran || err != nil {
		t.Errorf("second EnableIncrementalVacuum: ran %v, %v", ran, err)
	}

	now := t0.Add(100 * day)
	for i := range 300 {
		record(t, d, "h", engine.StatusCompleted, now.Add(-40*day+time.Duration(i)*time.Second), func(r *engine.Run) {
			r.Response = fmt.Sprintf("%0*d", 4000, i) // a page or so each
		})
	}
	truncateWAL(t, d)
	before, err := os.Stat(path)
	mustRun(t, err)
	// keep_last 0: all but the latest start go.
	st, err := d.Prune(ctx, now, PrunePolicy{Retention: engine.Retention{Runs: 30 * day}})
	mustRun(t, err)
	truncateWAL(t, d)
	after, err := os.Stat(path)
	mustRun(t, err)
	size, err := d.Size(ctx)
	mustRun(t, err)
	if st.Runs != 299 || st.FreedBytes < 299*4000 || size.FreeBytes != 0 || after.Size() > before.Size()-299*4000 {
		t.Errorf("pruned %d runs, freed %d bytes, %d free left; file %d -> %d bytes",
			st.Runs, st.FreedBytes, size.FreeBytes, before.Size(), after.Size())
	}
}
