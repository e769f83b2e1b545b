package postgres

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// migrated is hookd's schema at its latest version, made once per test
// binary and copied for each test that starts from it (as
// postgrestest.NewDatabase, which these tests cannot import: it imports
// this package). The tests of migrating itself use pgtest.NewDatabase.
var migrated = pgtest.NewTemplate(func(ctx context.Context, url string) error {
	d, err := Open(ctx, url)
	if err != nil {
		return err
	}
	return d.Close()
})

func open(t *testing.T, url string) *DB {
	t.Helper()
	d, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestOpenTogether: nodes that start at once on a new database migrate it
// once; all of them open it.
func TestOpenTogether(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := Open(context.Background(), url)
			if err == nil {
				d.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	d := open(t, url)
	var n int
	if err := d.pool.QueryRow(context.Background(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(migrations) {
		t.Errorf("%d migrations recorded, want %d", n, len(migrations))
	}
}

// TestOpenRefusesNewerSchema: a database a newer hookd migrated is not
// misread.
func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	url := migrated.NewDatabase(t)
	d := open(t, url)
	if _, err := d.pool.Exec(context.Background(), `INSERT INTO schema_migrations VALUES ($1, 'future', 0)`,
		len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), url)
	if err == nil || !strings.Contains(err.Error(), "written by a newer hookd") {
		t.Fatalf("Open of a newer schema: %v", err)
	}
}

// TestEventsCommitInSeqOrder: writers on two handles append events while
// a reader follows EventsAfter as the live stream does; the reader sees
// every event, none skipped, in seq order.
func TestEventsCommitInSeqOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	writers := []*DB{open(t, url), open(t, url)}
	reader := open(t, url)
	const perWriter, goroutines = 50, 6
	var wg sync.WaitGroup
	errc := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				ev := &engine.Event{Type: "t", Data: map[string]any{"g": float64(g), "i": float64(i)}}
				if err := writers[g%2].AppendEvent(ctx, ev); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	var seen []int64
	var after int64
	deadline := time.Now().Add(2 * time.Minute)
	for finished := false; ; {
		select {
		case <-done:
			finished = true
		default:
		}
		evs, err := reader.EventsAfter(ctx, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			seen = append(seen, ev.Seq)
			after = ev.Seq
		}
		if finished && len(evs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writers not done after 2 minutes; %d events seen", len(seen))
		}
	}
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	var total int
	if err := reader.pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&total); err != nil {
		t.Fatal(err)
	}
	if total != perWriter*goroutines || len(seen) != total {
		t.Fatalf("the reader saw %d of %d stored events (want %d): a commit out of seq order was skipped",
			len(seen), total, perWriter*goroutines)
	}
}

// TestDaemonLock: one daemon at a time; the lock goes when its holder's
// session ends, even without Unlock (a daemon killed by SIGKILL).
func TestDaemonLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
	open(t, url) // migrated
	l1, err := Lock(ctx, url, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(ctx, url, ""); !errors.Is(err, engine.ErrLocked) {
		t.Fatalf("second Lock: %v, want ErrLocked", err)
	}
	if err := l1.Check(); err != nil {
		t.Fatalf("Check of a held lock: %v", err)
	}
	l1.Unlock()
	l1.Unlock() // safe twice
	l2, err := Lock(ctx, url, "")
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	// The holder's session is ended from outside (as when its process dies).
	admin := open(t, url)
	if _, err := admin.pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, l2.conn.PgConn().PID()); err != nil {
		t.Fatal(err)
	}
	var l3 *DaemonLock
	for deadline := time.Now().Add(time.Minute); ; {
		if l3, err = Lock(ctx, url, ""); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock still held a minute after its session ended: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer l3.Unlock()
	if err := l2.Check(); err == nil {
		t.Error("Check of a lock whose session ended reports it held")
	}
}

func TestDescribeHidesPassword(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"postgres://hookd:s3cret@db.internal/hookd": "postgres://hookd:xxxxx@db.internal/hookd",
		"postgres://hookd@db.internal/hookd":        "postgres://hookd@db.internal/hookd",
	} {
		if got := Describe(url); got != want || strings.Contains(got, "s3cret") {
			t.Errorf("Describe(%q) = %q, want %q", url, got, want)
		}
	}
}

// TestURLErrorsHidePassword: a URL that does not parse, or that pgx
// refuses after it parses (an unknown sslmode), is refused by Open, Lock
// and LockNode with the reason and without the URL.
func TestURLErrorsHidePassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for url, reason := range map[string]string{
		"postgres://hookd:s3cret/x@db.internal/hookd":                "a port is not a number",
		"postgres://hookd:s3cret%40x@db.internal/hookd?sslmode=nope": "failed to configure TLS (sslmode is invalid)",
		"postgres://hookd@db.internal/hookd?password=s3cret&port=x":  "invalid port",
	} {
		_, err1 := Open(ctx, url)
		_, err2 := Lock(ctx, url, "fire")
		_, err3 := LockNode(ctx, url, "a")
		for _, err := range []error{err1, err2, err3} {
			if err == nil || !strings.Contains(err.Error(), "the database URL does not parse: "+reason) ||
				strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "db.internal") {
				t.Errorf("%s: %v, want the reason %q and not the URL", url, err, reason)
			}
		}
	}
}
