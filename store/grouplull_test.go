package store

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// holdFirst is holdCommitter for a run's start: a writeFirst that blocks
// inside its transaction until release.
func holdFirst(t *testing.T, d *DB) (release func() error) {
	t.Helper()
	entered, unblock := make(chan struct{}), make(chan struct{})
	res := make(chan error, 1)
	go func() {
		res <- d.writeFirst(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			close(entered)
			<-unblock
			return d.insertEvent(ctx, tx, &engine.Event{ID: "start", Type: "test.group"}, true)
		})
	}()
	<-entered
	return func() error { close(unblock); return <-res }
}

// laterFn starts writeLater of fn and waits until it waits for a commit
// or was answered; the channel gets its result.
func laterFn(t *testing.T, d *DB, fn func(context.Context, *sql.Tx) error) chan error {
	t.Helper()
	d.gc.mu.Lock()
	base := len(d.gc.later)
	d.gc.mu.Unlock()
	res := make(chan error, 1)
	go func() { res <- d.writeLater(context.Background(), fn) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d.gc.mu.Lock()
		n := len(d.gc.later)
		d.gc.mu.Unlock()
		if n > base {
			return res
		}
		select {
		case err := <-res:
			res <- err
			return res
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("writeLater never waited for a commit")
		}
		time.Sleep(time.Millisecond)
	}
}

// Later work waiting when a run's start commits is committed right after
// it, on its own, without waiting for another write or LaterDelay: the
// start's commit did not carry it.
func TestGroupCommitLaterCommitsAfterAStart(t *testing.T) {
	d, _ := openTest(t)
	d.gc.delay = time.Hour // only the lull can commit it
	later := appendLater(t, d, "a")
	before := d.WriteStats()
	mustRun(t, d.writeFirst(context.Background(), insertFn(d, "start")))
	if err := waitResult(t, "a", later); err != nil {
		t.Fatal(err)
	}
	after := d.WriteStats()
	if c, w := after.Commits-before.Commits, after.Writes-before.Writes; c != 2 || w != 2 {
		t.Errorf("%d commits holding %d writes, want 2 holding 2 (the start alone, then a)", c, w)
	}
	if got := storedEvents(t, d); !got["a"] || !got["start"] {
		t.Errorf("stored %v, want start and a", got)
	}
}

// Later work that arrives while the committer is idle after a run's
// start is committed at once; after a commit with an ordinary write (a
// run's end), later work waits to join the next commit again.
func TestGroupCommitLaterInALull(t *testing.T) {
	d, _ := openTest(t)
	d.gc.delay = time.Hour
	mustRun(t, d.writeFirst(context.Background(), insertFn(d, "start")))
	before := d.WriteStats()
	if err := waitResult(t, "a", appendLater(t, d, "a")); err != nil {
		t.Fatal(err)
	}
	if st := d.WriteStats(); st.Commits-before.Commits != 1 || st.Writes-before.Writes != 1 {
		t.Errorf("a took %d commits holding %d writes, want 1 holding 1", st.Commits-before.Commits, st.Writes-before.Writes)
	}

	mustRun(t, d.write(context.Background(), insertFn(d, "end"))) // ends the lull
	later := appendLater(t, d, "b")
	d.gc.mu.Lock()
	waits := len(d.gc.later) == 1
	d.gc.mu.Unlock()
	if !waits {
		t.Fatal("b did not wait for the next commit after an ordinary write's")
	}
	before = d.WriteStats()
	mustRun(t, d.write(context.Background(), insertFn(d, "c")))
	if err := waitResult(t, "b", later); err != nil {
		t.Fatal(err)
	}
	if st := d.WriteStats(); st.Commits-before.Commits != 1 || st.Writes-before.Writes != 2 {
		t.Errorf("b and c took %d commits holding %d writes, want 1 holding 2", st.Commits-before.Commits, st.Writes-before.Writes)
	}
	if got := storedEvents(t, d); !got["a"] || !got["b"] || !got["c"] || !got["end"] {
		t.Errorf("stored %v, want start, a, end, b and c", got)
	}
}

// A start that comes while later work waits commits without it; the
// later work, committed together right after, fails piece by piece: a
// failing piece is rolled back alone.
func TestGroupCommitLaterAfterStartFailsAlone(t *testing.T) {
	d, _ := openTest(t)
	d.gc.delay = time.Hour
	before := d.WriteStats()
	release := holdFirst(t, d)
	bad := errors.New("refused")
	a := laterFn(t, d, insertFn(d, "a"))
	b := laterFn(t, d, func(ctx context.Context, tx *sql.Tx) error {
		if err := insertFn(d, "b")(ctx, tx); err != nil {
			return err
		}
		return bad
	})
	c := laterFn(t, d, insertFn(d, "c"))
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := waitResult(t, "a", a); err != nil {
		t.Errorf("a: %v", err)
	}
	if err := waitResult(t, "b", b); !errors.Is(err, bad) {
		t.Errorf("b: %v, want %v", err, bad)
	}
	if err := waitResult(t, "c", c); err != nil {
		t.Errorf("c: %v", err)
	}
	if st := d.WriteStats(); st.Commits-before.Commits != 2 || st.Writes-before.Writes != 4 {
		t.Errorf("%d commits holding %d writes, want 2 holding 4 (the start alone, then a, b and c)",
			st.Commits-before.Commits, st.Writes-before.Writes)
	}
	if got := storedEvents(t, d); !got["start"] || !got["a"] || got["b"] || !got["c"] {
		t.Errorf("stored %v, want start, a and c", got)
	}
}

// Later work committed in a lull is answered only once its commit
// returned, and not as stored when that commit failed.
func TestGroupCommitLaterInALullAnswersAfterCommit(t *testing.T) {
	g := gateCommits(t)
	d, _ := openTest(t)
	d.gc.delay = time.Hour
	mustRun(t, d.writeFirst(context.Background(), insertFn(d, "start")))
	g.arm(t, true)
	a := make(chan error, 1)
	go func() {
		a <- d.AppendEventsLater(context.Background(), []*engine.Event{{ID: "a", Type: "test.group"}})
	}()
	g.reached(t, "a's commit")
	noAnswer(t, []chan error{a})
	g.out <- false
	if err := waitResult(t, "a", a); err == nil {
		t.Error("a: answered nil, but its commit failed")
	}
	b := make(chan error, 1)
	go func() {
		b <- d.AppendEventsLater(context.Background(), []*engine.Event{{ID: "b", Type: "test.group"}})
	}()
	g.reached(t, "b's commit")
	noAnswer(t, []chan error{b})
	g.out <- true
	if err := waitResult(t, "b", b); err != nil {
		t.Fatal(err)
	}
	g.arm(t, false)
	if got := storedEvents(t, d); got["a"] || !got["b"] {
		t.Errorf("stored %v, want start and b", got)
	}
}

// Close while later work is being committed in a lull, and more waits
// behind it: both are stored, and answered so.
func TestGroupCommitCloseDuringALull(t *testing.T) {
	g := gateCommits(t)
	d, path := openTest(t)
	d.gc.delay = time.Hour
	mustRun(t, d.writeFirst(context.Background(), insertFn(d, "start")))
	g.arm(t, true)
	a := make(chan error, 1)
	go func() {
		a <- d.AppendEventsLater(context.Background(), []*engine.Event{{ID: "a", Type: "test.group"}})
	}()
	g.reached(t, "a's commit")
	b := appendLater(t, d, "b") // waits behind a's commit
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	g.arm(t, false)
	g.out <- true
	for name, ch := range map[string]chan error{"a": a, "b": b, "Close": closed} {
		if err := waitResult(t, name, ch); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	d2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if got := storedEvents(t, d2); !got["start"] || !got["a"] || !got["b"] {
		t.Errorf("stored %v, want start, a and b", got)
	}
}

// When runs overlap (a start finds a commit in progress), the lull ends
// and the next starts begin none: later work waits to join another
// write's commit again instead of adding commits of its own.
func TestGroupCommitOverlappingStartsEndTheLull(t *testing.T) {
	d, _ := openTest(t)
	d.gc.delay = time.Hour
	release := holdFirst(t, d)
	second := make(chan error, 1)
	go func() { second <- d.writeFirst(context.Background(), insertFn(d, "second")) }()
	waitQueued(t, d, 1)
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := waitResult(t, "second", second); err != nil {
		t.Fatal(err)
	}
	mustRun(t, d.writeFirst(context.Background(), insertFn(d, "third")))
	later := appendLater(t, d, "a")
	d.gc.mu.Lock()
	waits := len(d.gc.later) == 1
	d.gc.mu.Unlock()
	if !waits {
		t.Fatal("a did not wait for another write's commit after overlapping starts")
	}
	before := d.WriteStats()
	mustRun(t, d.write(context.Background(), insertFn(d, "b")))
	if err := waitResult(t, "a", later); err != nil {
		t.Fatal(err)
	}
	if st := d.WriteStats(); st.Commits-before.Commits != 1 || st.Writes-before.Writes != 2 {
		t.Errorf("a and b took %d commits holding %d writes, want 1 holding 2", st.Commits-before.Commits, st.Writes-before.Writes)
	}
}
