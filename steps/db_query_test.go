package steps

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

// fakeRecords is an in-memory engine.RecordReader; runs and events are
// newest first.
type fakeRecords struct {
	runs   []*engine.Run
	events []*engine.Event
	seen   []engine.RunFilter
}

func (f *fakeRecords) GetRun(_ context.Context, id string) (*engine.Run, error) {
	for _, r := range f.runs {
		if r.ID == id {
			return r, nil
		}
	}
	return nil, engine.ErrNotFound
}

func (f *fakeRecords) ListRuns(_ context.Context, flt engine.RunFilter) ([]*engine.Run, error) {
	f.seen = append(f.seen, flt)
	limit := flt.Limit
	if limit <= 0 {
		limit = 50
	}
	var out []*engine.Run
	for _, r := range f.runs {
		if (flt.Hook == "" || r.Hook == flt.Hook) && (flt.Status == "" || r.Status == flt.Status) && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *fakeRecords) ListEvents(_ context.Context, typ string, limit int) ([]*engine.Event, error) {
	var out []*engine.Event
	for _, e := range f.events {
		if (typ == "" || e.Type == typ) && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeRecords) SearchRuns(context.Context, engine.SearchQuery) ([]engine.SearchHit, error) {
	return nil, errors.New("fakeRecords keeps no search index")
}

func records() *fakeRecords {
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	run := func(id, hook string, st engine.Status, min int) *engine.Run {
		start := t0.Add(time.Duration(min) * time.Minute)
		return &engine.Run{ID: id, Hook: hook, Status: st, Trigger: "schedule", StartedAt: start, FinishedAt: start.Add(1500 * time.Millisecond)}
	}
	return &fakeRecords{
		runs: []*engine.Run{
			run("r5", "tests", engine.StatusFailed, 5),
			run("r4", "docs", engine.StatusCompleted, 4),
			run("r3", "tests", engine.StatusSkipped, 3),
			run("r2", "tests", engine.StatusFailed, 2),
			run("r1", "docs", engine.StatusCompleted, 1),
		},
		events: []*engine.Event{
			{Seq: 2, ID: "e2", Type: "deploy.finished", Data: map[string]any{"env": "prod"}, Source: "cli", Time: t0},
			{Seq: 1, ID: "e1", Type: "deploy.started", Data: map[string]any{"env": "prod"}, Source: "cli", Time: t0},
		},
	}
}

func TestDBQueryNewErrors(t *testing.T) {
	newErrTests(t, "db_query", []struct{ name, src, want string }{
		{"nothing", `limit: 3`, "query: required"},
		{"both", "query: recent_runs\nsql: SELECT 1", "give either query or sql"},
		{"unknown query", `query: all_runs`, `query: unknown query "all_runs"`},
		{"missing param", `query: runs_of_hook`, "needs params.hook"},
		{"unknown param", "query: recent_runs\nparams: {hook: x}", `has no parameter "hook"`},
		{"list params for named", "query: recent_runs\nparams: [x]", "must be a mapping for a named query"},
		{"db with named", "query: recent_runs\ndb: x.db", "db is for sql"},
		{"placeholder in sql", "sql: SELECT * FROM t WHERE a = '{{event.x}}'\ndb: x.db", "sql: must not hold placeholders"},
		{"sql without db", "sql: SELECT 1", "db: required"},
		{"bad param name", "sql: SELECT 1\ndb: x.db\nparams: {'a-b': 1}", "not a parameter name"},
		{"nested param", "sql: SELECT 1\ndb: x.db\nparams: [[1]]", "params[0]: must be a string, number, boolean or null"},
		{"bad limit", "query: recent_runs\nlimit: -1", "limit: must be between"},
		{"bad max_rows", "query: recent_runs\nmax_rows: -1", "max_rows: must be > 0"},
	})
}

func TestDBQueryNamed(t *testing.T) {
	tests := []struct {
		name, src string
		event     map[string]any
		wantIDs   string // ids (or hooks) of the rows, in order
		key       string
		wantTrunc bool
		check     func(t *testing.T, rows []any)
	}{
		{name: "recent_runs", src: "query: recent_runs\nlimit: 3", wantIDs: "r5,r4,r3", key: "id"},
		{name: "recent_runs by status", src: "query: recent_runs\nparams: {status: completed}", wantIDs: "r4,r1", key: "id"},
		{name: "failed_runs", src: "query: failed_runs", wantIDs: "r5,r2", key: "id", check: func(t *testing.T, rows []any) {
			r := rows[0].(map[string]any)
			if r["status"] != "failed" || r["duration_ms"] != int64(1500) || r["started_at"] != "2024-05-01T12:05:00Z" || r["queued_at"] != "" {
				t.Errorf("row %v", r)
			}
		}},
		{name: "runs_of_hook from event", src: "query: runs_of_hook\nparams: {hook: '{{event.hook}}'}", event: map[string]any{"hook": "docs"}, wantIDs: "r4,r1", key: "id"},
		{name: "injection is a hook name", src: "query: runs_of_hook\nparams: {hook: '{{event.hook}}'}", event: map[string]any{"hook": "docs' OR '1'='1"}, wantIDs: "", key: "id"},
		{name: "recent_events", src: "query: recent_events", wantIDs: "e2,e1", key: "id", check: func(t *testing.T, rows []any) {
			if d := rows[0].(map[string]any)["data"].(map[string]any); d["env"] != "prod" {
				t.Errorf("data %v", d)
			}
		}},
		{name: "recent_events by type", src: "query: recent_events\nparams: {type: deploy.started}", wantIDs: "e1", key: "id"},
		{name: "max_rows", src: "query: recent_runs\nmax_rows: 2", wantIDs: "r5,r4", key: "id", wantTrunc: true},
		{name: "hook_activity", src: "query: hook_activity", wantIDs: "docs,tests", key: "hook", check: func(t *testing.T, rows []any) {
			tests := rows[1].(map[string]any)
			if tests["runs"] != 3 || tests["failed"] != 2 || tests["skipped"] != 1 || tests["completed"] != 0 || tests["last_status"] != "failed" {
				t.Errorf("tests activity %v", tests)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustStep(t, "db_query", tt.src, 0)
			env := stepEnv(t, tt.event)
			env.Records = records()
			res, err := runStep(t, s, env)
			if err != nil {
				t.Fatal(err)
			}
			rows := res.Fields["rows"].([]any)
			var ids []string
			for _, r := range rows {
				ids = append(ids, r.(map[string]any)[tt.key].(string))
			}
			if strings.Join(ids, ",") != tt.wantIDs || field(res, "count") != len(rows) || field(res, "truncated") != tt.wantTrunc {
				t.Errorf("rows %v count %v truncated %v; want %s", ids, field(res, "count"), field(res, "truncated"), tt.wantIDs)
			}
			var decoded []any
			if err := json.Unmarshal([]byte(res.Output), &decoded); err != nil || len(decoded) != len(rows) {
				t.Errorf("output is not the rows as JSON: %v %s", err, res.Output)
			}
			if len(res.Fields["columns"].([]any)) == 0 {
				t.Error("no columns")
			}
			if tt.check != nil {
				tt.check(t, rows)
			}
		})
	}
	s := mustStep(t, "db_query", "query: recent_runs", 0)
	if _, err := runStep(t, s, stepEnv(t, nil)); err == nil || !strings.Contains(err.Error(), "not available") {
		t.Errorf("without records: %v", err)
	}
}

// sqliteFixture makes data.db in a new workdir with a table of users.
func sqliteFixture(t *testing.T) string {
	t.Helper()
	dir := realDir(t, t.TempDir())
	db, err := sql.Open("sqlite3", filepath.Join(dir, "data.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, score REAL, avatar BLOB)`,
		`INSERT INTO users (name, score, avatar) VALUES ('ada', 9.5, x'00ff'), ('bob', 7, NULL), ('cy', 3, 'text')`,
		`CREATE TABLE x (v TEXT)`,
		`INSERT INTO x VALUES ('keep')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestDBQuerySQL(t *testing.T) {
	dir := sqliteFixture(t)
	tests := []struct {
		name, src string
		event     map[string]any
		want      string // JSON of the rows
		wantTrunc bool
	}{
		{name: "select", src: "sql: SELECT id, name FROM users ORDER BY id", want: `[{"id":1,"name":"ada"},{"id":2,"name":"bob"},{"id":3,"name":"cy"}]`},
		{name: "positional", src: "sql: SELECT name FROM users WHERE score > ? AND name != ?\nparams: [5, '{{event.skip}}']", event: map[string]any{"skip": "bob"}, want: `[{"name":"ada"}]`},
		{name: "named", src: "sql: SELECT name FROM users WHERE name = :who\nparams: {who: '{{event.who}}'}", event: map[string]any{"who": "cy"}, want: `[{"name":"cy"}]`},
		{name: "typed placeholder", src: "sql: SELECT name FROM users WHERE id = ?\nparams: ['{{event.id}}']", event: map[string]any{"id": 2.0}, want: `[{"name":"bob"}]`},
		{name: "text around a placeholder", src: "sql: SELECT name FROM users WHERE name LIKE ?\nparams: ['{{event.p}}%']", event: map[string]any{"p": "a"}, want: `[{"name":"ada"}]`},
		{name: "injection is data", src: "sql: SELECT v FROM x WHERE v = ?\nparams: ['{{event.v}}']", event: map[string]any{"v": "'; DROP TABLE x; --"}, want: `[]`},
		{name: "injection in named", src: "sql: SELECT name FROM users WHERE name = :n\nparams: {n: '{{event.v}}'}", event: map[string]any{"v": "x' OR '1'='1"}, want: `[]`},
		{name: "blob and null", src: "sql: SELECT avatar FROM users ORDER BY id", want: `[{"avatar":"base64:AP8="},{"avatar":null},{"avatar":"text"}]`},
		{name: "max_rows", src: "sql: SELECT id FROM users ORDER BY id\nmax_rows: 2", want: `[{"id":1},{"id":2}]`, wantTrunc: true},
		{name: "schema pragma", src: "sql: SELECT name FROM pragma_table_info('x')", want: `[{"name":"v"}]`},
		{name: "schema pragma statement", src: "sql: PRAGMA table_info(users)", want: ""},
		{name: "user_version read", src: "sql: PRAGMA user_version", want: `[{"user_version":0}]`},
		{name: "recursive cte", src: "sql: WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM c WHERE n < 3) SELECT n FROM c", want: `[{"n":1},{"n":2},{"n":3}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustStep(t, "db_query", tt.src+"\ndb: data.db", 0)
			env := stepEnv(t, tt.event)
			env.Workdir = dir
			res, err := runStep(t, s, env)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				return // ran; the rows do not matter
			}
			if res.Output != tt.want || field(res, "truncated") != tt.wantTrunc {
				t.Errorf("rows %s truncated %v; want %s", res.Output, field(res, "truncated"), tt.want)
			}
		})
	}
	checkTableX(t, dir)
}

// checkTableX fails unless table x still holds its one row.
func checkTableX(t *testing.T, dir string) {
	t.Helper()
	db, err := sql.Open("sqlite3", filepath.Join(dir, "data.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow(`SELECT v FROM x`).Scan(&v); err != nil || v != "keep" {
		t.Fatalf("table x: %q, %v", v, err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM users`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("users: %d, %v", n, err)
	}
}

func TestDBQueryWritesRefused(t *testing.T) {
	dir := sqliteFixture(t)
	other := filepath.Join(t.TempDir(), "other.db")
	for _, q := range []string{
		"DELETE FROM x",
		"DROP TABLE x",
		"INSERT INTO x VALUES ('new')",
		"UPDATE users SET name = 'z'",
		"CREATE TABLE y (a)",
		"SELECT 1; DELETE FROM x",
		"PRAGMA query_only = 0",
		"PRAGMA writable_schema = 1",
		"PRAGMA user_version = 7",
		"PRAGMA journal_mode = DELETE",
		"ATTACH DATABASE '" + other + "' AS o",
		"BEGIN IMMEDIATE",
		"VACUUM",
		"REPLACE INTO x VALUES ('r')",
	} {
		t.Run(q, func(t *testing.T) {
			s := mustStep(t, "db_query", "sql: \""+q+"\"\ndb: data.db", 0)
			env := stepEnv(t, nil)
			env.Workdir = dir
			_, err := runStep(t, s, env)
			if err == nil {
				t.Fatalf("%s was allowed", q)
			}
			if !strings.Contains(err.Error(), "only reading is allowed") {
				t.Errorf("err = %v; want it to say only reading is allowed", err)
			}
		})
	}
	checkTableX(t, dir)
	if _, err := os.Stat(other); err == nil {
		t.Error("ATTACH created a database")
	}
}

func TestDBQueryConfinement(t *testing.T) {
	dir := sqliteFixture(t)
	hook := filepath.Join(dir, "hook")
	if err := os.Mkdir(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../data.db", filepath.Join(hook, "link.db")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ src, want string }{
		{"db: ../data.db", "leaves the hook's workdir"},
		{"db: link.db", "outside the hook's workdir"},
		{"db: '{{event.db}}'", "leaves"},
		{"db: missing.db", "no such file"},
		{"db: .", "not a file"},
	} {
		s := mustStep(t, "db_query", "sql: SELECT 1\n"+tt.src, 0)
		env := stepEnv(t, map[string]any{"db": "../data.db"})
		env.Workdir = hook
		if _, err := runStep(t, s, env); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v; want %q", tt.src, err, tt.want)
		}
	}
	s := mustStep(t, "db_query", "sql: SELECT count(*) AS n FROM users\ndb: ../data.db\nroots: [..]", 0)
	env := stepEnv(t, nil)
	env.Workdir = hook
	res, err := runStep(t, s, env)
	if err != nil || res.Output != `[{"n":3}]` {
		t.Errorf("with the root allowed: %v %s", err, res.Output)
	}
}

func TestDBQueryTimeout(t *testing.T) {
	dir := sqliteFixture(t)
	s := mustStep(t, "db_query", "sql: WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM c) SELECT count(*) FROM c\ndb: data.db", 200*time.Millisecond)
	env := stepEnv(t, nil)
	env.Workdir = dir
	start := time.Now()
	_, err := runStep(t, s, env)
	if err == nil {
		t.Fatal("an endless query ended without error")
	}
	if !strings.Contains(err.Error(), "timed out") {
		t.Errorf("err = %v; want it to say timed out", err)
	}
	if d := time.Since(start); d > testtool.HangBound {
		t.Errorf("took %v after a 200ms timeout", d)
	}
}
