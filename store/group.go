package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Group commit: the frequent small writes of runs and events (a run's
// start and end, its process groups, events stored and marked
// dispatched) do not each pay for a transaction. A write that finds no
// commit in progress runs at once, in its caller's goroutine, in its own
// transaction. Writes that arrive while a commit is in progress queue;
// when it ends, one goroutine takes every write waiting, runs each in a
// SAVEPOINT of one BEGIN IMMEDIATE transaction and commits them
// together, and so on until the queue is empty. Each caller is answered
// only once the commit that holds its work returned. A piece of work that
// fails is rolled back to its savepoint and fails alone; a failure of the
// transaction itself (BEGIN, RELEASE, COMMIT) fails every piece in it, so
// no caller is told its work is stored unless the commit that stored it
// succeeded. Durability is that of any commit (WAL, synchronous=NORMAL):
// a commit survives the process being killed.

// maxGroup bounds the pieces of work one commit holds.
const maxGroup = 128

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
	state atomic.Int32
	done  chan error // buffered: a committer never waits for the caller
}

// committer is the queue of writes waiting for the commit in progress.
type committer struct {
	mu     sync.Mutex
	idle   sync.Cond // signalled when busy turns false
	closed bool
	busy   bool // a commit is in progress
	queue  []*writeReq

	commits, writes atomic.Int64 // WriteStats
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
}

// write runs fn in a write transaction that may be shared with other
// callers' writes, and returns once that transaction committed (nil) or
// fn's work was rolled back (an error). fn gets a context that is not
// cancelled (a statement interrupted by a cancellation would roll back
// the whole shared transaction), so ctx only decides whether the work is
// started: a caller whose ctx ends while its work waits gets ctx.Err()
// and nothing is written; once started, the caller waits for the commit.
func (d *DB) write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
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
	d.commitGroup([]*writeReq{r})
	c.mu.Lock()
	if len(c.queue) > 0 {
		go d.commitQueued() // stays busy
	} else {
		c.busy = false
		c.idle.Broadcast()
	}
	c.mu.Unlock()
	return <-r.done
}

// commitQueued commits the queued writes, as many at a time as are
// waiting, until none is; then the committer is idle.
func (d *DB) commitQueued() {
	c := &d.gc
	for {
		c.mu.Lock()
		batch := c.queue
		c.queue = nil
		if len(batch) == 0 {
			c.busy = false
			c.idle.Broadcast()
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		for len(batch) > 0 {
			n := min(len(batch), maxGroup)
			d.commitGroup(batch[:n])
			batch = batch[n:]
		}
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
	for i, r := range live {
		if _, err := tx.ExecContext(bg, "SAVEPOINT w"); err != nil {
			_ = tx.Rollback()
			answer(fmt.Errorf("begin savepoint: %w", err))
			return
		}
		if errs[i] = r.fn(context.WithoutCancel(r.ctx), tx); errs[i] != nil {
			if _, err := tx.ExecContext(bg, "ROLLBACK TO w; RELEASE w"); err != nil {
				// The transaction is gone (SQLite rolls back the whole
				// transaction on some errors): nothing in it is stored.
				_ = tx.Rollback()
				answer(fmt.Errorf("roll back to savepoint: %w", err))
				return
			}
			continue
		}
		if _, err := tx.ExecContext(bg, "RELEASE w"); err != nil {
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
