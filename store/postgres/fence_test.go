package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestFencedWrites: a write fenced by a scheduler's hold on the lease
// (Member.Fence) commits while it holds the lease; a node taking the
// lease over from a holder whose process died waits for such a write
// under way, so that what it reads after includes it; and once the lease
// moved, every fenced write of the old holder changes nothing
// (engine.ErrLeaseLost). Unfenced, the commit of a merge a killed
// scheduler had under way landed after its successor read the pending
// run: the successor released the run with the payload it had read and
// passed the merged event by as reached (an accepted event no step saw,
// TestClusterKills).
func TestFencedWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	lockA := lockNodes(ctx, t, url, "a", "b")[0]
	a, b := d.Member("a", 1, time.Hour), d.Member("b", 1, time.Hour)
	if err := d.InsertRun(b.Fence(ctx), &engine.Run{ID: "x", Hook: "h", Status: engine.StatusSkipped, QueuedAt: t0}); !errors.Is(err, engine.ErrLeaseLost) {
		t.Errorf("a fenced write of a node that never held the lease: %v", err)
	}
	if _, ok, err := a.Lead(ctx); err != nil || !ok {
		t.Fatalf("a takes the free lease: %v %v", ok, err)
	}
	p := &engine.Run{ID: "p", Hook: "h", Status: engine.StatusQueued, QueuedAt: t0, Event: json.RawMessage(`{"e1":1}`)}
	must(t, d.InsertRun(a.Fence(ctx), p))
	ev := &engine.Event{ID: "e2", Type: "x.y", Time: t0}
	must(t, d.AppendPendingEvent(ctx, ev))

	// a merges e2 into p; its process dies with the commit under way.
	inTx, proceed, merged := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	commit := sync.OnceFunc(func() { close(proceed) })
	defer commit() // a failure below does not leave the transaction open
	go func() {
		merged <- d.tx(beforeCommit(a.Fence(ctx), func() { close(inTx); <-proceed }), func(tx pgx.Tx) error {
			m := *p
			m.Event = json.RawMessage(`{"e1":1,"e2":1}`)
			return updateQueued(ctx, tx, &m, engine.Merged{EventSeq: ev.Seq})
		})
	}()
	<-inTx
	must(t, lockA.Unlock())
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if vacant, err := b.Vacant(ctx); err != nil {
			t.Fatal(err)
		} else if vacant {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b never saw the lease of dead a vacant")
		}
	}
	led := make(chan error, 1)
	go func() {
		_, ok, err := b.Lead(ctx)
		if err == nil && !ok {
			err = errors.New("b did not take the lease")
		}
		led <- err
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var waiting int
		must(t, d.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO leases%'`).Scan(&waiting))
		if waiting == 1 {
			break
		}
		select {
		case err := <-led:
			t.Fatalf("b took the lease while a's fenced write was under way (%v)", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("b's takeover does not wait for a's fenced write within a minute")
		}
	}
	commit()
	must(t, <-merged)
	must(t, <-led)
	// What b reads as the scheduler now includes the merge, and the
	// record that e2 reached h with it.
	w, err := b.Waiting(ctx)
	must(t, err)
	if len(w) != 1 || string(w[0].Event) != `{"e1":1,"e2":1}` {
		t.Errorf("b reads the waiting runs %v, want p with e1 and e2", w)
	}
	if hooks, err := d.DispatchedTo(ctx, ev.Seq); err != nil || !slices.Equal(hooks, []string{"h"}) {
		t.Errorf("e2 reached %v %v, want h", hooks, err)
	}

	// a, which has not noticed, writes on: nothing of it lands.
	stale := a.Fence(ctx)
	m := *p
	m.Event = json.RawMessage(`{"e3":1}`)
	fin := *p
	fin.Status, fin.Reason, fin.FinishedAt = engine.StatusCancelled, "stale", t0
	for what, err := range map[string]error{
		"insert":          d.InsertRun(stale, &engine.Run{ID: "y", Hook: "h", Status: engine.StatusQueued, QueuedAt: t0}),
		"merge":           d.UpdateQueued(stale, &m, engine.Merged{}),
		"finish":          d.FinishRun(stale, &fin),
		"mark":            d.MarkDispatched(stale, ev.Seq),
		"merge of a fire": a.MergeFire(stale, &m, "f1"),
	} {
		if !errors.Is(err, engine.ErrLeaseLost) {
			t.Errorf("a's fenced %s after b took the lease: %v, want ErrLeaseLost", what, err)
		}
	}
	if got, err := d.GetRun(ctx, "p"); err != nil || got.Status != engine.StatusQueued || string(got.Event) != `{"e1":1,"e2":1}` {
		t.Errorf("p after a's stale writes: %+v %v", got, err)
	}
	if _, err := d.GetRun(ctx, "y"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("a's stale insert: %v", err)
	}
	if pend, err := d.PendingEvents(ctx, 10); err != nil || len(pend) != 1 {
		t.Errorf("e2 after a's stale mark: pending %v %v", pend, err)
	}
	// b's own fenced writes go through.
	must(t, d.MarkDispatched(b.Fence(ctx), ev.Seq))
}

// TestFencedWriteBounded: a fenced transaction holds the lease's row
// from its fence to its commit, and with it every renewal and takeover
// of the lease. One whose client stops there (frozen, or cut off without
// the server knowing) is ended by the server after a heartbeat interval:
// the holder's renewal then goes through. Before, the renewal waited for
// as long as the transaction lasted, and no node scheduled meanwhile. A
// fenced write that waits for a lock (a stalled table) does not hold the
// row at all: its fence comes last. Before, it held the row while it
// waited, and the holder's renewal, which PostgreSQL lets such share
// lockers pass, could starve until the lease ran out.
func TestFencedWriteBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	a := d.Member("a", 1, 2*time.Second) // a heartbeat interval of 400 ms
	if _, ok, err := a.Lead(ctx); err != nil || !ok {
		t.Fatalf("a takes the free lease: %v %v", ok, err)
	}
	p := &engine.Run{ID: "p", Hook: "h", Status: engine.StatusQueued, QueuedAt: t0}
	must(t, d.InsertRun(a.Fence(ctx), p))
	// renews says whether a renews its lease within 20 s.
	renews := func() bool {
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_, ok, err := a.Lead(rctx)
		return err == nil && ok
	}

	// A fenced transaction whose client stops before its commit.
	inTx, resume, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- d.tx(beforeCommit(a.Fence(ctx), func() { close(inTx); <-resume }), func(tx pgx.Tx) error {
			return updateQueued(ctx, tx, p, engine.Merged{})
		})
	}()
	<-inTx
	if !renews() {
		t.Error("a cannot renew its lease while a fenced transaction of a stopped client holds its row")
	}
	close(resume)
	if err := <-done; err == nil {
		t.Error("the stopped client's transaction committed after the server should have ended it")
	}

	// A fenced write waiting for a lock, with the lease's row held.
	if !renews() {
		t.Fatal("a cannot renew its lease")
	}
	other, err := d.pool.Begin(ctx)
	must(t, err)
	defer other.Rollback(ctx)
	_, err = other.Exec(ctx, `SELECT 1 FROM runs WHERE id = 'p' FOR UPDATE`)
	must(t, err)
	waited := make(chan error, 1)
	go func() { waited <- d.UpdateQueued(a.Fence(ctx), p, engine.Merged{}) }()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		var waiting int
		must(t, d.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE runs%'`).Scan(&waiting))
		if waiting == 1 {
			break
		}
		select {
		case err := <-waited:
			t.Fatalf("the fenced write did not wait for the lock: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the fenced write is not seen waiting for the lock")
		}
	}
	if !renews() {
		t.Error("a cannot renew its lease while a fenced write waits for a lock")
	}
	must(t, other.Rollback(ctx))
	if err := <-waited; err != nil {
		t.Errorf("the fenced write, once the lock it waited for was let go: %v", err)
	}
}

// beforeCommit returns ctx with f, which a fenced transaction calls
// between its fence and its commit (DB.tx).
func beforeCommit(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, beforeCommitKey{}, f)
}

// TestFenceTimeoutIsNotLeaseLost: a fenced write whose lease check waits
// past its bound for the lease's row (a slow commit of another node's
// look at the lease holds it) fails with the database's error, to be
// made again, not with engine.ErrLeaseLost, which stops the scheduler:
// its lease is still its own.
func TestFenceTimeoutIsNotLeaseLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	a := d.Member("a", 1, 2*time.Second) // a bound of 400 ms
	if _, ok, err := a.Lead(ctx); err != nil || !ok {
		t.Fatalf("a takes the free lease: %v %v", ok, err)
	}
	other, err := d.pool.Begin(ctx)
	must(t, err)
	defer other.Rollback(ctx)
	_, err = other.Exec(ctx, `SELECT 1 FROM leases FOR UPDATE`)
	must(t, err)
	err = d.InsertRun(a.Fence(ctx), &engine.Run{ID: "r", Hook: "h", Status: engine.StatusSkipped, QueuedAt: t0})
	if err == nil || errors.Is(err, engine.ErrLeaseLost) {
		t.Errorf("a fenced write whose check timed out: %v; want the database's error, not ErrLeaseLost", err)
	}
}

// TestFencedWriteNotifyLock: a fenced write that wakes the nodes (a
// release, the answer to a forwarded fire) commits while other commits
// hold the server's notify lock, as a burst of notifying commits does:
// its fence's lock_timeout, one heartbeat interval, applies to every lock
// its transaction waits for, the one a notifying COMMIT takes included.
// Before, its commit waited for that lock with the lease's row held and
// failed at the bound ("canceling statement due to lock timeout"): the
// run was not released, the fire not answered. Now the nodes are told
// after the commit, which then waits for no lock, and the lease's row is
// free while the notification waits its turn: the holder renews. The
// write returns while the lock is held too: the notification waits for
// it at most a heartbeat interval (DB.wake).
//
// Not parallel: while the notify lock is held, every notifying commit of
// the server waits, the other tests' too.
func TestFencedWriteNotifyLock(t *testing.T) {
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	a := d.Member("a", 1, 2*time.Second) // a bound of 400 ms
	if _, ok, err := a.Lead(ctx); err != nil || !ok {
		t.Fatalf("a takes the free lease: %v %v", ok, err)
	}
	must(t, a.RequestFire(ctx, engine.FireRequest{ID: "f1", Hook: "h"}))
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	work, err := d.Listen(lctx, ChannelWork)
	must(t, err)

	release := pgtest.HoldNotifyLock(t)
	defer release()
	type write struct {
		name      string
		do        func() error
		committed func() bool
	}
	writes := []write{
		{"release", func() error {
			return a.Release(ctx, &engine.Run{ID: "r1", Hook: "h", Status: engine.StatusQueued, QueuedAt: t0}, 0)
		}, func() bool {
			var claimable bool
			err := d.pool.QueryRow(ctx, `SELECT claimable FROM runs WHERE id = 'r1'`).Scan(&claimable)
			return err == nil && claimable
		}},
		{"answer to a fire", func() error {
			n, err := a.DecideFires(ctx, func(context.Context, engine.FireRequest) (engine.FireAnswer, error) {
				return engine.FireAnswer{Run: &engine.Run{ID: "f1", Hook: "h", Status: engine.StatusQueued}}, nil
			})
			if err == nil && n != 1 {
				err = errors.New("no fire decided")
			}
			return err
		}, func() bool {
			_, ok, err := a.FireAnswer(ctx, "f1")
			return err == nil && ok
		}},
	}
	for _, w := range writes {
		done := make(chan error, 1)
		go func() { done <- w.do() }()
		// It commits, and returns, while the lock is held: its wake-up
		// gives up after its own bound. Before, a release waited for the
		// lock for the rest of its StoreTimeout, a fire's answer until
		// the lock came.
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the %s, while other commits hold the notify lock: %v", w.name, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("the %s does not return within a minute while other commits hold the notify lock", w.name)
		}
		if !w.committed() {
			t.Errorf("the %s returned, not committed", w.name)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, ok, err := a.Lead(rctx); err != nil || !ok {
		t.Errorf("a cannot renew its lease while its writes' notifications wait for the notify lock: %v %v", ok, err)
	}

	release()
	if t.Failed() {
		return
	}
	// Once the lock is free, a release wakes the nodes (the wake-ups
	// given up while it was held may come late, or not at all).
	must(t, a.Release(ctx, &engine.Run{ID: "r2", Hook: "h2", Status: engine.StatusQueued, QueuedAt: t0}, 0))
	timeout := time.After(time.Minute)
	for {
		select {
		case hook := <-work:
			if hook == "h2" {
				return
			}
		case <-timeout:
			t.Fatal("the release did not wake the nodes (NOTIFY hookd_work)")
		}
	}
}
