package lease_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/lease"
	"github.com/hookd/hookd/store/pgtest"
	"github.com/hookd/hookd/store/postgres"
	"github.com/hookd/hookd/store/postgres/postgrestest"
	"github.com/jackc/pgx/v5"
)

// TestMain stops the PostgreSQL server when the tests end, and removes
// its cluster.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// node is a Keeper on a real PostgreSQL cluster member, with what it
// told its owner.
type node struct {
	*lease.Keeper
	stopping chan struct{}

	mu       sync.Mutex
	took     int
	held     int
	lost     []error
	takeOver error // TakeOver's answer
}

func newNode(ctx context.Context, t *testing.T, db *postgres.DB, url, name string, timeout time.Duration) *node {
	t.Helper()
	return newNodeOf(ctx, t, url, name, db.Member(name, 1, timeout))
}

// newNodeOf is newNode holding the lease with member, the cluster member
// of node name (or a test's wrapper of it).
func newNodeOf(ctx context.Context, t *testing.T, url, name string, member lease.Member) *node {
	t.Helper()
	l, err := postgres.LockNode(ctx, url, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Unlock() })
	n := &node{stopping: make(chan struct{})}
	n.Keeper = lease.New(lease.Config{
		Member:   member,
		Clock:    clock.System{},
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Stopping: n.stopping,
		TakeOver: func(context.Context) error { n.mu.Lock(); defer n.mu.Unlock(); return n.takeOver },
		Took:     func() { n.mu.Lock(); n.took++; n.mu.Unlock() },
		Held:     func(context.Context) { n.mu.Lock(); n.held++; n.mu.Unlock() },
		Lost:     func(err error) { n.mu.Lock(); n.lost = append(n.lost, err); n.mu.Unlock() },
	})
	return n
}

func (n *node) told() (took, held int, lost []error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.took, n.held, append([]error(nil), n.lost...)
}

func openDB(ctx context.Context, t *testing.T) (*postgres.DB, string) {
	t.Helper()
	url := postgrestest.NewDatabase(t)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, url
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
	}
}

// One node takes the free lease and is told once; another sees it held.
// When the holder stops, it gives the lease up at once (it would last
// another minute otherwise) and the other node, running, takes it over.
func TestKeeperHandsOverWhenStopping(t *testing.T) {
	t.Parallel() // a database of its own
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, url := openDB(ctx, t)
	a := newNode(ctx, t, db, url, "node-a", time.Minute)
	b := newNode(ctx, t, db, url, "node-b", time.Minute)

	a.Try(ctx)
	if !a.Leading() || a.Holder() != "node-a" {
		t.Fatalf("node A: leading %v, holder %q; want A to hold the free lease", a.Leading(), a.Holder())
	}
	a.Try(ctx) // a renewal: not a second takeover
	if took, _, lost := a.told(); took != 1 || lost != nil {
		t.Fatalf("node A was told took %d times, lost %v; want took once", took, lost)
	}
	b.Try(ctx)
	if b.Leading() || b.Holder() != a.Holder() {
		t.Fatalf("node B: leading %v, holder %q; want A (%s) to hold it", b.Leading(), b.Holder(), a.Holder())
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, n := range []*node{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); n.Run(ctx) }()
	}
	close(a.stopping)
	// Leading turns true just before the owner is told (Took).
	waitFor(t, "node B takes the lease A gave up", func() bool { took, _, _ := b.told(); return b.Leading() && took > 0 })
	if took, _, lost := b.told(); took != 1 || lost != nil {
		t.Fatalf("node B was told took %d times, lost %v; want took once", took, lost)
	}
	if _, _, lost := a.told(); lost != nil {
		t.Fatalf("node A, which gave the lease up, was told it lost it: %v", lost)
	}
}

// A node whose takeover fails gives the lease up again, so that another
// takes it at once; a node that held the lease and finds another holding
// it is told it lost it, naming the holder.
func TestKeeperTakeOverFailsAndLost(t *testing.T) {
	t.Parallel() // a database of its own
	ctx := context.Background()
	db, url := openDB(ctx, t)
	a := newNode(ctx, t, db, url, "node-a", 2*time.Second)
	b := newNode(ctx, t, db, url, "node-b", 2*time.Second)

	a.takeOver = errors.New("the store is gone")
	a.Try(ctx)
	if took, _, _ := a.told(); a.Leading() || took != 0 {
		t.Fatalf("node A, whose takeover failed: leading %v, told took %d times; want neither", a.Leading(), took)
	}
	b.Try(ctx)
	if !b.Leading() {
		t.Fatalf("node B does not hold the lease A gave up (holder %q)", b.Holder())
	}

	// B stops renewing; once its lease ran out, A takes it.
	a.takeOver = nil
	waitFor(t, "node A takes the lease B let run out", func() bool { a.Try(ctx); return a.Leading() })
	b.Try(ctx)
	_, _, lost := b.told()
	if len(lost) != 1 || !strings.Contains(lost[0].Error(), "node node-a holds it now") {
		t.Fatalf("node B was told it lost the lease %v; want once, naming node-a", lost)
	}
}

// A holder whose renewal hangs (a transaction elsewhere holds the
// lease's row) is told it lost the lease by when the lease runs out,
// instead of waiting on the renewal, sure it still schedules: its
// renewals fail (the server ends each, postgres.Member.Lead), and the
// lease, read again, is about to run out.
func TestKeeperRenewalHangs(t *testing.T) {
	ctx := context.Background()
	db, url := openDB(ctx, t)
	a := newNode(ctx, t, db, url, "node-a", 2*time.Second)
	a.Try(ctx)
	if !a.Leading() {
		t.Fatal("node A does not take the free lease")
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM leases FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	tried := make(chan struct{})
	go func() {
		defer close(tried)
		for {
			a.Try(ctx)
			if _, _, lost := a.told(); lost != nil {
				return
			}
		}
	}()
	select {
	case <-tried:
	case <-time.After(20 * time.Second):
		t.Fatal("node A's renewal still hangs 20 s after its 2 s lease ran out, and it was not told it lost the lease")
	}
	if _, _, lost := a.told(); len(lost) != 1 || !strings.Contains(lost[0].Error(), "could not be renewed in time") {
		t.Errorf("node A was told %v; want once, that the lease could not be renewed in time", lost)
	}
}

// lateAnswer is a cluster member whose renewals, while late is set, are
// answered only after the Keeper stopped waiting for the answer (its
// deadline passed), and then as failed; what reached the database
// meanwhile (landed: the renewal itself, say, as an UPDATE blocked on the
// lease's row commits once the row is free when its client's cancel did
// not reach the server) is made after that deadline, on the real
// database. Reading the lease again fails with readErr, if set.
type lateAnswer struct {
	lease.Member
	late    atomic.Bool
	landed  func(ctx context.Context)
	readErr error
}

func (m *lateAnswer) Lead(ctx context.Context) (string, bool, error) {
	if !m.late.Load() {
		return m.Member.Lead(ctx)
	}
	<-ctx.Done()
	m.landed(context.WithoutCancel(ctx))
	return "", false, fmt.Errorf("take the scheduler lease: %w", ctx.Err())
}

func (m *lateAnswer) Remaining(ctx context.Context) (time.Duration, error) {
	if m.readErr != nil {
		return 0, m.readErr
	}
	return m.Member.Remaining(ctx)
}

// A holder whose renewal timed out is told it lost the lease only when
// the lease is not its own. The renewal may have reached the database
// and committed after the holder stopped waiting for its answer: the
// lease row then still names the holder, with its token, and the holder
// leads on (before, it was told it lost the lease, stopped scheduling and
// gave the lease up: a failover for nothing). When another node took the
// lease meanwhile, or the lease cannot be read either, it is told.
func TestKeeperRenewalTimedOut(t *testing.T) {
	t.Parallel()
	errRead := errors.New("the database does not answer")
	for _, tc := range []struct {
		name string
		// landed is what reaches the database after node A gave up on
		// its renewal; b is another node.
		landed   func(ctx context.Context, t *testing.T, a, b lease.Member, conn *pgx.Conn)
		readErr  error
		wantLost bool
	}{{
		name: "renewed after the deadline",
		landed: func(ctx context.Context, t *testing.T, a, _ lease.Member, _ *pgx.Conn) {
			if _, ok, err := a.Lead(ctx); err != nil || !ok {
				t.Errorf("node A's late renewal: ok %v, %v; want it renewed", ok, err)
			}
		},
	}, {
		name: "taken over meanwhile",
		landed: func(ctx context.Context, t *testing.T, _, b lease.Member, conn *pgx.Conn) {
			if _, err := conn.Exec(ctx, `UPDATE leases SET expires_at = now() - interval '1 second'`); err != nil {
				t.Error(err)
			}
			if _, ok, err := b.Lead(ctx); err != nil || !ok {
				t.Errorf("node B takes the lease that ran out: ok %v, %v", ok, err)
			}
		},
		wantLost: true,
	}, {
		name:     "not renewed and not readable",
		landed:   func(context.Context, *testing.T, lease.Member, lease.Member, *pgx.Conn) {},
		readErr:  errRead,
		wantLost: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a database of its own
			ctx := context.Background()
			db, url := openDB(ctx, t)
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			const timeout = 2 * time.Second
			ma, mb := &lateAnswer{Member: db.Member("node-a", 1, timeout), readErr: tc.readErr}, db.Member("node-b", 1, timeout)
			ma.landed = func(ctx context.Context) { tc.landed(ctx, t, ma.Member, mb, conn) }
			a := newNodeOf(ctx, t, url, "node-a", ma)
			newNodeOf(ctx, t, url, "node-b", mb) // its node lock, for Lead
			a.Try(ctx)
			if !a.Leading() {
				t.Fatal("node A does not take the free lease")
			}
			var token int64
			if err := conn.QueryRow(ctx, `SELECT token FROM leases`).Scan(&token); err != nil {
				t.Fatal(err)
			}

			ma.late.Store(true)
			a.Try(ctx) // gives up on the renewal when the lease would run out
			ma.late.Store(false)

			var (
				holder   string
				tokenNow int64
				expires  time.Time
			)
			if err := conn.QueryRow(ctx, `SELECT holder, token, expires_at FROM leases`).Scan(&holder, &tokenNow, &expires); err != nil {
				t.Fatal(err)
			}
			ours := strings.HasPrefix(holder, "node-a/") && tokenNow == token
			_, _, lost := a.told()
			switch {
			case !tc.wantLost && lost != nil:
				t.Fatalf("node A was told it lost the lease (%v), yet the lease row names it (%s, token %d, was %d) until %v",
					lost, holder, tokenNow, token, expires)
			case !tc.wantLost && !ours:
				t.Fatalf("the lease row names %s with token %d, want node A's with token %d", holder, tokenNow, token)
			case tc.wantLost && len(lost) != 1:
				t.Fatalf("node A was told it lost the lease %d times (%v), want once; the lease row names %s with token %d (node A's was %d)",
					len(lost), lost, holder, tokenNow, token)
			case tc.wantLost && !strings.Contains(lost[0].Error(), "could not be renewed in time"):
				t.Errorf("node A was told %v; want that the lease could not be renewed in time", lost[0])
			case tc.readErr != nil && !errors.Is(lost[0], tc.readErr):
				t.Errorf("node A was told %v; want why the lease could not be read either (%v)", lost[0], tc.readErr)
			}
			if !tc.wantLost {
				a.Try(ctx) // renews as usual
				if took, _, lost := a.told(); !a.Leading() || took != 1 || lost != nil {
					t.Errorf("after the next renewal, node A: leading %v, told took %d times, lost %v; want leading, took once",
						a.Leading(), took, lost)
				}
			}
		})
	}
}
