package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/pgtest"
	"github.com/jackc/pgx/v5"
)

// releaseAll makes every queued run claimable, as a scheduler's Release
// does, for tests of the claims.
func releaseAll(t *testing.T, d *DB) {
	t.Helper()
	if _, err := d.pool.Exec(context.Background(), `UPDATE runs SET claimable = true WHERE status = 'queued'`); err != nil {
		t.Fatal(err)
	}
}

// TestMemberRelease: only the lease holder releases runs; a released run
// is claimable and in flight, a queued one the scheduler has not released
// waits and is not claimed; a slot is released once; the event the run
// was started by is marked dispatched in the same transaction.
func TestMemberRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	a, b := d.Member("a", 4, time.Minute), open(t, url).Member("b", 4, time.Minute)
	hooks := []*engine.Hook{{Name: "h"}, {Name: "g"}}
	must(t, a.Loaded(ctx, hooks))
	must(t, b.Loaded(ctx, hooks))
	if _, ok, err := a.Lead(ctx); err != nil || !ok {
		t.Fatalf("a takes the free lease: %v %v", ok, err)
	}
	if holder, ok, err := b.Lead(ctx); err != nil || ok || holder != "a" {
		t.Fatalf("b while a holds the lease: %q %v %v", holder, ok, err)
	}
	ev := &engine.Event{ID: "ev1", Type: "x.y", Time: t0}
	must(t, d.AppendPendingEvent(ctx, ev))
	slot := t0.Add(time.Minute)
	must(t, a.Release(ctx, &engine.Run{ID: "r1", Hook: "h", Status: engine.StatusRunning, Slot: slot, QueuedAt: t0}, ev.Seq))
	if err := b.Release(ctx, &engine.Run{ID: "r2", Hook: "h", Status: engine.StatusRunning, QueuedAt: t0}, 0); !errors.Is(err, engine.ErrLeaseLost) {
		t.Errorf("b releases without the lease: %v", err)
	}
	if err := a.Release(ctx, &engine.Run{ID: "r3", Hook: "h", Status: engine.StatusRunning, Slot: slot, QueuedAt: t0}, 0); !errors.Is(err, engine.ErrSlotTaken) {
		t.Errorf("a releases a slot twice: %v", err)
	}
	if pend, _ := d.PendingEvents(ctx, 10); len(pend) != 0 {
		t.Errorf("the event is still pending after the run it started was released: %v", pend)
	}
	// A queued run waits until released.
	must(t, d.InsertRun(ctx, &engine.Run{ID: "q1", Hook: "g", Status: engine.StatusQueued, QueuedAt: t0}))
	if w, _ := a.Waiting(ctx); len(w) != 1 || w[0].ID != "q1" {
		t.Errorf("waiting: %v", w)
	}
	if f, _ := a.InFlight(ctx); len(f) != 1 || f[0].ID != "r1" {
		t.Errorf("in flight: %v", f)
	}
	got, err := b.Claim(ctx, 10)
	must(t, err)
	if len(got) != 1 || got[0].ID != "r1" {
		t.Fatalf("b claimed %v, want r1 only", got)
	}
	// The waiting run, released: its queued record is reused.
	must(t, a.Release(ctx, &engine.Run{ID: "q1", Hook: "g", Status: engine.StatusRunning, QueuedAt: t0}, 0))
	if got, _ := a.Claim(ctx, 10); len(got) != 1 || got[0].ID != "q1" {
		t.Errorf("a claimed %v, want q1", got)
	}
	if f, _ := a.Final(ctx, []string{"r1", "q1"}); len(f) != 0 {
		t.Errorf("final before finishing: %v", f)
	}
	got[0].Status, got[0].FinishedAt = engine.StatusCompleted, t0.Add(time.Second)
	must(t, b.FinishOn(ctx, got[0]))
	if f, _ := a.Final(ctx, []string{"r1", "q1"}); len(f) != 1 || f[0].ID != "r1" || f[0].Status != engine.StatusCompleted {
		t.Errorf("final after r1 finished: %v", f)
	}
}

// TestMemberTakesOverOwnLease: a new process of the lease holder's node
// name (the old one died: it held the node lock) takes the lease at once,
// with a new token, so the old process's fenced writes fail.
func TestMemberTakesOverOwnLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	old, other := d.Member("a", 1, time.Minute), d.Member("b", 1, time.Minute)
	if _, ok, _ := old.Lead(ctx); !ok {
		t.Fatal("a takes the free lease")
	}
	if _, ok, _ := other.Lead(ctx); ok {
		t.Fatal("b took a lease a holds")
	}
	restarted := d.Member("a", 1, time.Minute)
	if _, ok, err := restarted.Lead(ctx); err != nil || !ok {
		t.Fatalf("the restarted node a: %v %v", ok, err)
	}
	if err := old.Release(ctx, &engine.Run{ID: "r", Hook: "h", Status: engine.StatusRunning, QueuedAt: t0}, 0); !errors.Is(err, engine.ErrLeaseLost) {
		t.Errorf("the old process released a run: %v", err)
	}
	must(t, restarted.Release(ctx, &engine.Run{ID: "r", Hook: "h", Status: engine.StatusRunning, QueuedAt: t0}, 0))
	// Given up, the lease goes to the next node at once.
	must(t, restarted.Resign(ctx))
	if holder, ok, err := other.Lead(ctx); err != nil || !ok || holder != "b" {
		t.Errorf("b after a resigned: %q %v %v", holder, ok, err)
	}
}

// TestLockNode: one live process per node name; nodes of other names
// share the database; an offline command (the exclusive daemon lock) is
// refused while any node runs, and a node while it holds the database.
func TestLockNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	a, err := LockNode(ctx, url, "a")
	must(t, err)
	if _, err := LockNode(ctx, url, "a"); !errors.Is(err, engine.ErrLocked) {
		t.Errorf("a second process as node a: %v", err)
	}
	b, err := LockNode(ctx, url, "b")
	must(t, err)
	if _, err := Lock(ctx, url, ""); !errors.Is(err, engine.ErrLocked) {
		t.Errorf("the offline lock while nodes run: %v", err)
	}
	must(t, a.Unlock())
	must(t, b.Unlock())
	// The server drops a closed session's locks a moment after the close.
	off := lockSoon(t, func() (*DaemonLock, error) { return Lock(ctx, url, "") })
	if _, err := LockNode(ctx, url, "c"); !errors.Is(err, engine.ErrLocked) {
		t.Errorf("a node while an offline command holds the database: %v", err)
	}
	var ce *CommandError
	if _, err := LockNode(ctx, url, "c"); !errors.As(err, &ce) || ce.Transient() {
		t.Errorf("a node while an unnamed offline command holds the database: %v, want a CommandError of unknown holder", err)
	}
	must(t, off.Unlock())
	// A named command: the node learns which, and may wait for it.
	off = lockSoon(t, func() (*DaemonLock, error) { return Lock(ctx, url, "fire") })
	_, err = LockNode(ctx, url, "c")
	if !errors.As(err, &ce) || !ce.Transient() || ce.Command != "fire" || ce.PID != os.Getpid() || !errors.Is(err, engine.ErrLocked) {
		t.Errorf("a node while `hookd fire` holds the database: %v (%+v), want a CommandError naming it", err, ce)
	}
	if !strings.Contains(fmt.Sprint(err), fmt.Sprintf("(hookd fire, pid %d)", os.Getpid())) {
		t.Errorf("error %q does not name the command", err)
	}
	// Another offline command learns it too (it may try again later).
	_, err = Lock(ctx, url, "emit")
	if !errors.As(err, &ce) || !ce.Transient() || ce.Who() != fmt.Sprintf("hookd fire, pid %d", os.Getpid()) || !errors.Is(err, engine.ErrLocked) {
		t.Errorf("an offline command while `hookd fire` holds the database: %v (%+v), want a CommandError naming it", err, ce)
	}
	must(t, off.Unlock())
	must(t, lockSoon(t, func() (*DaemonLock, error) { return LockNode(ctx, url, "a") }).Unlock())
}

// lockSoon takes a lock with take, waiting while another session holds
// it (a session just closed holds it until the server notices).
func lockSoon(t *testing.T, take func() (*DaemonLock, error)) *DaemonLock {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		l, err := take()
		if err == nil {
			return l
		}
		if !errors.Is(err, engine.ErrLocked) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReleaseRecordsDispatch: a release of a run that a pending event
// triggered records, in its transaction, the hook the event reached; one
// refused (a slot taken) records nothing; a release that marks the event
// dispatched drops the event's records.
func TestReleaseRecordsDispatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	a := d.Member("a", 4, time.Minute)
	if _, ok, err := a.Lead(ctx); err != nil || !ok {
		t.Fatalf("a takes the free lease: %v %v", ok, err)
	}
	ev := &engine.Event{ID: "ev1", Type: "x.y", Time: t0}
	must(t, d.AppendPendingEvent(ctx, ev))
	slot := t0.Add(time.Minute)
	must(t, a.Release(ctx, &engine.Run{ID: "r1", Hook: "h1", Status: engine.StatusRunning, Slot: slot, QueuedAt: t0, EventSeq: ev.Seq}, 0))
	if err := a.Release(ctx, &engine.Run{ID: "r2", Hook: "h1b", Status: engine.StatusRunning, Slot: slot, QueuedAt: t0,
		EventSeq: ev.Seq}, 0); err != nil {
		t.Fatalf("another hook's slot: %v", err)
	}
	must(t, a.Release(ctx, &engine.Run{ID: "s3", Hook: "h3", Status: engine.StatusRunning, Slot: slot, QueuedAt: t0}, 0))
	if err := a.Release(ctx, &engine.Run{ID: "r3", Hook: "h3", Status: engine.StatusRunning, Slot: slot, QueuedAt: t0,
		EventSeq: ev.Seq}, 0); !errors.Is(err, engine.ErrSlotTaken) {
		t.Fatalf("a slot released twice: %v", err)
	}
	if hooks, err := d.DispatchedTo(ctx, ev.Seq); err != nil || len(hooks) != 2 || hooks[0] != "h1" || hooks[1] != "h1b" {
		t.Errorf("ev1 reached %v %v; want [h1 h1b]", hooks, err)
	}
	must(t, a.Release(ctx, &engine.Run{ID: "r4", Hook: "h4", Status: engine.StatusRunning, QueuedAt: t0}, ev.Seq))
	if hooks, err := d.DispatchedTo(ctx, ev.Seq); err != nil || len(hooks) != 0 {
		t.Errorf("ev1's records after the release that marked it: %v %v; want none", hooks, err)
	}
	if pend, _ := d.PendingEvents(ctx, 10); len(pend) != 0 {
		t.Errorf("still pending: %v", pend)
	}
}

// TestLeaseMovesWhenHolderDies: the scheduler lease moves as soon as its
// holder's process is gone (its node lock freed with its session), long
// before the lease runs out, with the next token; never while the holder
// lives; and never to a node whose own node lock does not show (session
// locks hidden, as behind a pooler in transaction mode), which waits for
// the lease to run out. Shown live first: before the holder dies, the
// other node cannot take it.
func TestLeaseMovesWhenHolderDies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	lockA := lockNodes(ctx, t, url, "a", "b")[0]
	a, b := d.Member("a", 1, time.Hour), d.Member("b", 1, time.Hour)
	unlocked := d.Member("c", 1, time.Hour) // no LockNode: its own lock never shows
	if _, ok, err := a.Lead(ctx); err != nil || !ok {
		t.Fatalf("a takes the free lease: %v %v", ok, err)
	}
	before, _ := a.current()
	for _, m := range []*Member{b, unlocked} {
		if vacant, err := m.Vacant(ctx); err != nil || vacant {
			t.Errorf("%s: the lease of live a is vacant: %v %v", m.name, vacant, err)
		}
		if _, ok, err := m.Lead(ctx); err != nil || ok {
			t.Errorf("%s took the lease of live a: %v %v", m.name, ok, err)
		}
	}

	must(t, lockA.Unlock()) // a's process dies: its session ends
	waitVacant := func(m *Member) bool {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if vacant, err := m.Vacant(ctx); err != nil {
				t.Fatal(err)
			} else if vacant {
				return true
			}
		}
		return false
	}
	if !waitVacant(b) {
		t.Fatal("b never saw the lease of dead a vacant")
	}
	if vacant, err := unlocked.Vacant(ctx); err != nil || vacant {
		t.Errorf("c, whose own lock does not show, saw the lease vacant: %v %v", vacant, err)
	}
	if _, ok, err := unlocked.Lead(ctx); err != nil || ok {
		t.Errorf("c, whose own lock does not show, took the lease before it ran out: %v %v", ok, err)
	}
	holder, ok, err := b.Lead(ctx)
	if err != nil || !ok || holder != "b" {
		t.Fatalf("b after a died: %q %v %v", holder, ok, err)
	}
	after, _ := b.current()
	if after.Token != before.Token+1 {
		t.Errorf("b took the lease with token %d, want %d", after.Token, before.Token+1)
	}
	if err := a.Release(ctx, &engine.Run{ID: "r", Hook: "h", Status: engine.StatusRunning, QueuedAt: t0}, 0); !errors.Is(err, engine.ErrLeaseLost) {
		t.Errorf("dead a's fenced write went through: %v", err)
	}
	if vacant, err := b.Vacant(ctx); err != nil || vacant {
		t.Errorf("the holder sees its own lease vacant: %v %v", vacant, err)
	}
}

// TestLockHolderGoneBetweenTryAndLook: an offline command that lets go
// of the database between a node's refused try and its look for the
// holder does not make the node give up, as if an unknown holder kept
// it: the node tries again and takes the lock (a daemon waiting for a
// `hookd fire` exited "an offline hookd command holds the database"
// when the fire ended in that window). An offline command alike. Not
// parallel: it sets afterRefused, which every Lock and LockNode runs.
func TestLockHolderGoneBetweenTryAndLook(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	for _, take := range []struct {
		name string
		lock func() (*DaemonLock, error)
	}{
		{"node", func() (*DaemonLock, error) { return LockNode(ctx, url, "a") }},
		{"offline command", func() (*DaemonLock, error) { return Lock(ctx, url, "emit") }},
	} {
		off := lockSoon(t, func() (*DaemonLock, error) { return Lock(ctx, url, "fire") })
		afterRefused = func() { must(t, off.Unlock()) }
		l, err := take.lock()
		afterRefused = nil
		if err != nil {
			t.Fatalf("%s, when the fire let go after the refused try: %v", take.name, err)
		}
		must(t, l.Unlock())
	}
}

// TestLeadGivenUpCommitsNothing: a renewal of the scheduler lease that
// its client gave up on (its deadline, the Keeper's, passed while a
// transaction elsewhere held the lease's row) changes nothing once the
// row is free. Before, the renewal's UPDATE, whose client had closed its
// connection, waited on for the row in the server and renewed the lease
// once it had it: its holder, told the renewal failed, took the lease for
// lost while the row named it.
func TestLeadGivenUpCommitsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	lock, err := LockNode(ctx, url, "a")
	must(t, err)
	defer lock.Unlock()
	a := d.Member("a", 1, 2*time.Second)
	if _, ok, err := a.Lead(ctx); err != nil || !ok {
		t.Fatalf("a takes the free lease: %v %v", ok, err)
	}
	var before time.Time
	must(t, d.pool.QueryRow(ctx, `SELECT expires_at FROM leases`).Scan(&before))

	conn, err := pgx.Connect(ctx, url)
	must(t, err)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	must(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SELECT 1 FROM leases FOR UPDATE`)
	must(t, err)
	lctx, cancel := context.WithTimeout(ctx, a.Timeout()-a.Interval()) // as lease.Keeper bounds a renewal
	_, _, gaveUp := a.Lead(lctx)
	cancel()
	if gaveUp == nil {
		t.Fatal("a renewed the lease through a lock held elsewhere")
	}
	must(t, tx.Commit(ctx))
	// The server is done with the renewal: none is under way.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var busy int
		must(t, d.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND pid <> pg_backend_pid() AND state <> 'idle' AND query LIKE '%INSERT INTO leases%'`).Scan(&busy))
		if busy == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the renewal a gave up on is still under way a minute after the lease's row was freed")
		}
	}
	var after time.Time
	must(t, d.pool.QueryRow(ctx, `SELECT expires_at FROM leases`).Scan(&after))
	if !after.Equal(before) {
		t.Errorf("the renewal a gave up on (%v) renewed the lease once the row was free: it expires at %v, was %v",
			gaveUp, after, before)
	}
}

// TestMemberReleased: Released reads whether a run is released (queued
// and claimable, running or final; not a queued run the scheduler has not
// released, nor one with no record), and a release whose commit is under
// way (its caller may have given up waiting for it) is waited for: read
// back then, it is released. Without the wait, the read came before that
// commit, and a release made was taken for one not made.
func TestMemberReleased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	a := d.Member("a", 4, time.Minute)
	must(t, a.Loaded(ctx, []*engine.Hook{{Name: "h"}}))
	if _, ok, err := a.Lead(ctx); err != nil || !ok {
		t.Fatalf("a takes the free lease: %v %v", ok, err)
	}
	released := func(id string, want bool) {
		t.Helper()
		if got, err := a.Released(ctx, id); err != nil || got != want {
			t.Errorf("run %s released: %v %v, want %v", id, got, err, want)
		}
	}
	released("none", false)
	must(t, d.InsertRun(ctx, &engine.Run{ID: "q", Hook: "h", Status: engine.StatusQueued, QueuedAt: t0}))
	released("q", false)
	must(t, a.Release(ctx, &engine.Run{ID: "q", Hook: "h", Status: engine.StatusRunning, QueuedAt: t0}, 0))
	released("q", true)
	got, err := a.Claim(ctx, 1)
	must(t, err)
	if len(got) != 1 {
		t.Fatalf("claimed %v", got)
	}
	released("q", true)
	got[0].Status, got[0].FinishedAt = engine.StatusCompleted, t0.Add(time.Second)
	must(t, a.FinishOn(ctx, got[0]))
	released("q", true)

	// A release whose commit is under way.
	inTx, proceed, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	commit := sync.OnceFunc(func() { close(proceed) })
	defer commit()
	go func() {
		done <- a.Release(beforeCommit(ctx, func() { close(inTx); <-proceed }),
			&engine.Run{ID: "c", Hook: "h", Status: engine.StatusRunning, QueuedAt: t0}, 0)
	}()
	<-inTx
	type answer struct {
		ok  bool
		err error
	}
	read := make(chan answer, 1)
	go func() {
		ok, err := a.Released(ctx, "c")
		read <- answer{ok, err}
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		var waiting int
		must(t, d.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'SELECT 1 FROM leases%'`).Scan(&waiting))
		if waiting == 1 {
			break
		}
		select {
		case r := <-read:
			t.Fatalf("run c read back while its release's commit was under way (released: %v %v), not after it", r.ok, r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the read-back of run c is not seen waiting for its release's commit")
		}
	}
	commit()
	must(t, <-done)
	if r := <-read; r.err != nil || !r.ok {
		t.Errorf("run c, read back once its release committed: released %v %v", r.ok, r.err)
	}
}
