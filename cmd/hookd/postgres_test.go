package main

import (
	"context"
	"strings"
	"testing"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/pgtest"
	"github.com/hookd/hookd/store/postgres"
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
	b.serve()
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
}
