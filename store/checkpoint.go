package store

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hookd/hookd/clock"
)

// Checkpoints off the commit path. SQLite copies the write-ahead log back
// into the database file (a checkpoint) inside the commit that leaves the
// log past wal_autocheckpoint pages: that copy, and the fsync of up to
// the whole log it starts with, ran while every write queued behind the
// commit waited (13 to 50 ms at 16 MB, eight times in 2,000 runs of
// BenchmarkEventToRun with 8 publishers: its start p99 and max).
//
// So the write connection never checkpoints (wal_autocheckpoint = 0).
// After each commit the committer looks at the size of the -wal file
// (journal_size_limit makes it the length of the log: SQLite truncates
// the file to the limit at the first commit after the log restarts). Past
// walCheckpointPages it wakes the checkpointer, a goroutine with a
// connection of its own, which
//
//  1. runs PASSIVE checkpoints beside the writes, each copying what was
//     written while the previous one ran, until few frames came meanwhile
//     (the bulk of the copy, and the fsync of the log, happen here while
//     the writes go on);
//  2. then, between two commits (holdWrites: writes queue in the group
//     commit meanwhile), one more PASSIVE checkpoint copies the last
//     frames, so that the whole log is in the database file and the next
//     commit starts the log over at its beginning. Under writes without a
//     pause the log never is all copied otherwise: a commit lands during
//     every checkpoint. Under BenchmarkEventToRun with 8 publishers this
//     held the writes 1.5 to 3 ms (a few hundred frames and two fsyncs)
//     about every 4,000 pages.
//
// A log that still grows past walHardPages (the checkpointer fell behind,
// or readers kept old snapshots open so that the log could not start
// over) stops the committer after the commit that passed it: the
// checkpointer then runs a TRUNCATE checkpoint, which waits up to
// checkpointWait for readers, before any other write is committed. The
// log is thus at most walHardPages plus one commit's pages, unless a
// reader keeps a snapshot longer than checkpointWait (then writes go on
// and the checkpointer tries again checkpointRetry later). Close ends
// with a TRUNCATE checkpoint.
//
// Durability is unchanged: the checkpointer's connection syncs as the
// writer's does (synchronous=NORMAL: the log is synced before its pages
// are copied, the database file after).

// walCheckpointPages is the length of the write-ahead log, in pages, past
// which the checkpointer copies it back into the database file; SQLite's
// wal_autocheckpoint default is 1,000. A run's writes rewrite the same
// few pages again and again (the ends of the runs and events tables and
// their indexes), so a longer log is copied less often and holds fewer
// copies of a page each time: with 4,000 pages (16 MB of log, reused
// after each checkpoint) BenchmarkEventToRun spent about 50 µs less CPU a
// run than with 1,000.
const walCheckpointPages = 4000

// walHardPages is the length of the log past which writes wait for a
// checkpoint (64 MB).
const walHardPages = 4 * walCheckpointPages

const (
	// checkpointWait is how long a TRUNCATE checkpoint waits for readers
	// (and for a writer outside the group commit) to let it go on.
	checkpointWait = time.Second
	// checkpointRetry is how long the committer goes on past the hard
	// bound after a TRUNCATE checkpoint that readers kept from finishing.
	checkpointRetry = 5 * time.Second
	// checkpointGap is the least time between the starts of two rounds of
	// the checkpointer (at the fastest writes a round is needed about
	// every 200 ms); it bounds its work while readers keep the log from
	// starting over.
	checkpointGap = 50 * time.Millisecond
	// checkpointSmall: when fewer frames than this were written while a
	// PASSIVE checkpoint beside the writes ran, the next one runs between
	// two commits.
	checkpointSmall = 256
	// checkpointTries bounds the PASSIVE checkpoints of a round beside
	// the writes.
	checkpointTries = 4
)

// checkpointer is a DB's background checkpointer. It starts the first
// time the log passes walCheckpointPages (a CLI process that writes a
// little never starts one) and stops with Close.
type checkpointer struct {
	wal   string // path of the -wal file
	frame int64  // bytes a frame of the log takes: the page size + 24

	// The bounds in bytes of the -wal file; tests lower them.
	soft, hard atomic.Int64
	// hardAfter: the time on the store's monotonic clock (DB.sinceOpen)
	// before which the committer does not stop at the hard bound (a
	// TRUNCATE checkpoint that readers kept from finishing was tried less
	// than checkpointRetry ago).
	hardAfter atomic.Int64

	// walFD is the -wal file walSize keeps open, when walOpen;
	// walClosed is set by Close (closeWAL).
	walMu     sync.Mutex
	walFD     int
	walOpen   bool
	walClosed bool

	mu      sync.Mutex
	started bool
	closed  bool
	db      *sql.DB
	wake    chan struct{} // buffered: a wake never waits
	stop    chan struct{}
	done    chan struct{}

	// Counts, for tests: rounds that ran, checkpoints run between two
	// commits (TRUNCATE ones among them), errors; calls of checkpointRound
	// begun and ended.
	rounds, held, truncates, errs atomic.Int64
	calls, ended                  atomic.Int64
}

// walBytes returns the size in bytes of a log of pages pages.
func (ck *checkpointer) walBytes(pages int64) int64 {
	return 32 + pages*ck.frame // the log's header, then its frames
}

// setWALPages sets the bounds of the log: the checkpointer starts past
// soft pages, writes wait past hard. The write connection's
// journal_size_limit follows soft, so that the size of the -wal file is
// the length of the log once past it.
func (d *DB) setWALPages(soft, hard int64) error {
	ck := &d.ck
	ck.soft.Store(ck.walBytes(soft))
	ck.hard.Store(ck.walBytes(hard))
	if _, err := d.w.Exec(fmt.Sprintf("PRAGMA journal_size_limit = %d", ck.walBytes(soft))); err != nil {
		return fmt.Errorf("set journal_size_limit: %w", err)
	}
	return nil
}

// walSize returns the size of the -wal file, 0 when there is none. It
// keeps the file open from the first look on, so that a look (one after
// every commit) is an fstat, not a walk of the file's path: that cost 3
// to 10 µs a commit on a loaded machine, an fstat 1.5 to 2.5. SQLite
// keeps the file while the write connection is open (it truncates it,
// journal_size_limit, and never deletes it then); should it be gone all
// the same (no link left: the last connection closed), the next look
// opens the file by its path again.
func (ck *checkpointer) walSize() int64 {
	ck.walMu.Lock()
	defer ck.walMu.Unlock()
	if ck.walClosed {
		st, err := os.Stat(ck.wal)
		if err != nil {
			return 0
		}
		return st.Size()
	}
	for range 2 {
		if !ck.walOpen {
			fd, err := syscall.Open(ck.wal, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
			if err != nil {
				return 0 // none yet, or unreadable: the next commit looks again
			}
			ck.walFD, ck.walOpen = fd, true
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(ck.walFD, &st); err == nil && st.Nlink > 0 {
			return st.Size
		}
		_ = syscall.Close(ck.walFD) // gone, or unreadable: open it by its path again
		ck.walOpen = false
	}
	return 0
}

// closeWAL closes the -wal file walSize keeps open; later looks walk its
// path. It is safe twice.
func (ck *checkpointer) closeWAL() {
	ck.walMu.Lock()
	defer ck.walMu.Unlock()
	if ck.walOpen {
		_ = syscall.Close(ck.walFD)
		ck.walOpen = false
	}
	ck.walClosed = true
}

// noteCommit is called by the committer after each commit. It reports
// whether the log passed walCheckpointPages, so that the checkpointer is
// to be woken (it starts it if need be), and whether the committer
// should stop for a TRUNCATE checkpoint: the log passed walHardPages.
// The committer records the stop before it wakes the checkpointer
// (afterCommit): woken first, the checkpointer could run its round
// before the stop was recorded, find none, and wait for the next wake
// while the committer waited for it, and every write with it.
func (d *DB) noteCommit() (wake, stop bool) {
	ck := &d.ck
	size := ck.walSize()
	if size <= ck.soft.Load() {
		return false, false
	}
	if !d.startCheckpointer() {
		return false, false
	}
	return true, d.overHard(size)
}

// overHard reports whether a log of size bytes is past the hard bound,
// and no TRUNCATE checkpoint failed less than checkpointRetry ago.
func (d *DB) overHard(size int64) bool {
	ck := &d.ck
	return size > ck.hard.Load() && int64(d.sinceOpen()) >= ck.hardAfter.Load()
}

// sinceOpen is the time since Open on the store's monotonic clock.
func (d *DB) sinceOpen() time.Duration { return clock.Since(d.clock, d.origin) }

// startCheckpointer starts the checkpointer if it is not running. It
// reports false once Close stopped it.
func (d *DB) startCheckpointer() bool {
	ck := &d.ck
	ck.mu.Lock()
	defer ck.mu.Unlock()
	if ck.closed {
		return false
	}
	if !ck.started {
		db, err := d.openCheckpointer()
		if err != nil {
			ck.fail(err)
			return false
		}
		ck.db, ck.started = db, true
		ck.wake = make(chan struct{}, 1)
		ck.stop = make(chan struct{})
		ck.done = make(chan struct{})
		go d.checkpointLoop(ck.wake, ck.stop, ck.done)
	}
	return true
}

// wakeCheckpointer wakes the checkpointer, which startCheckpointer
// started.
func (d *DB) wakeCheckpointer() {
	select {
	case d.ck.wake <- struct{}{}:
	default: // a wake is pending: the round it starts sees this commit too
	}
}

func (d *DB) checkpointLoop(wake, stop, done chan struct{}) {
	defer close(done)
	// A committer stopped at the hard bound waits for this goroutine:
	// when it stops, the committer goes on (Close runs the last
	// checkpoint).
	defer func() {
		if d.takeStopped() {
			d.resumeWrites()
		}
	}()
	for {
		select {
		case <-stop:
			return
		case <-wake:
		}
		began := d.clock.Mono()
		d.checkpointRound()
		t := d.clock.NewTimer(checkpointGap - clock.Since(d.clock, began))
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// checkpointRound copies the log into the database file when it passed
// walCheckpointPages, so that the next commit starts it over; see the
// top of this file. An error leaves the log as it is: the next wake
// tries again, and Close's checkpoint reports one that lasts.
func (d *DB) checkpointRound() {
	ck := &d.ck
	ck.calls.Add(1)
	defer ck.ended.Add(1)
	stopped := d.takeStopped()
	if !stopped && ck.walSize() <= ck.soft.Load() {
		return
	}
	ck.rounds.Add(1)
	if !stopped {
		prev := int64(-1)
		for range checkpointTries {
			r, err := d.checkpoint("PASSIVE")
			if err != nil {
				ck.fail(err)
				return
			}
			if r.busy {
				return // another checkpoint runs: the next wake tries again
			}
			if r.log < prev || (r.done() && r.log == prev) {
				return // the log started over; or all of it is copied: the next commit starts it over
			}
			// The frames written since the previous one started: those
			// the next one copies, about.
			grew := r.log - prev
			prev = r.log
			if grew <= checkpointSmall {
				break
			}
		}
		if !d.holdWrites() {
			return // closed: Close checkpoints
		}
	}
	defer d.resumeWrites()
	mode := "PASSIVE" // writes wait: it copies what the readers let it
	if d.overHard(ck.walSize()) {
		mode = "TRUNCATE"
		ck.truncates.Add(1)
	}
	ck.held.Add(1)
	r, err := d.checkpoint(mode)
	if err != nil {
		ck.fail(err)
	}
	if mode == "TRUNCATE" && (err != nil || r.busy) {
		ck.hardAfter.Store(int64(d.sinceOpen() + checkpointRetry))
	}
}

func (ck *checkpointer) fail(error) { ck.errs.Add(1) }

// ckResult is a row of PRAGMA wal_checkpoint.
type ckResult struct {
	busy   bool  // it could not run, or not to the end (readers, writers)
	log    int64 // frames in the log
	copied int64 // frames of the log in the database file
}

// done reports whether the whole log is in the database file.
func (r ckResult) done() bool { return !r.busy && r.log == r.copied }

// checkpoint runs a checkpoint in mode on the checkpointer's connection.
func (d *DB) checkpoint(mode string) (ckResult, error) {
	ck := &d.ck
	var r ckResult
	var busy int
	if err := ck.db.QueryRow("PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &r.log, &r.copied); err != nil {
		return r, fmt.Errorf("checkpoint (%s): %w", mode, err)
	}
	r.busy = busy != 0
	return r, nil
}

// initCheckpoints takes the checkpoints off the write connection: the
// checkpointer makes them (it starts when first needed).
func (d *DB) initCheckpoints() error {
	ck := &d.ck
	ck.wal = d.sidecar("-wal")
	var pageSize int64
	if err := d.w.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		return fmt.Errorf("read page_size: %w", err)
	}
	ck.frame = pageSize + 24
	if _, err := d.w.Exec(`PRAGMA wal_autocheckpoint = 0`); err != nil {
		return fmt.Errorf("turn off wal_autocheckpoint: %w", err)
	}
	return d.setWALPages(walCheckpointPages, walHardPages)
}

// openCheckpointer opens the checkpointer's connection. It syncs as the
// write connection does; it waits checkpointWait for the locks a
// TRUNCATE checkpoint needs.
func (d *DB) openCheckpointer() (*sql.DB, error) {
	db, err := sql.Open("sqlite3", dsn(d.path, url.Values{
		"_busy_timeout": {fmt.Sprint(checkpointWait.Milliseconds())},
		"_synchronous":  {"NORMAL"},
	}))
	if err != nil {
		return nil, fmt.Errorf("open checkpoint connection: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

// stopCheckpointer stops the checkpointer, once the committer stopped,
// and checkpoints the whole log (TRUNCATE) when it ran. It is safe twice.
func (d *DB) stopCheckpointer() error {
	ck := &d.ck
	defer ck.closeWAL()
	ck.mu.Lock()
	started := ck.started && !ck.closed
	ck.closed = true
	ck.mu.Unlock()
	if !started {
		return nil
	}
	close(ck.stop)
	<-ck.done
	r, err := d.checkpoint("TRUNCATE")
	if err == nil && r.busy {
		err = errors.New("checkpoint (TRUNCATE): readers or a writer kept it from finishing")
	}
	return errors.Join(err, ck.db.Close())
}
