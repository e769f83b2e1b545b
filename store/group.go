package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Group commit: the frequent small writes of runs and events (a run's
// start and end, its process groups, events stored and marked
// dispatched) do not each pay for a transaction. A write that finds no
// commit in progress starts one in its caller's goroutine, after letting
// the goroutines ready to run go first (yieldBeforeCommit, below): the
// writes they make meanwhile join it. Writes that arrive while a commit
// is in progress queue; when it ends, one goroutine takes every write
// waiting, runs each in a SAVEPOINT of one BEGIN IMMEDIATE transaction
// and commits them together, and so on until the queue is empty. Each caller is answered
// only once the commit that holds its work returned. A piece of work that
// fails is rolled back to its savepoint and fails alone; a failure of the
// transaction itself (BEGIN, RELEASE, COMMIT) fails every piece in it, so
// no caller is told its work is stored unless the commit that stored it
// succeeded. Durability is that of any commit (WAL, synchronous=NORMAL):
// a commit survives the process being killed.
//
// A write that may wait (writeLater: the engine's own events, which the
// engine stores after it dispatched them) does not start a commit of its
// own: it joins the next commit of other writes, or, when none comes
// within LaterDelay, one the store starts then. A run's progress and
// outcome events thus ride in the transaction of its end (or of other
// runs' writes) instead of adding transactions of their own.
//
// Between two commits the checkpointer may hold the committer for a
// moment (holdWrites): writes queue meanwhile as behind a commit in
// progress (checkpoint.go).

// yieldBeforeCommit: a write that finds no commit in progress yields
// its processor once (runtime.Gosched) before it takes the queue and
// commits. With a processor idle, or nothing else ready to run (one
// publisher in BenchmarkEventToRun), the yield returns at once and the
// write commits alone as before. With the processors busy it waits for
// the goroutines already ready to run, which it would otherwise delay
// itself: the run starts and ends among them queue and share its
// commit. A commit costs about the same with one run's writes as with
// several (most of it is the pages it adds to the log, the ends of the
// same tables and indexes), so with 8 publishers on 2 cores
// BenchmarkEventToRun went from 1.6 commits a run to 0.65 and about 45
// µs less CPU a run, at the price of a later start under that load
// (Emit to start recorded p50 0.3 -> 0.6 ms). Nothing a caller is told
// changes: each is answered once the commit holding its write returned.
//
// maxGroup bounds the pieces of work one commit holds.
const maxGroup = 128

// LaterDelay bounds how long a write that may wait (AppendEventsLater)
// waits for another write's commit to join before the store commits it
// on its own.
const LaterDelay = 5 * time.Millisecond

// errClosed is the answer to a write on a closed DB.
var errClosed = errors.New("store: database is closed")

// Request states: a committer takes a queued request, or its caller
// abandons it (its context ended) before a committer saw it.
const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

// writeReq is one caller's write.
type writeReq struct {
	ctx   context.Context
	fn    func(ctx context.Context, tx *sql.Tx) error
	first bool // writeFirst: its commit does not carry writeLater work
	state atomic.Int32
	done  chan error // buffered: a committer never waits for the caller
}

// committer is the queue of writes waiting for the commit in progress.
type committer struct {
	mu     sync.Mutex
	idle   sync.Cond // signalled when busy turns false
	closed bool
	busy   bool // a commit is in progress (or the checkpointer holds the writes)
	queue  []*writeReq

	// gap is set while the checkpointer waits for the commit in progress
	// to end (holdWrites); the goroutine that made it hands the
	// committer over by closing it. stopped is set when the committer
	// stopped after a commit that left the log past its hard bound: it
	// stays busy until the checkpointer resumes it (checkpoint.go).
	gap     chan struct{}
	stopped bool

	// later holds the writeLater work waiting for the next commit; due
	// is set when its oldest waited LaterDelay (timer fired).
	later []*writeReq
	timer *time.Timer
	due   bool
	delay time.Duration // LaterDelay when zero

	commits, writes atomic.Int64 // WriteStats

	// The savepoint statements of a shared transaction, prepared once
	// (db.go): an Exec of their text would compile it again each time.
	savepoint, release, rollbackTo *sql.Stmt
}

// WriteStats counts the transactions the store's frequent writes were
// committed in, and the writes they held, since Open.
type WriteStats struct {
	Commits int64 // transactions
	Writes  int64 // pieces of work (calls of the write methods)
}

// WriteStats returns how many transactions the frequent writes took so
// far: a figure for benchmarks (writes per commit, commits per run).
func (d *DB) WriteStats() WriteStats {
	return WriteStats{Commits: d.gc.commits.Load(), Writes: d.gc.writes.Load()}
}

// stopCommitter waits for the queued writes to be committed and makes
// later writes fail with errClosed. It is safe twice.
func (d *DB) stopCommitter() {
	c := &d.gc
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for c.busy {
		c.idle.Wait()
	}
	if len(c.later) > 0 {
		c.due, c.busy = true, true
		c.mu.Unlock()
		d.commitQueued()
		c.mu.Lock()
	}
}

// write runs fn in a write transaction that may be shared with other
// callers' writes, and returns once that transaction committed (nil) or
// fn's work was rolled back (an error). fn gets a context that is not
// cancelled (a statement interrupted by a cancellation would roll back
// the whole shared transaction), so ctx only decides whether the work is
// started: a caller whose ctx ends while its work waits gets ctx.Err()
// and nothing is written; once started, the caller waits for the commit.
func (d *DB) write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	return d.submit(ctx, fn, false)
}

// writeFirst is write for the start of a run, which its caller waits for
// before anything else happens: a commit of starts alone does not carry
// the writeLater work waiting (unless that waited LaterDelay), which
// joins the next commit instead (the run's end, or another run's
// write). With one publisher in BenchmarkEventToRun nearly every
// start carried the previous run's events, and its commit took 145-155
// µs at the median against about 100 µs for a start alone.
func (d *DB) writeFirst(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	return d.submit(ctx, fn, true)
}

func (d *DB) submit(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error, first bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, fn: fn, first: first, done: make(chan error, 1)}
	c := &d.gc
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errClosed
	}
	if c.busy {
		c.queue = append(c.queue, r)
		c.mu.Unlock()
		select {
		case err := <-r.done:
			return err
		case <-ctx.Done():
			if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
				return ctx.Err()
			}
			return <-r.done // taken: its work is in a transaction, wait for the outcome
		}
	}
	c.busy = true
	c.mu.Unlock()
	// The goroutines ready to run go first (yieldBeforeCommit): the
	// writes they make meanwhile queue, and join this commit.
	runtime.Gosched()
	c.mu.Lock()
	ws := append([]*writeReq{r}, c.queue...)
	c.queue = nil
	batch := append(c.takeLaterFor(ws), ws...)
	c.mu.Unlock()
	d.commitBatch(batch)
	if d.afterCommit() {
		go d.commitQueued() // stays busy
	}
	return <-r.done
}

// afterCommit is called by the goroutine that holds the committer once
// its commit returned. It reports whether writes wait for the next
// commit, which that goroutine then makes (the committer stays busy);
// otherwise it handed the committer to the checkpointer, which waits for
// it (holdWrites) or is woken to checkpoint a log past its hard bound, or
// left it idle.
func (d *DB) afterCommit() (more bool) {
	wake, stop := d.noteCommit()
	if wake {
		defer d.wakeCheckpointer() // after the stop is recorded (noteCommit)
	}
	if afterNoteCommit != nil {
		afterNoteCommit(stop)
	}
	c := &d.gc
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.gap != nil:
		close(c.gap)
		c.gap = nil
		return false
	case stop:
		c.stopped = true
		return false
	case c.waiting():
		return true
	}
	c.busy = false
	c.idle.Broadcast()
	return false
}

// afterNoteCommit, when set (by tests), is called by afterCommit between
// noteCommit and recording its outcome.
var afterNoteCommit func(stop bool)

// holdWrites waits for the commit in progress, if any, to end and keeps
// the committer busy, so that writes queue, until resumeWrites. It
// reports false, holding nothing, once the DB is closed (unless the
// committer stopped at the hard bound: then it holds it).
func (d *DB) holdWrites() bool {
	c := &d.gc
	c.mu.Lock()
	if c.stopped { // at the hard bound, for the checkpointer (Close waits for it)
		c.stopped = false
		c.mu.Unlock()
		return true
	}
	if c.closed {
		c.mu.Unlock()
		return false
	}
	if !c.busy {
		c.busy = true
		c.mu.Unlock()
		return true
	}
	gap := make(chan struct{})
	c.gap = gap
	c.mu.Unlock()
	<-gap
	return true
}

// takeStopped reports whether the committer stopped at the log's hard
// bound; if so the caller now holds it, as after holdWrites.
func (d *DB) takeStopped() bool {
	c := &d.gc
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stopped
	c.stopped = false
	return s
}

// resumeWrites ends holdWrites: the writes that queued meanwhile are
// committed.
func (d *DB) resumeWrites() {
	c := &d.gc
	c.mu.Lock()
	if c.waiting() {
		c.mu.Unlock()
		go d.commitQueued() // stays busy
		return
	}
	c.busy = false
	c.idle.Broadcast()
	c.mu.Unlock()
}

// writeLater is write for work that may wait for other writes: it joins
// the next commit, or one started LaterDelay after the oldest such work
// arrived, whichever comes first. It returns once that commit returned.
func (d *DB) writeLater(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)}
	c := &d.gc
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errClosed
	}
	c.later = append(c.later, r)
	switch {
	case len(c.later) >= maxGroup && !c.busy:
		c.due, c.busy = true, true
		go d.commitQueued()
	case len(c.later) >= maxGroup:
		c.due = true // the commit in progress is followed by one that takes them
	case c.timer == nil:
		delay := c.delay
		if delay == 0 {
			delay = LaterDelay
		}
		c.timer = time.AfterFunc(delay, d.laterDue)
	}
	c.mu.Unlock()
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return ctx.Err()
		}
		return <-r.done
	}
}

// laterDue commits the writeLater work that waited LaterDelay, unless a
// commit in progress or one since took it.
func (d *DB) laterDue() {
	c := &d.gc
	c.mu.Lock()
	c.timer = nil
	if len(c.later) == 0 {
		c.mu.Unlock()
		return
	}
	c.due = true
	if c.busy {
		c.mu.Unlock() // the committer takes them when its commit ends
		return
	}
	c.busy = true
	c.mu.Unlock()
	d.commitQueued()
}

// takeLater returns the writeLater work waiting, to join a commit, and
// stops its timer. c.mu is held.
func (c *committer) takeLater() []*writeReq {
	later := c.later
	c.later, c.due = nil, false
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	return later
}

// takeLaterFor returns the writeLater work to join a commit of the
// writes ws: none when they are all writeFirst ones and it has not waited
// LaterDelay. c.mu is held.
func (c *committer) takeLaterFor(ws []*writeReq) []*writeReq {
	if !c.due && !slices.ContainsFunc(ws, func(r *writeReq) bool { return !r.first }) {
		return nil
	}
	return c.takeLater()
}

// waiting reports whether work waits for a commit to start now: writes
// queued, or writeLater work that waited long enough. c.mu is held.
func (c *committer) waiting() bool {
	return len(c.queue) > 0 || (c.due && len(c.later) > 0)
}

// commitQueued commits the queued writes, as many at a time as are
// waiting, until none is (afterCommit). The caller holds the committer
// (busy), and work waits.
func (d *DB) commitQueued() {
	c := &d.gc
	for {
		c.mu.Lock()
		batch := append(c.takeLaterFor(c.queue), c.queue...)
		c.queue = nil
		c.mu.Unlock()
		d.commitBatch(batch)
		if !d.afterCommit() {
			return
		}
	}
}

// commitBatch commits the requests in transactions of at most maxGroup.
func (d *DB) commitBatch(batch []*writeReq) {
	for len(batch) > 0 {
		n := min(len(batch), maxGroup)
		d.commitGroup(batch[:n])
		batch = batch[n:]
	}
}

// commitGroup runs the work of the requests in one transaction and
// answers each.
func (d *DB) commitGroup(batch []*writeReq) {
	live := make([]*writeReq, 0, len(batch))
	for _, r := range batch {
		if !r.state.CompareAndSwap(reqQueued, reqTaken) {
			continue // abandoned by its caller
		}
		if err := r.ctx.Err(); err != nil {
			r.done <- err
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	d.gc.commits.Add(1)
	d.gc.writes.Add(int64(len(live)))
	errs := make([]error, len(live))
	answer := func(all error) {
		for i, r := range live {
			if errs[i] != nil {
				r.done <- errs[i]
			} else {
				r.done <- all
			}
		}
	}
	bg := context.Background()
	tx, err := d.w.BeginTx(bg, nil)
	if err != nil {
		answer(err)
		return
	}
	if len(live) == 1 { // alone: no savepoint needed
		r := live[0]
		if err := r.fn(context.WithoutCancel(r.ctx), tx); err != nil {
			_ = tx.Rollback()
			r.done <- err
			return
		}
		r.done <- tx.Commit()
		return
	}
	c := &d.gc
	savepoint, release := tx.StmtContext(bg, c.savepoint), tx.StmtContext(bg, c.release)
	for i, r := range live {
		if _, err := savepoint.ExecContext(bg); err != nil {
			_ = tx.Rollback()
			answer(fmt.Errorf("begin savepoint: %w", err))
			return
		}
		if errs[i] = r.fn(context.WithoutCancel(r.ctx), tx); errs[i] != nil {
			if err := undoPiece(bg, tx, c.rollbackTo, release); err != nil {
				// The transaction is gone (SQLite rolls back the whole
				// transaction on some errors): nothing in it is stored.
				_ = tx.Rollback()
				answer(fmt.Errorf("roll back to savepoint: %w", err))
				return
			}
			continue
		}
		if _, err := release.ExecContext(bg); err != nil {
			_ = tx.Rollback()
			answer(fmt.Errorf("release savepoint: %w", err))
			return
		}
	}
	if err := tx.Commit(); err != nil {
		answer(fmt.Errorf("commit: %w", err))
		return
	}
	answer(nil)
}

// undoPiece undoes, in tx, the work done since the savepoint and ends
// the savepoint.
func undoPiece(ctx context.Context, tx *sql.Tx, rollbackTo, release *sql.Stmt) error {
	if _, err := tx.StmtContext(ctx, rollbackTo).ExecContext(ctx); err != nil {
		return err
	}
	_, err := release.ExecContext(ctx)
	return err
}
