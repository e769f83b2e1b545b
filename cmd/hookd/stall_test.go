package main

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// TestStatusShowsStalledStore holds the daemon's SQLite file with
// another connection's exclusive transaction, as another process would:
// a fire is refused store_stalled (exit 75, nothing ran), hookd status
// says the store is stalled, since when and why — and answers while it
// is — and once the lock goes the stall is over and the refusal is on
// record.
func TestStatusShowsStalledStore(t *testing.T) {
	e := newEnv(t, "store_timeout: 1s\n", map[string]string{"hello.yaml": "steps:\n  - type: shell\n    command: echo hi\nskip_llm: true\n"})
	e.serve()
	db, err := sql.Open("sqlite3", e.path(".hookd/hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	locked := true
	defer func() {
		if locked {
			conn.ExecContext(ctx, "ROLLBACK")
		}
	}()

	e.run("fire", "hello") // its start cannot be written: the store stalls
	var st result
	waitFor(t, "status to say the store is stalled", func() bool {
		st = e.must(0, "status")
		return strings.Contains(st.stdout, "STORE:     store stalled since")
	}, func() string { return st.String() })
	if !strings.Contains(st.stdout, "database is locked") && !strings.Contains(st.stdout, "no answer within") {
		t.Errorf("the stall does not say why:\n%s", st)
	}
	if r := e.run("fire", "hello"); r.code != exitRefused || !strings.Contains(r.stderr, "store_stalled") {
		t.Errorf("a fire while the store is stalled:\n%s", r)
	}

	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	locked = false
	waitFor(t, "the stall to end", func() bool {
		st = e.must(0, "status")
		return !strings.Contains(st.stdout, "STORE:")
	}, func() string { return st.String() })
	if runs := e.listRuns("hello"); len(runs) == 0 {
		t.Errorf("no record of the refused fires once the store answered")
	}
}
