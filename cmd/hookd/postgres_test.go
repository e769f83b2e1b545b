package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/pgtest"
	"github.com/hookd/hookd/store/postgres"
	"github.com/jackc/pgx/v5"
)

// TestServeOnPostgres: database: postgres://... in hookd.yaml puts the
// store in PostgreSQL: a fired run is recorded there (no SQLite file is
// made), a second daemon on the same database (HOOKD_DATABASE, in another
// directory) is refused while the first runs, and takes over after the
// first is killed with SIGKILL, with its history; without a daemon the
// CLI reads the history from PostgreSQL.
func TestServeOnPostgres(t *testing.T) {
	url := pgtest.NewDatabase(t)
	hooks := map[string]string{"quick.yaml": quickHook}
	a := newEnv(t, "database: "+url+"\n", hooks)
	da := a.serve()
	if !strings.Contains(da.log.String(), postgres.Describe(url)) {
		t.Errorf("the start log does not name the database:\n%s", da.log)
	}
	id := runID(t, a.must(0, "fire", "quick", "--wait"))
	if a.exists(".hookd/hookd.db") {
		t.Error("a SQLite database was made although database: names PostgreSQL")
	}
	db, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if r, err := db.GetRun(context.Background(), id); err != nil || r.Status != engine.StatusCompleted {
		t.Fatalf("run %s in PostgreSQL: %+v, %v", id, r, err)
	}

	b := newEnv(t, "", hooks)
	b.environ = append(b.environ, config.DatabaseEnv+"="+url)
	r := b.must(1, "serve")
	if !strings.Contains(r.stderr, "in use by another hookd") {
		t.Errorf("want the lock refusal on stderr:\n%s", r)
	}

	da.kill() // SIGKILL: its session ends, and with it the lock
	waitUnlocked(t, url)
	db2 := b.serve()
	if runs := b.listRuns("quick"); len(runs) != 1 || runs[0].ID != id {
		t.Errorf("the second daemon's history: %v, want the first's run %s", runs, id)
	}
	id2 := runID(t, b.must(0, "fire", "quick", "--wait"))

	// The CLI without a daemon reads PostgreSQL too (--db URL).
	c := newEnv(t, "", hooks)
	got := c.listRuns("--db", url)
	if len(got) != 2 || got[0].ID != id2 || got[1].ID != id {
		t.Errorf("hookd runs --db URL: %v, want [%s %s]", got, id2, id)
	}
	if r := c.must(1, "prune", "--db", url); !strings.Contains(r.stderr, "SQLite database only") {
		t.Errorf("hookd prune on PostgreSQL:\n%s", r)
	}
	if r := c.must(0, "run", id2, "--db", url); !strings.Contains(r.stdout, "completed") {
		t.Errorf("hookd run ID --db URL:\n%s", r)
	}

	// Pausing without a daemon waits for the lock, then records it there.
	if r := c.must(1, "pause", "quick", "--db", url); !strings.Contains(r.stderr, "in use by another hookd") {
		t.Errorf("offline pause while a daemon holds the database:\n%s", r)
	}
	db2.kill()
	waitUnlocked(t, url)
	c.must(0, "pause", "quick", "--db", url)
	if line := listLine(t, c.must(0, "list", "--db", url), "quick"); !strings.Contains(line, "paused") {
		t.Errorf("hookd list after an offline pause: %q", line)
	}
}

// TestServeOnPostgresLockLost: when the session holding the daemon lock
// ends under a running daemon (the server restarted, or a network cut
// noticed by the server), the daemon stops triggering and exits at its
// next wake-up, since another daemon may now take the database.
func TestServeOnPostgresLockLost(t *testing.T) {
	url := pgtest.NewDatabase(t)
	e := newEnv(t, "database: "+url+"\ntick: 100ms\n", map[string]string{"quick.yaml": quickHook})
	d := e.serve()
	// End every session of the daemon (the lock's among them).
	admin, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	// The engine checks the lock before it triggers anything more than a
	// tick after its last check: fires wake it.
	waitFor(t, "the daemon to exit", func() bool {
		_, _ = e.exec("fire", "quick")
		return d.exited()
	}, func() string { return d.log.String() })
	if code := d.wait(); code != exitError {
		t.Errorf("exit code %d, want %d", code, exitError)
	}
	if !strings.Contains(d.log.String(), "the session holding it is gone") {
		t.Errorf("the daemon's log does not say why it exits:\n%s", d.log)
	}
}

// waitUnlocked waits until no daemon holds the database's lock: the
// server ends a killed process's session a moment after the kill.
func waitUnlocked(t *testing.T, url string) {
	t.Helper()
	var err error
	waitFor(t, "the database lock to be free", func() bool {
		var l *postgres.DaemonLock
		if l, err = postgres.Lock(context.Background(), url); err != nil {
			return false
		}
		return l.Unlock() == nil
	}, func() string { return fmt.Sprint(err) })
}
