package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
	"github.com/hookd/hookd/store/postgres/postgrestest"
	"github.com/jackc/pgx/v5"
)

// TestServeOnPostgres: database: postgres://... in hookd.yaml puts the
// store in PostgreSQL: a fired run is recorded there (no SQLite file is
// made), a second daemon on the same database (HOOKD_DATABASE, in another
// directory) is refused while the first runs, and takes over after the
// first is killed with SIGKILL, with its history; without a daemon the
// CLI reads the history from PostgreSQL.
func TestServeOnPostgres(t *testing.T) {
	url := postgrestest.NewDatabase(t)
	hooks := map[string]string{"quick.yaml": quickHook}
	a := newDaemonProcEnv(t, "database: "+url+"\n", hooks)
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

	b := newProcEnv(t, "", hooks)
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
	c := newDaemonProcEnv(t, "", hooks)
	got := c.listRuns("--db", url)
	if len(got) != 2 || got[0].ID != id2 || got[1].ID != id {
		t.Errorf("hookd runs --db URL: %v, want [%s %s]", got, id2, id)
	}
	if r := c.must(0, "prune", "--db", url); !strings.Contains(r.stdout, "deleted 0 runs") {
		t.Errorf("hookd prune --db URL beside a daemon:\n%s", r)
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
	url := postgrestest.NewDatabase(t)
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
		if l, err = postgres.Lock(context.Background(), url, ""); err != nil {
			return false
		}
		return l.Unlock() == nil
	}, func() string { return fmt.Sprint(err) })
}

// TestRenderAndPruneOnPostgres: on PostgreSQL, `hookd render` previews
// against the database's history (the previous run's time) and records
// nothing; `hookd status` shows the database's size; `hookd prune`
// through the daemon deletes the records retention lets go (a dry run
// first counts them), with the same rules as on SQLite (the store
// contract suite).
func TestRenderAndPruneOnPostgres(t *testing.T) {
	ctx := context.Background()
	url := postgrestest.NewDatabase(t)
	e := newEnv(t, "database: "+url+"\n", renderHooks)
	e.serve()
	e.must(0, "fire", "green", "--wait")

	r := e.must(0, "render", "green", "--json")
	var run engine.Run
	if err := json.Unmarshal([]byte(r.stdout), &run); err != nil {
		t.Fatalf("decode: %v\n%s", err, r)
	}
	if !strings.Contains(run.Prompt, "- Last run: ") || strings.Contains(run.Prompt, "- Last run: never") {
		t.Errorf("the preview does not read PostgreSQL's history (the previous run's time):\n%s", run.Prompt)
	}
	if runs := e.listRuns(); len(runs) != 1 {
		t.Errorf("runs after a preview: %d, want the 1 fired", len(runs))
	}

	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	old := time.Now().Add(-10 * 24 * time.Hour) // skip records are kept 3 days by default
	var skips []string
	for i := range 2 {
		r := &engine.Run{ID: engine.NewID(), Hook: "green", Trigger: "schedule", Status: engine.StatusSkipped,
			Gate: engine.GateCooldown, Reason: fmt.Sprintf("cooldown: %d", i), QueuedAt: old, FinishedAt: old}
		if err := db.InsertRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		skips = append(skips, r.ID)
	}

	if st := e.must(0, "status").stdout; !strings.Contains(st, "database: ") || !strings.Contains(st, "(PostgreSQL "+postgres.Describe(url)+")") {
		t.Errorf("hookd status does not show the PostgreSQL database's size:\n%s", st)
	}
	var rep api.PruneReport
	if err := json.Unmarshal([]byte(e.must(0, "prune", "--dry-run", "--json").stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Skipped != 2 || rep.Runs != 0 || !rep.DryRun {
		t.Errorf("dry run through the daemon: %+v, want 2 skip records", rep)
	}
	if r := e.must(0, "prune"); !strings.Contains(r.stdout, "deleted 0 runs, 2 skip/drop records") {
		t.Errorf("hookd prune through the daemon:\n%s", r)
	}
	for _, id := range skips {
		if _, err := db.GetRun(ctx, id); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("old skip record %s is still there: %v", id, err)
		}
	}
	if runs := e.listRuns("green"); len(runs) != 1 {
		t.Errorf("runs of green after the prune: %d, want the 1 fired", len(runs))
	}
}
