package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// holdCommitter starts a write that blocks inside its transaction until
// the returned release is called, so that the writes made meanwhile
// queue and are committed together when it ends. release returns the
// blocked write's result.
func holdCommitter(t *testing.T, d *DB) (release func() error) {
	t.Helper()
	entered, unblock := make(chan struct{}), make(chan struct{})
	res := make(chan error, 1)
	go func() {
		res <- d.write(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			close(entered)
			<-unblock
			return d.insertEvent(ctx, tx, &engine.Event{ID: "holder", Type: "test.hold"}, true)
		})
	}()
	<-entered
	return func() error { close(unblock); return <-res }
}

// waitQueued waits until n writes wait for the commit in progress.
func waitQueued(t *testing.T, d *DB, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d.gc.mu.Lock()
		q := len(d.gc.queue)
		d.gc.mu.Unlock()
		if q == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", q, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// queueWrites starts one write per fn while the committer is held and
// returns the channel of each one's result.
func queueWrites(t *testing.T, d *DB, ctx context.Context, fns ...func(context.Context, *sql.Tx) error) []chan error {
	t.Helper()
	d.gc.mu.Lock()
	base := len(d.gc.queue)
	d.gc.mu.Unlock()
	out := make([]chan error, len(fns))
	for i, fn := range fns {
		out[i] = make(chan error, 1)
		go func() { out[i] <- d.write(ctx, fn) }()
		waitQueued(t, d, base+i+1) // in this order
	}
	return out
}

func insertFn(d *DB, id string) func(context.Context, *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		return d.insertEvent(ctx, tx, &engine.Event{ID: id, Type: "test.group"}, true)
	}
}

// storedEvents returns the ids of the events of type test.group.
func storedEvents(t *testing.T, d *DB) map[string]bool {
	t.Helper()
	evs, err := d.ListEvents(context.Background(), "test.group", 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, ev := range evs {
		out[ev.ID] = true
	}
	return out
}

// A write that fails inside a group commit is rolled back alone; the
// others in the same commit are stored.
func TestGroupCommitFailureIsRolledBackAlone(t *testing.T) {
	d, _ := openTest(t)
	release := holdCommitter(t, d)
	bad := errors.New("refused")
	res := queueWrites(t, d, context.Background(),
		insertFn(d, "a"),
		func(ctx context.Context, tx *sql.Tx) error {
			if err := insertFn(d, "b")(ctx, tx); err != nil {
				return err
			}
			return bad // after writing: the savepoint undoes b
		},
		insertFn(d, "c"),
	)
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := <-res[0]; err != nil {
		t.Errorf("a: %v", err)
	}
	if err := <-res[1]; !errors.Is(err, bad) {
		t.Errorf("b: %v, want %v", err, bad)
	}
	if err := <-res[2]; err != nil {
		t.Errorf("c: %v", err)
	}
	if got := storedEvents(t, d); !got["a"] || got["b"] || !got["c"] {
		t.Errorf("stored %v, want a and c", got)
	}
}

// When the shared transaction itself is lost, no write in it is answered
// as stored, and none is.
func TestGroupCommitLostTransactionFailsEveryWrite(t *testing.T) {
	d, _ := openTest(t)
	release := holdCommitter(t, d)
	res := queueWrites(t, d, context.Background(),
		insertFn(d, "a"),
		func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "ROLLBACK") // what SQLite does itself on some errors
			return err
		},
		insertFn(d, "c"),
	)
	if err := release(); err != nil {
		t.Fatal(err)
	}
	for i, ch := range res {
		if err := <-ch; err == nil {
			t.Errorf("write %d: answered as stored in a transaction that was rolled back", i)
		}
	}
	if got := storedEvents(t, d); len(got) != 0 {
		t.Errorf("stored %v, want nothing", got)
	}
	// The store goes on.
	mustRun(t, d.write(context.Background(), insertFn(d, "d")))
	if got := storedEvents(t, d); !got["d"] || len(got) != 1 {
		t.Errorf("stored %v, want d", got)
	}
}

// A caller whose context ends while its write waits gets the context's
// error, and its write is not made.
func TestGroupCommitAbandonedWriteIsNotMade(t *testing.T) {
	d, _ := openTest(t)
	release := holdCommitter(t, d)
	ctx, cancel := context.WithCancel(context.Background())
	res := queueWrites(t, d, ctx, insertFn(d, "a"))
	ok := queueWrites(t, d, context.Background(), insertFn(d, "b"))
	cancel()
	if err := <-res[0]; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned write: %v, want context.Canceled", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := <-ok[0]; err != nil {
		t.Fatalf("b: %v", err)
	}
	if got := storedEvents(t, d); got["a"] || !got["b"] {
		t.Errorf("stored %v, want b only", got)
	}
}

// Close commits the writes waiting, then refuses new ones; what was
// answered as stored is in the file when it is opened again.
func TestGroupCommitCloseCommitsQueued(t *testing.T) {
	d, path := openTest(t)
	release := holdCommitter(t, d)
	res := queueWrites(t, d, context.Background(), insertFn(d, "a"), insertFn(d, "b"))
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	if err := release(); err != nil {
		t.Fatal(err)
	}
	for i, ch := range res {
		if err := <-ch; err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := d.write(context.Background(), insertFn(d, "c")); !errors.Is(err, errClosed) {
		t.Errorf("write after Close: %v, want %v", err, errClosed)
	}
	d2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if got := storedEvents(t, d2); !got["a"] || !got["b"] || len(got) != 2 {
		t.Errorf("stored %v, want a and b", got)
	}
}

// Runs started and finished from many goroutines at once, their
// process groups and their events, are all stored: group commits under
// real contention lose nothing and mix nothing up.
func TestGroupCommitConcurrentRuns(t *testing.T) {
	d, path := openTest(t)
	ctx := context.Background()
	const workers, each = 8, 40
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			errs <- func() error {
				for i := range each {
					id := fmt.Sprintf("r-%d-%d", w, i)
					ev := &engine.Event{ID: "e-" + id, Type: "test.group"}
					if err := d.AppendPendingEvent(ctx, ev); err != nil {
						return err
					}
					r := &engine.Run{ID: id, Hook: fmt.Sprintf("h%d", w), Trigger: "event", StartedAt: t0}
					if err := d.StartRun(ctx, r); err != nil {
						return err
					}
					if err := d.AddRunProc(ctx, id, engine.ProcGroup{PGID: 1000 + i}); err != nil {
						return err
					}
					if err := d.MarkDispatched(ctx, ev.Seq); err != nil {
						return err
					}
					if err := d.AppendEventsLater(ctx, []*engine.Event{{ID: "l-" + id, Type: "test.later"}}); err != nil {
						return err
					}
					r.Status, r.FinishedAt = engine.StatusCompleted, t0.Add(time.Second)
					if err := d.FinishRun(ctx, r); err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, d.Close())
	d2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	runs, err := d2.ListRuns(ctx, engine.RunFilter{Status: engine.StatusCompleted, Limit: workers*each + 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != workers*each {
		t.Errorf("%d completed runs stored, want %d", len(runs), workers*each)
	}
	pending, err := d2.PendingEvents(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 0 {
		t.Errorf("%d events left pending, want 0", len(pending))
	}
	if got := storedEvents(t, d2); len(got) != workers*each {
		t.Errorf("%d events stored, want %d", len(got), workers*each)
	}
	if later, err := d2.ListEvents(ctx, "test.later", workers*each+1); err != nil || len(later) != workers*each {
		t.Errorf("%d events stored by AppendEventsLater, want %d (%v)", len(later), workers*each, err)
	}
}

// appendLater starts AppendEventsLater of one test.group event with this
// id and waits until it waits for a commit; the channel gets its result.
func appendLater(t *testing.T, d *DB, id string) chan error {
	t.Helper()
	d.gc.mu.Lock()
	base := len(d.gc.later)
	d.gc.mu.Unlock()
	res := make(chan error, 1)
	go func() {
		res <- d.AppendEventsLater(context.Background(), []*engine.Event{{ID: id, Type: "test.group"}})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d.gc.mu.Lock()
		n := len(d.gc.later)
		d.gc.mu.Unlock()
		if n > base {
			return res
		}
		// On a busy machine this loop may sleep past LaterDelay: the
		// write waited for a commit and was answered before it looked.
		select {
		case err := <-res:
			res <- err
			return res
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("AppendEventsLater %s never waited for a commit", id)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitResult waits for a write's result, failing after a generous
// deadline instead of hanging.
func waitResult(t *testing.T, what string, ch chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer", what)
		return nil
	}
}

// Events appended later wait for the next commit of another write and
// are stored in it: one transaction for both, each answered after it.
func TestGroupCommitLaterJoinsTheNextCommit(t *testing.T) {
	d, _ := openTest(t)
	d.gc.delay = time.Hour // only another write's commit can take it
	later := appendLater(t, d, "a")
	select {
	case err := <-later:
		t.Fatalf("AppendEventsLater answered (%v) before any commit", err)
	default:
	}
	if got := storedEvents(t, d); got["a"] {
		t.Fatal("stored before any commit")
	}
	before := d.WriteStats()
	mustRun(t, d.write(context.Background(), insertFn(d, "b")))
	if err := waitResult(t, "a", later); err != nil {
		t.Fatal(err)
	}
	after := d.WriteStats()
	if c, w := after.Commits-before.Commits, after.Writes-before.Writes; c != 1 || w != 2 {
		t.Errorf("%d commits holding %d writes, want 1 holding 2", c, w)
	}
	if got := storedEvents(t, d); !got["a"] || !got["b"] {
		t.Errorf("stored %v, want a and b", got)
	}
}

// A run's start (writeFirst) commits without the events waiting to be
// appended later; they join the next other write's commit.
func TestGroupCommitStartLeavesLaterWork(t *testing.T) {
	d, _ := openTest(t)
	d.gc.delay = time.Hour // only another write's commit can take it
	later := appendLater(t, d, "a")
	before := d.WriteStats()
	mustRun(t, d.writeFirst(context.Background(), insertFn(d, "start")))
	if got := storedEvents(t, d); got["a"] || !got["start"] {
		t.Fatalf("after the start's commit: stored %v, want start without a", got)
	}
	select {
	case err := <-later:
		t.Fatalf("AppendEventsLater answered (%v) before its commit", err)
	default:
	}
	mustRun(t, d.write(context.Background(), insertFn(d, "b")))
	if err := waitResult(t, "a", later); err != nil {
		t.Fatal(err)
	}
	after := d.WriteStats()
	if c, w := after.Commits-before.Commits, after.Writes-before.Writes; c != 2 || w != 3 {
		t.Errorf("%d commits holding %d writes, want 2 holding 3", c, w)
	}
	if got := storedEvents(t, d); !got["a"] || !got["b"] {
		t.Errorf("stored %v, want a and b", got)
	}
}

// With no other write coming, events appended later are committed on
// their own after LaterDelay.
func TestGroupCommitLaterAlone(t *testing.T) {
	d, _ := openTest(t)
	if err := waitResult(t, "a", appendLater(t, d, "a")); err != nil {
		t.Fatal(err)
	}
	if got := storedEvents(t, d); !got["a"] {
		t.Errorf("stored %v, want a", got)
	}
	// The committer goes idle once it answered: nothing left waiting.
	deadline := time.Now().Add(30 * time.Second)
	for {
		d.gc.mu.Lock()
		busy, waiting, timer := d.gc.busy, len(d.gc.later), d.gc.timer != nil
		d.gc.mu.Unlock()
		if !busy && waiting == 0 && !timer {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("committer not idle after the commit: busy %v, %d waiting, timer %v", busy, waiting, timer)
		}
		time.Sleep(time.Millisecond)
	}
}

// Close commits the events waiting to be appended later.
func TestGroupCommitCloseCommitsLater(t *testing.T) {
	d, path := openTest(t)
	d.gc.delay = time.Hour
	later := appendLater(t, d, "a")
	mustRun(t, d.Close())
	if err := waitResult(t, "a", later); err != nil {
		t.Fatal(err)
	}
	if err := d.AppendEventsLater(context.Background(), []*engine.Event{{ID: "b", Type: "test.group"}}); !errors.Is(err, errClosed) {
		t.Errorf("AppendEventsLater after Close: %v, want %v", err, errClosed)
	}
	d2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if got := storedEvents(t, d2); !got["a"] || len(got) != 1 {
		t.Errorf("stored %v, want a", got)
	}
}

// A write that finds no commit in progress lets the goroutines ready to
// run go first, and the writes they make join its commit
// (yieldBeforeCommit): four writes made at once by four goroutines on one
// processor take one commit. Without the yield the first commits alone
// (two commits or more). The scheduler checks its global queue, where the
// yielding write waits, now and then before the others ran: some trials
// may take two commits, so one trial in ten taking one is asked.
func TestGroupCommitReadyWritesJoin(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const writers, trials = 4, 10
	var commits []int64
	for trial := range trials {
		w0 := d.WriteStats()
		start := make(chan struct{})
		errs := make(chan error, writers)
		for i := range writers {
			go func() {
				<-start
				errs <- d.write(ctx, insertFn(d, fmt.Sprintf("ready-%d-%d", trial, i)))
			}()
		}
		close(start)
		for range writers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		n := d.WriteStats().Commits - w0.Commits
		if n == 1 {
			return
		}
		commits = append(commits, n)
	}
	t.Fatalf("%d writes made at once took %v commits in %d trials, never one", writers, commits, trials)
}
