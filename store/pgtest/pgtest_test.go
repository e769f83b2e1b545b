package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestNewDatabase: a test gets an empty database of its own in a real
// server that runs as an unprivileged user.
func TestNewDatabase(t *testing.T) {
	ctx := context.Background()
	a, b := NewDatabase(t), NewDatabase(t)
	if a == b {
		t.Fatalf("two databases share the URL %s", a)
	}
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE x (n int)`); err != nil {
		t.Fatal(err)
	}
	conn2, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close(ctx)
	var n int
	if err := conn2.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename = 'x'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("a table created in one test database is seen in another")
	}
	var version string
	if err := conn.QueryRow(ctx, `SHOW server_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL %s in %s", version, Shared(t).Dir)

	// The data directory belongs to the user the server runs as, which is
	// not root (PostgreSQL would refuse to start).
	fi, err := os.Stat(filepath.Join(Shared(t).Dir, "data", "PG_VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := ownerUID(fi); os.Geteuid() == 0 && uid == 0 {
		t.Errorf("the cluster's files belong to root")
	}
}

// TestTemplate: a Template's databases start as its prepare left the
// template, made once, and are each their own.
func TestTemplate(t *testing.T) {
	ctx := context.Background()
	prepared := 0
	tp := NewTemplate(func(ctx context.Context, url string) error {
		prepared++
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, `CREATE TABLE x (n int); INSERT INTO x VALUES (1)`)
		return err
	})
	a, b := tp.NewDatabase(t), tp.NewDatabase(t)
	if prepared != 1 {
		t.Errorf("the template was prepared %d times, want once", prepared)
	}
	if a == b {
		t.Fatalf("two databases share the URL %s", a)
	}
	count := func(url string) int {
		t.Helper()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM x`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO x VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if n := count(a); n != 2 {
		t.Errorf("the database written to has %d rows, want 2", n)
	}
	if n := count(b); n != 1 {
		t.Errorf("a copy of the template has %d rows, want the template's 1: a write to another copy reached it", n)
	}
	if n := count(tp.NewDatabase(t)); n != 1 {
		t.Errorf("a later copy has %d rows, want the template's 1", n)
	}
}

// TestInitdbKept: the cluster initdb made is kept for the next server
// (initCluster), untouched by the server that runs a copy of it: a later
// Start (TestStopRemovesCluster, TestServerOutlivesEndedThreads) copies
// it instead of running initdb.
func TestInitdbKept(t *testing.T) {
	s := Shared(t)
	bin, err := FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	cache, err := initCache(bin, s.User)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(s.Dir, "data", "PG_VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(cache, "PG_VERSION")); err != nil || string(got) != string(want) {
		t.Fatalf("kept cluster's PG_VERSION: %q %v, want %q", got, err, want)
	}
	if _, err := os.Stat(filepath.Join(cache, "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the kept cluster has a postmaster.pid (%v): a server ran in it", err)
	}
}

// TestStopRemovesCluster starts a second server of its own, stops it
// twice, and checks that its directory is gone and it accepts nothing.
func TestStopRemovesCluster(t *testing.T) {
	Shared(t) // skips or fails as every PostgreSQL test does when the binaries are missing
	bin, err := FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(bin)
	if err != nil {
		t.Fatal(err)
	}
	url := s.URL("postgres")
	if err := s.Exec(context.Background(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cluster directory after Stop: %v", err)
	}
	if conn, err := pgx.Connect(context.Background(), url); err == nil {
		conn.Close(context.Background())
		t.Errorf("a stopped server accepted a connection")
	}
}

// TestMissingBinaries: without the binaries a test is skipped with a
// message naming the package, or fails under HOOKD_REQUIRE_POSTGRES=1;
// with them, they are found on PATH or in Debian's directory.
func TestMissingBinaries(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("PATH", empty)
	_, err := findBinaries(filepath.Join(empty, "*", "bin"))
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("findBinaries with nothing installed: %v, want a NotFoundError", err)
	}
	for _, want := range []string{"apt-get install postgresql", filepath.Join(empty, "*", "bin"), "initdb"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not name %q", err, want)
		}
	}

	for _, tt := range []struct {
		env        string
		skip, fail bool
	}{{"", true, false}, {"0", true, false}, {"1", false, true}} {
		t.Setenv(RequireEnv, tt.env)
		rec := &recordTB{TB: t}
		unavailable(rec, err)
		if (rec.skipped != "") != tt.skip || (rec.failed != "") != tt.fail {
			t.Errorf("%s=%q: skipped %q, failed %q", RequireEnv, tt.env, rec.skipped, rec.failed)
		}
		if msg := rec.skipped + rec.failed; !strings.Contains(msg, "apt-get install postgresql") {
			t.Errorf("%s=%q: message %q does not name the package", RequireEnv, tt.env, msg)
		}
	}
	rec := &recordTB{TB: t}
	unavailable(rec, errors.New("initdb: exit status 1"))
	if rec.failed == "" || rec.skipped != "" {
		t.Errorf("a server that fails to start skipped the test: %+v", rec)
	}

	// Debian's layout: the binaries in /usr/lib/postgresql/N/bin, the
	// newest N first; initdb alone is not enough.
	lib := t.TempDir()
	for _, f := range []string{"9/bin/initdb", "9/bin/postgres", "15/bin/initdb", "15/bin/postgres", "16/bin/initdb"} {
		p := filepath.Join(lib, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := findBinaries(filepath.Join(lib, "*", "bin"))
	if want := filepath.Join(lib, "15", "bin"); err != nil || dir != want {
		t.Errorf("findBinaries = %q, %v; want %s", dir, err, want)
	}
	t.Setenv("PATH", filepath.Join(lib, "9", "bin"))
	if dir, err := findBinaries(filepath.Join(empty, "*")); err != nil || dir != filepath.Join(lib, "9", "bin") {
		t.Errorf("findBinaries with initdb on PATH = %q, %v", dir, err)
	}
}

// recordTB records Skipf and Fatalf instead of ending the test.
type recordTB struct {
	testing.TB
	skipped, failed string
}

func (r *recordTB) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recordTB) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// TestServerOutlivesEndedThreads: Linux sends the parent-death signal
// when the *thread* that forked the server ends, not the process. Code
// under test that locks a goroutine to its thread and returns without
// unlocking (the sandbox's spawner does) ends threads, one of which may
// be the one that started the server; the server must keep running.
func TestServerOutlivesEndedThreads(t *testing.T) {
	Shared(t)
	bin, err := FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	for i := 0; i < 200; i++ {
		done := make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		}()
		<-done
	}
	time.Sleep(200 * time.Millisecond) // let a signal, if one was sent, take effect
	if err := s.Exec(context.Background(), "SELECT 1"); err != nil {
		t.Fatalf("the server died when threads of the test binary ended: %v\n%s", err, s.logTail())
	}
}

// TestHoldNotifyLock: while the notify lock is held, the commit of a
// transaction that notified waits for it, and fails once its lock_timeout
// runs out; once it is let go, such a commit goes through.
func TestHoldNotifyLock(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	notify := func() error {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		for _, q := range []string{`SET LOCAL lock_timeout = '100ms'`, `SELECT pg_notify('x', 'y')`} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return tx.Commit(ctx)
	}
	release := HoldNotifyLock(t)
	if err := notify(); err == nil || !strings.Contains(err.Error(), "lock timeout") {
		t.Errorf("a notifying commit while the lock is held: %v, want a lock timeout", err)
	}
	release()
	release()
	if err := notify(); err != nil {
		t.Errorf("a notifying commit once the lock is let go: %v", err)
	}
}
