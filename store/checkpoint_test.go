package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// bigEvents returns n events of about a page each.
func bigEvents(tag string, n int) []*engine.Event {
	pad := strings.Repeat("x", 3000)
	evs := make([]*engine.Event, n)
	for j := range evs {
		evs[j] = &engine.Event{Type: "test.wal", Data: map[string]any{"tag": tag, "j": j, "pad": pad}}
	}
	return evs
}

func walFileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path + "-wal")
	if os.IsNotExist(err) {
		return 0
	}
	mustRun(t, err)
	return st.Size()
}

// truncateWAL copies the whole log into the database file and empties
// it, waiting for the checkpointer's round if one runs (a checkpoint
// that finds another running gives up at once).
func truncateWAL(t testing.TB, d *DB) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var busy, log, copied int
		mustRun(t, d.w.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &log, &copied))
		if busy == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("wal_checkpoint(TRUNCATE) still busy after a minute (log %d frames, %d copied)", log, copied)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countEvents returns how many events of type test.wal are stored.
func countEvents(t *testing.T, d *DB) int {
	t.Helper()
	var n int
	mustRun(t, d.r.QueryRow(`SELECT count(*) FROM events WHERE type = 'test.wal'`).Scan(&n))
	return n
}

// The write connection never checkpoints; under writes without a pause
// the log stays within its hard bound plus the commit that passed it, the
// checkpointer copies it back beside the writes, and Close leaves no log.
func TestWALBoundedUnderWrites(t *testing.T) {
	d, path := openTest(t)
	ctx := context.Background()
	var auto int
	mustRun(t, d.w.QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&auto))
	if auto != 0 {
		t.Fatalf("wal_autocheckpoint on the write connection = %d, want 0", auto)
	}
	const soft, hard = 64, 256
	mustRun(t, d.setWALPages(soft, hard))

	// Four writers of ten pages or so a write, 12 times the hard bound in
	// all; a commit holds at most the four writes (about 60 pages with
	// the indexes).
	const writers, writes, perWrite = 4, 80, 10
	limit := d.ck.walBytes(hard + 4*(perWrite+5))
	var most atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range writes {
				if err := d.AppendEvents(ctx, bigEvents(fmt.Sprintf("%d-%d", w, i), perWrite)); err != nil {
					t.Error(err)
					return
				}
				for s := walFileSize(t, path); ; {
					m := most.Load()
					if s <= m || most.CompareAndSwap(m, s) {
						break
					}
				}
			}
		})
	}
	wg.Wait()
	if m := most.Load(); m > limit {
		t.Errorf("write-ahead log of %d bytes after %d writes of %d pages, want at most %d (%d pages)",
			m, writers*writes, perWrite, limit, hard)
	}
	t.Logf("log at most %d bytes (limit %d); checkpointer: %d rounds, %d checkpoints between commits, %d TRUNCATE",
		most.Load(), limit, d.ck.rounds.Load(), d.ck.held.Load(), d.ck.truncates.Load())
	if d.ck.rounds.Load() == 0 || d.ck.held.Load() == 0 {
		t.Errorf("checkpointer ran %d rounds, %d checkpoints between commits: want some", d.ck.rounds.Load(), d.ck.held.Load())
	}
	if n := d.ck.errs.Load(); n != 0 {
		t.Errorf("%d checkpoints failed", n)
	}
	if n := countEvents(t, d); n != writers*writes*perWrite {
		t.Errorf("%d events stored, want %d", n, writers*writes*perWrite)
	}

	mustRun(t, d.Close())
	if s := walFileSize(t, path); s != 0 {
		t.Errorf("write-ahead log of %d bytes after Close, want none", s)
	}
	d2, err := Open(path)
	mustRun(t, err)
	defer d2.Close()
	if n := countEvents(t, d2); n != writers*writes*perWrite {
		t.Errorf("after reopening: %d events stored, want %d", n, writers*writes*perWrite)
	}
}

// Past its soft bound the log is copied back by the checkpointer alone
// (no hard bound reached, no Close), and a later commit starts it over:
// the file shrinks back to the bound.
func TestWALStartsOverAfterCheckpoint(t *testing.T) {
	d, path := openTest(t)
	ctx := context.Background()
	const soft = 64
	mustRun(t, d.setWALPages(soft, 1<<20))
	// One commit of 200 pages: the log passes the soft bound whatever the
	// checkpointer does (it cannot copy a transaction back before it
	// committed). Twenty commits of 10 pages each could be copied back as
	// they came on a loaded machine, and the log never passed 64 pages.
	mustRun(t, d.AppendEvents(ctx, bigEvents("big", 200)))
	if s := walFileSize(t, path); s <= d.ck.walBytes(soft) {
		t.Fatalf("write-ahead log of %d bytes after 200 pages written, want more than %d", s, d.ck.walBytes(soft))
	}
	deadline := time.Now().Add(time.Minute)
	for i := 0; ; i++ {
		mustRun(t, d.AppendEvents(ctx, bigEvents(fmt.Sprint("small", i), 1)))
		if walFileSize(t, path) <= d.ck.walBytes(soft) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("write-ahead log still %d bytes after a minute of small writes; checkpointer: %d rounds, %d errors",
				walFileSize(t, path), d.ck.rounds.Load(), d.ck.errs.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d.ck.truncates.Load() != 0 {
		t.Errorf("%d TRUNCATE checkpoints, want none below the hard bound", d.ck.truncates.Load())
	}
}

// While a checkpoint copies the log into the database file, writes commit
// and reads answer: some of each begin and end while it copies.
//
// Each round gives the checkpoint a known log to copy: the test empties
// the log and rewrites, in one commit, a table of ckPadPages rows of a
// page each with the round's byte. Only then do three writers of one
// small event a commit and a reader of the newest one (a lookup in an
// index) start, so that every snapshot a reader holds includes the
// rewrite: a PASSIVE checkpoint copies the log only up to the oldest
// snapshot a reader holds.
//
// The checkpoint writes pages into the database file in the order of
// their numbers: an operation ran while it copied when the table's first
// page in the file held the round's byte before the operation began, and
// its last page did not yet after it ended. A checkpoint that holds a lock
// an operation needs while it copies leaves none of that kind. Operations
// that began and ended between the call's start and its end do not show
// it: a FULL checkpoint, which holds the write lock while it copies, lets
// writes commit while it waits for that lock.
//
// Rounds go on until 5 of each ran, up to rounds (a loaded machine may not
// run the goroutines during a copy). The log never holds more than a
// round's pages and writes; the events table grows by at most
// writesPerRound small events a writer a round.
func TestCheckpointBesideWritesAndReads(t *testing.T) {
	d, path := openTest(t)
	ctx := context.Background()
	mustRun(t, d.setWALPages(1<<20, 1<<21)) // the test runs the checkpoints
	ckdb, err := d.openCheckpointer()
	mustRun(t, err)
	d.ck.db = ckdb
	t.Cleanup(func() { ckdb.Close() })

	// A row of rowBytes takes a page of its own, at the page's end.
	const ckPadPages, rowBytes = 1000, 3000
	const before = 0xa0 // the byte before the first round's
	_, err = d.w.Exec(`CREATE TABLE ckpad (b BLOB)`)
	mustRun(t, err)
	_, err = d.w.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO ckpad SELECT ? FROM n`, ckPadPages, bytes.Repeat([]byte{before}, rowBytes))
	mustRun(t, err)
	truncateWAL(t, d)

	// The table's first and last pages in the database file, read beside
	// SQLite through a file closed after it: closing a file drops the
	// process's POSIX locks on it, SQLite's among them.
	dbFile, err := os.Open(path)
	mustRun(t, err)
	t.Cleanup(func() { d.Close(); dbFile.Close() })
	var pageSize int64
	mustRun(t, d.r.QueryRow(`PRAGMA page_size`).Scan(&pageSize))
	st, err := dbFile.Stat()
	mustRun(t, err)
	file := make([]byte, st.Size())
	_, err = dbFile.ReadAt(file, 0)
	mustRun(t, err)
	var pages []int64 // offsets
	for off := int64(0); off+pageSize <= int64(len(file)); off += pageSize {
		if bytes.Count(file[off+pageSize-rowBytes:off+pageSize], []byte{before}) == rowBytes {
			pages = append(pages, off)
		}
	}
	if len(pages) != ckPadPages {
		t.Fatalf("%d pages of the database file end with a row of the table, want %d", len(pages), ckPadPages)
	}
	holds := func(page int64, b byte) bool { // the page's last byte is b
		var got [1]byte
		if _, err := dbFile.ReadAt(got[:], page+pageSize-1); err != nil {
			t.Error(err)
		}
		return got[0] == b
	}
	first, last := pages[0], pages[len(pages)-1]

	const rounds, writesPerRound = 30, 200 // bounds: the test's time, the events table
	var wrote, read atomic.Int64
	missed := 0
	for round := range rounds {
		b := byte(before + 1 + round)
		truncateWAL(t, d)
		_, err := d.w.Exec(`UPDATE ckpad SET b = ?`, bytes.Repeat([]byte{b}, rowBytes))
		mustRun(t, err)

		// during runs op and reports whether it ran while the checkpoint
		// copied the round's pages.
		during := func(op func() error) bool {
			began := holds(first, b)
			if err := op(); err != nil {
				t.Error(err)
				return false
			}
			return began && !holds(last, b)
		}
		stop := make(chan struct{})
		running := func() bool {
			select {
			case <-stop:
				return false
			default:
				return !t.Failed()
			}
		}
		var wg sync.WaitGroup
		for w := range 3 {
			wg.Go(func() {
				for i := 0; i < writesPerRound && running(); i++ {
					ev := &engine.Event{Type: "test.ck", Data: map[string]any{"round": round, "w": w, "i": i}}
					if during(func() error { return d.AppendEvents(ctx, []*engine.Event{ev}) }) {
						wrote.Add(1)
					}
				}
			})
		}
		wg.Go(func() {
			for running() {
				if during(func() error { _, err := d.ListEvents(ctx, "test.ck", 1); return err }) {
					read.Add(1)
				}
			}
		})
		r, err := d.checkpoint("PASSIVE")
		close(stop)
		wg.Wait()
		mustRun(t, err)
		if t.Failed() {
			return
		}
		if !holds(first, b) || !holds(last, b) {
			missed++ // none of the round's operations counted
			t.Logf("round %d: the checkpoint copied %d frames of a log of %d, not the table's pages", round, r.copied, r.log)
		}
		if wrote.Load() >= 5 && read.Load() >= 5 {
			t.Logf("%d writes and %d reads ran while one of %d checkpoints copied", wrote.Load(), read.Load(), round+1)
			return
		}
	}
	t.Errorf("in %d checkpoints of %d pages or more (%d of them did not copy them): %d writes and %d reads ran while one copied, want 5 of each",
		rounds, ckPadPages, missed, wrote.Load(), read.Load())
}

// holdWrites waits for the commit in progress; writes made while it holds
// queue, and resumeWrites commits them.
func TestHoldWritesBetweenCommits(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	release := holdCommitter(t, d)
	held := make(chan bool, 1)
	go func() { held <- d.holdWrites() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d.gc.mu.Lock()
		waiting := d.gc.gap != nil
		d.gc.mu.Unlock()
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("holdWrites never waited for the commit in progress")
		}
		time.Sleep(time.Millisecond)
	}
	res := queueWrites(t, d, ctx, insertFn(d, "queued"))
	mustRun(t, release())
	if !<-held {
		t.Fatal("holdWrites: false on an open DB")
	}
	// The commit in progress ended and handed the committer over: the
	// queued write waits for resumeWrites.
	waitQueued(t, d, 1)
	if storedEvents(t, d)["queued"] {
		t.Fatal("a write queued while the writes are held was committed")
	}
	d.resumeWrites()
	mustRun(t, <-res[0])
	if !storedEvents(t, d)["queued"] {
		t.Error("the queued write is not stored after resumeWrites")
	}
	mustRun(t, d.Close())
	if d.holdWrites() {
		t.Error("holdWrites: true on a closed DB")
	}
}

// A reader that keeps an old snapshot keeps the log from starting over:
// the TRUNCATE checkpoint at the hard bound gives up after
// checkpointWait and the writes go on; once the reader ends, the log
// starts over.
func TestWALReaderKeepsSnapshot(t *testing.T) {
	d, path := openTest(t)
	ctx := context.Background()
	const soft, hard = 16, 64
	mustRun(t, d.setWALPages(soft, hard))
	mustRun(t, d.AppendEvents(ctx, bigEvents("before", 1)))
	tx, err := d.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	mustRun(t, err)
	defer tx.Rollback()
	var n int
	mustRun(t, tx.QueryRow(`SELECT count(*) FROM events WHERE type = 'test.wal'`).Scan(&n))

	for i := range 20 {
		mustRun(t, d.AppendEvents(ctx, bigEvents(fmt.Sprint(i), 10)))
	}
	if n := countEvents(t, d); n != 201 {
		t.Fatalf("%d events stored, want 201", n)
	}
	if d.ck.truncates.Load() == 0 {
		t.Errorf("no TRUNCATE checkpoint with the log past its hard bound (%d bytes)", walFileSize(t, path))
	}
	mustRun(t, tx.Rollback())

	deadline := time.Now().Add(time.Minute)
	for i := 0; walFileSize(t, path) > d.ck.walBytes(soft); i++ {
		if time.Now().After(deadline) {
			t.Fatalf("write-ahead log still %d bytes a minute after the reader ended; checkpointer: %d rounds, %d errors",
				walFileSize(t, path), d.ck.rounds.Load(), d.ck.errs.Load())
		}
		mustRun(t, d.AppendEvents(ctx, bigEvents(fmt.Sprint("small", i), 1)))
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWALBoundedThroughSymlink opens the database through a symbolic
// link (a state directory pointing at a data disk, say): SQLite keeps the
// log beside the link's target, and the checkpointer must watch that
// file, or it never runs and the log (the write connection never
// checkpoints) grows without bound.
func TestWALBoundedThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "disk", "hookd.db")
	mustRun(t, os.MkdirAll(filepath.Dir(target), 0o700))
	link := filepath.Join(dir, "state", "hookd.db")
	mustRun(t, os.MkdirAll(filepath.Dir(link), 0o700))
	mustRun(t, os.Symlink(target, link))
	d, err := Open(link)
	mustRun(t, err)
	defer d.Close()
	const soft, hard = 16, 64
	mustRun(t, d.setWALPages(soft, hard))
	// 20 times the hard bound, one writer: the log stays within the
	// bound plus a commit or two (10 events of a page, with the indexes).
	limit := d.ck.walBytes(2 * hard)
	var most int64
	for i := range 130 {
		mustRun(t, d.AppendEvents(context.Background(), bigEvents(fmt.Sprint(i), 10)))
		if s := walFileSize(t, target); s > most {
			most = s
		}
	}
	if most > limit {
		t.Errorf("write-ahead log beside the link's target reached %d bytes, want at most %d (%d pages); checkpointer: %d rounds",
			most, limit, hard, d.ck.rounds.Load())
	}
	mustRun(t, d.Close())
	if s := walFileSize(t, target); s != 0 {
		t.Errorf("write-ahead log of %d bytes after Close, want none", s)
	}
}

// walSize keeps the -wal file open and follows it: its size as it grows,
// a file deleted and made again (its last connection closed, another
// opened it) by its path again, and after closeWAL by its path.
func TestWALSizeFollowsTheFile(t *testing.T) {
	ck := &checkpointer{wal: filepath.Join(t.TempDir(), "x.db-wal")}
	if got := ck.walSize(); got != 0 {
		t.Fatalf("no file: size %d, want 0", got)
	}
	if err := os.WriteFile(ck.wal, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := ck.walSize(); got != 100 || !ck.walOpen {
		t.Fatalf("size %d (kept open %v), want 100 (open)", got, ck.walOpen)
	}
	f, err := os.OpenFile(ck.wal, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 200)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := ck.walSize(); got != 300 {
		t.Fatalf("grown: size %d, want 300", got)
	}
	if err := os.Remove(ck.wal); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ck.wal, make([]byte, 50), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := ck.walSize(); got != 50 {
		t.Fatalf("made again: size %d, want 50 (the deleted file's was 300)", got)
	}
	ck.closeWAL()
	ck.closeWAL()
	if ck.walOpen {
		t.Fatal("closeWAL left the file open")
	}
	if err := os.WriteFile(ck.wal, make([]byte, 70), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := ck.walSize(); got != 70 || ck.walOpen {
		t.Fatalf("after closeWAL: size %d (open %v), want 70 by its path", got, ck.walOpen)
	}
}

// The committer records its stop at the hard bound before it wakes the
// checkpointer. Woken first, the checkpointer could run its whole round
// before the stop was recorded (both PASSIVE checkpoints copy the log
// while the committer is between its commit and the stop), find no stop,
// and wait for the next wake while the committer waited for it: every
// write after it waited for ever (seen in a soak of 1 MB outputs under
// load). afterNoteCommit holds the committer at that point until no wake
// is pending and no round running (but one waiting for the commit to end).
func TestCheckpointerSeesStopAtHardBound(t *testing.T) {
	d, _ := openTest(t)
	ck := &d.ck
	// Writes of about 15 pages; the commit that passes one bound passes
	// both, and the round it wakes finds more than checkpointSmall frames
	// in the log: two PASSIVE checkpoints, the second of which finds the
	// log all copied and ends the round (the writes do not wait for it).
	mustRun(t, d.setWALPages(checkpointSmall+44, checkpointSmall+44))
	var stops atomic.Int64
	afterNoteCommit = func(stop bool) {
		if !stop {
			return
		}
		stops.Add(1)
		// Until no wake is pending and no round running, but for one
		// waiting for this commit to end (holdWrites).
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			d.gc.mu.Lock()
			holding := d.gc.gap != nil
			d.gc.mu.Unlock()
			if len(ck.wake) == 0 && (holding || ck.calls.Load() == ck.ended.Load()) {
				return
			}
		}
		t.Error("the checkpointer's round did not end")
	}
	defer func() { afterNoteCommit = nil }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; stops.Load() < 3; i++ {
		if i == 200 {
			t.Fatalf("the log passed its hard bound %d times in %d writes, want 3", stops.Load(), i)
		}
		if err := d.AppendEvents(ctx, bigEvents(fmt.Sprint(i), 10)); err != nil {
			d.wakeCheckpointer() // so that Close does not wait for ever too
			t.Fatalf("write %d, after %d stops at the hard bound: %v", i, stops.Load(), err)
		}
	}
}
