package steps

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookd/hookd/engine"
	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
)

// Defaults of the db_query step.
const (
	DefaultQueryTimeout = 30 * time.Second
	DefaultMaxRows      = 100
	DefaultQueryLimit   = 20  // records a named query reads
	DefaultActivityRuns = 200 // runs hook_activity summarises
	maxQueryLimit       = 10000
)

func init() {
	engine.RegisterStep("db_query", engine.DeclaredKind{Build: newDBQuery,
		Fields: []string{"rows", "columns", "count", "truncated"}})
}

type dbQueryConfig struct {
	Query   string   `yaml:"query"`
	SQL     string   `yaml:"sql"`
	DB      string   `yaml:"db"`
	Params  any      `yaml:"params"`
	Limit   int      `yaml:"limit"`
	MaxRows int      `yaml:"max_rows"`
	Roots   []string `yaml:"roots"`
}

// namedQuery is one of the read-only queries over hookd's own records.
type namedQuery struct {
	params   map[string]bool // allowed params; true: required
	defLimit int
	run      func(ctx context.Context, rr engine.RecordReader, p map[string]string, limit int) ([]string, []map[string]any, error)
}

var namedQueries = map[string]namedQuery{
	"recent_runs": {params: map[string]bool{"status": false}, defLimit: DefaultQueryLimit,
		run: func(ctx context.Context, rr engine.RecordReader, p map[string]string, limit int) ([]string, []map[string]any, error) {
			return listRuns(ctx, rr, engine.RunFilter{Status: engine.Status(p["status"]), Limit: limit})
		}},
	"failed_runs": {params: map[string]bool{"hook": false}, defLimit: DefaultQueryLimit,
		run: func(ctx context.Context, rr engine.RecordReader, p map[string]string, limit int) ([]string, []map[string]any, error) {
			return listRuns(ctx, rr, engine.RunFilter{Hook: p["hook"], Status: engine.StatusFailed, Limit: limit})
		}},
	"runs_of_hook": {params: map[string]bool{"hook": true, "status": false}, defLimit: DefaultQueryLimit,
		run: func(ctx context.Context, rr engine.RecordReader, p map[string]string, limit int) ([]string, []map[string]any, error) {
			if p["hook"] == "" {
				return nil, nil, errors.New("params.hook: empty hook name")
			}
			return listRuns(ctx, rr, engine.RunFilter{Hook: p["hook"], Status: engine.Status(p["status"]), Limit: limit})
		}},
	"recent_events": {params: map[string]bool{"type": false}, defLimit: DefaultQueryLimit,
		run: func(ctx context.Context, rr engine.RecordReader, p map[string]string, limit int) ([]string, []map[string]any, error) {
			evs, err := rr.ListEvents(ctx, p["type"], limit)
			if err != nil {
				return nil, nil, err
			}
			rows := make([]map[string]any, len(evs))
			for i, ev := range evs {
				data := map[string]any{}
				for k, v := range ev.Data {
					data[k] = v
				}
				rows[i] = map[string]any{"seq": ev.Seq, "id": ev.ID, "type": ev.Type, "source": ev.Source,
					"time": timeText(ev.Time), "depth": ev.Depth, "data": data}
			}
			return []string{"seq", "id", "type", "source", "time", "depth", "data"}, rows, nil
		}},
	"hook_activity": {params: map[string]bool{}, defLimit: DefaultActivityRuns, run: hookActivity},
}

var runColumns = []string{"id", "hook", "status", "trigger", "reason", "error", "event_type", "queued_at", "started_at", "finished_at", "duration_ms"}

func listRuns(ctx context.Context, rr engine.RecordReader, f engine.RunFilter) ([]string, []map[string]any, error) {
	runs, err := rr.ListRuns(ctx, f)
	if err != nil {
		return nil, nil, err
	}
	rows := make([]map[string]any, len(runs))
	for i, r := range runs {
		rows[i] = map[string]any{
			"id": r.ID, "hook": r.Hook, "status": string(r.Status), "trigger": r.Trigger, "reason": r.Reason,
			"error": r.Error, "event_type": r.EventType, "queued_at": timeText(r.QueuedAt),
			"started_at": timeText(r.StartedAt), "finished_at": timeText(r.FinishedAt),
			"duration_ms": r.Duration().Milliseconds(),
		}
	}
	return runColumns, rows, nil
}

var activityStatuses = []engine.Status{engine.StatusCompleted, engine.StatusFailed, engine.StatusSkipped,
	engine.StatusCancelled, engine.StatusDropped, engine.StatusInterrupted, engine.StatusQueued, engine.StatusRunning}

// hookActivity counts the recent runs of each hook by status.
func hookActivity(ctx context.Context, rr engine.RecordReader, _ map[string]string, limit int) ([]string, []map[string]any, error) {
	runs, err := rr.ListRuns(ctx, engine.RunFilter{Limit: limit})
	if err != nil {
		return nil, nil, err
	}
	byHook := map[string]map[string]any{}
	var hooks []string
	for _, r := range runs { // newest first
		row, ok := byHook[r.Hook]
		if !ok {
			row = map[string]any{"hook": r.Hook, "runs": 0, "last_status": string(r.Status), "last_run": timeText(r.QueuedAt)}
			if !r.StartedAt.IsZero() {
				row["last_run"] = timeText(r.StartedAt)
			}
			for _, st := range activityStatuses {
				row[string(st)] = 0
			}
			byHook[r.Hook] = row
			hooks = append(hooks, r.Hook)
		}
		row["runs"] = row["runs"].(int) + 1
		if n, ok := row[string(r.Status)].(int); ok {
			row[string(r.Status)] = n + 1
		}
	}
	sort.Strings(hooks)
	cols := []string{"hook", "runs"}
	for _, st := range activityStatuses {
		cols = append(cols, string(st))
	}
	cols = append(cols, "last_status", "last_run")
	rows := make([]map[string]any, len(hooks))
	for i, h := range hooks {
		rows[i] = byHook[h]
	}
	return cols, rows, nil
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// sqlParam is one bound parameter: a literal from the hook file, or a
// template expanded at run time.
type sqlParam struct {
	name    string // "" for a positional parameter
	literal any    // used when tmpl is ""
	tmpl    string
	isTmpl  bool
}

// dbQueryStep runs a named query over hookd's records, or SQL against a
// SQLite file opened read-only.
type dbQueryStep struct {
	def     *engine.StepDef
	query   string
	named   namedQuery
	sql     string
	db      string // may hold placeholders
	params  []sqlParam
	limit   int
	maxRows int
	roots   []string
	timeout time.Duration
}

func newDBQuery(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
	var c dbQueryConfig
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	s := &dbQueryStep{def: def, query: c.Query, sql: c.SQL, db: c.DB, limit: c.Limit, maxRows: c.MaxRows, timeout: def.Timeout}
	if s.timeout <= 0 {
		s.timeout = DefaultQueryTimeout
	}
	switch {
	case c.Query == "" && strings.TrimSpace(c.SQL) == "":
		return nil, fieldErr(cfg, "query", "required: a named query (%s) or sql with db", strings.Join(namedQueryNames(), ", "))
	case c.Query != "" && c.SQL != "":
		return nil, fieldErr(cfg, "sql", "give either query or sql, not both")
	}
	if c.Limit < 0 || c.Limit > maxQueryLimit {
		return nil, fieldErr(cfg, "limit", "must be between 1 and %d (got %d)", maxQueryLimit, c.Limit)
	}
	if c.MaxRows < 0 {
		return nil, fieldErr(cfg, "max_rows", "must be > 0 (got %d)", c.MaxRows)
	}
	if s.maxRows == 0 {
		s.maxRows = DefaultMaxRows
	}
	roots, err := checkRoots(cfg, c.Roots)
	if err != nil {
		return nil, err
	}
	s.roots = roots

	if c.Query != "" {
		q, ok := namedQueries[c.Query]
		if !ok {
			return nil, fieldErr(cfg, "query", "unknown query %q (want %s)", c.Query, strings.Join(namedQueryNames(), ", "))
		}
		s.named = q
		if c.DB != "" {
			return nil, fieldErr(cfg, "db", "a named query reads hookd's own records; db is for sql")
		}
		if len(c.Roots) > 0 {
			return nil, fieldErr(cfg, "roots", "a named query reads hookd's own records; roots are for sql")
		}
		if s.limit == 0 {
			s.limit = q.defLimit
		}
		m, ok := c.Params.(map[string]any)
		if c.Params != nil && !ok {
			return nil, fieldErr(cfg, "params", "must be a mapping for a named query (got %s)", kindOf(c.Params))
		}
		for name, v := range m {
			if _, known := q.params[name]; !known {
				return nil, fieldErr(cfg, "params."+name, "query %s has no parameter %q%s", c.Query, name, paramList(q.params))
			}
			p, err := newSQLParam(cfg, "params."+name, name, v)
			if err != nil {
				return nil, err
			}
			s.params = append(s.params, p)
		}
		for name, required := range q.params {
			if _, given := m[name]; required && !given {
				return nil, fieldErr(cfg, "params", "query %s needs params.%s", c.Query, name)
			}
		}
		sort.Slice(s.params, func(i, j int) bool { return s.params[i].name < s.params[j].name })
		return s, nil
	}

	if strings.Contains(c.SQL, "{{") {
		return nil, fieldErr(cfg, "sql", "must not hold placeholders: pass values through params, which are bound, never spliced into the SQL")
	}
	if err := checkPathTemplate(cfg, "db", c.DB, true); err != nil {
		return nil, err
	}
	switch ps := c.Params.(type) {
	case nil:
	case []any:
		for i, v := range ps {
			p, err := newSQLParam(cfg, fmt.Sprintf("params[%d]", i), "", v)
			if err != nil {
				return nil, err
			}
			s.params = append(s.params, p)
		}
	case map[string]any:
		for name, v := range ps {
			if !validParamName(name) {
				return nil, fieldErr(cfg, "params."+name, "%q is not a parameter name (letters, digits, '_'; used as :name in the SQL)", name)
			}
			p, err := newSQLParam(cfg, "params."+name, name, v)
			if err != nil {
				return nil, err
			}
			s.params = append(s.params, p)
		}
		sort.Slice(s.params, func(i, j int) bool { return s.params[i].name < s.params[j].name })
	default:
		return nil, fieldErr(cfg, "params", "must be a list (for ? parameters) or a mapping (for :name parameters), got %s", kindOf(c.Params))
	}
	return s, nil
}

func newSQLParam(cfg engine.Decoder, field, name string, v any) (sqlParam, error) {
	p := sqlParam{name: name}
	switch x := v.(type) {
	case string:
		if _, err := engine.ParsePlaceholders(x); err != nil {
			return p, fieldErr(cfg, field, "%v", err)
		}
		p.tmpl, p.isTmpl = x, true
	case nil, bool, int, int64, uint64, float64:
		p.literal = x
	default:
		return p, fieldErr(cfg, field, "must be a string, number, boolean or null (got %s)", kindOf(v))
	}
	return p, nil
}

func validParamName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func namedQueryNames() []string {
	names := make([]string, 0, len(namedQueries))
	for n := range namedQueries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func paramList(params map[string]bool) string {
	if len(params) == 0 {
		return " (it takes none)"
	}
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	sort.Strings(names)
	return " (want " + strings.Join(names, ", ") + ")"
}

// Templates returns the strings of the step that may hold placeholders.
func (s *dbQueryStep) Templates() []string {
	var out []string
	if s.db != "" {
		out = append(out, s.db)
	}
	for _, p := range s.params {
		if p.isTmpl {
			out = append(out, p.tmpl)
		}
	}
	return out
}

// value resolves a parameter. A template that is exactly one placeholder
// binds the value with its type (numbers, booleans, null; objects and
// lists as JSON text); any other template binds the expanded text.
func (p *sqlParam) value(scope *engine.Scope) (any, error) {
	if !p.isTmpl {
		return p.literal, nil
	}
	phs, err := engine.ParsePlaceholders(p.tmpl)
	if err != nil {
		return nil, err
	}
	if len(phs) == 1 && phs[0].Start == 0 && phs[0].End == len(p.tmpl) {
		v, err := scope.Lookup(phs[0].Path)
		if err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case nil, bool, string, int, int64:
			return x, nil
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
				return int64(x), nil
			}
			return x, nil
		}
		return engine.Stringify(v), nil
	}
	return engine.Expand(p.tmpl, scope, nil)
}

// Run runs the query. A query that fails, writes, or names a database
// outside the roots is an error; no rows is an empty result (count 0).
func (s *dbQueryStep) Run(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
	res := newResult(s.def, map[string]any{"rows": []any{}, "columns": []any{}})
	res.Count = new(0)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	scope := scopeOf(env)
	var (
		cols []string
		rows []map[string]any
		more bool
		err  error
	)
	if s.query != "" {
		cols, rows, err = s.runNamed(ctx, env, scope)
		if len(rows) > s.maxRows {
			rows, more = rows[:s.maxRows], true
		}
	} else {
		cols, rows, more, err = s.runSQL(ctx, env, scope)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %s: %w", s.timeout, err)
		}
		return fail(res, err)
	}
	list := make([]any, len(rows))
	for i, r := range rows {
		list[i] = r
	}
	colList := make([]any, len(cols))
	for i, c := range cols {
		colList[i] = c
	}
	out, err := json.Marshal(list)
	if err != nil {
		return fail(res, fmt.Errorf("encode rows: %w", err))
	}
	res.Output = string(out)
	res.Fields["rows"] = list
	res.Fields["columns"] = colList
	res.Count, res.Truncated = new(len(list)), more
	return done(res)
}

func (s *dbQueryStep) runNamed(ctx context.Context, env *engine.StepEnv, scope *engine.Scope) ([]string, []map[string]any, error) {
	if env.Records == nil {
		return nil, nil, errors.New("hookd's records are not available to this step")
	}
	params := map[string]string{}
	for _, p := range s.params {
		v, err := p.value(scope)
		if err != nil {
			return nil, nil, fmt.Errorf("params.%s: %w", p.name, err)
		}
		params[p.name] = engine.Stringify(v)
	}
	cols, rows, err := s.named.run(ctx, env.Records, params, s.limit)
	if err != nil {
		return nil, nil, fmt.Errorf("query %s: %w", s.query, err)
	}
	return cols, rows, nil
}

func (s *dbQueryStep) runSQL(ctx context.Context, env *engine.StepEnv, scope *engine.Scope) ([]string, []map[string]any, bool, error) {
	args := make([]any, 0, len(s.params))
	for i, p := range s.params {
		v, err := p.value(scope)
		if err != nil {
			if p.name != "" {
				return nil, nil, false, fmt.Errorf("params.%s: %w", p.name, err)
			}
			return nil, nil, false, fmt.Errorf("params[%d]: %w", i, err)
		}
		if p.name != "" {
			v = sql.Named(p.name, v)
		}
		args = append(args, v)
	}
	dbPath, err := engine.Expand(s.db, scope, nil)
	if err != nil {
		return nil, nil, false, fmt.Errorf("db: %w", err)
	}
	roots, err := NewRoots(env.Workdir, s.roots)
	if err != nil {
		return nil, nil, false, err
	}
	real, err := roots.Resolve(dbPath)
	if err != nil {
		return nil, nil, false, fmt.Errorf("db: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, nil, false, fmt.Errorf("db: %w", err)
	} else if !fi.Mode().IsRegular() {
		return nil, nil, false, fmt.Errorf("db: %q is not a file", dbPath)
	}
	if own, err := os.Stat(env.Database); env.Database != "" && err == nil && os.SameFile(fi, own) {
		return nil, nil, false, fmt.Errorf("db: %q is hookd's own database; read its runs and events with a named query (%s)",
			dbPath, strings.Join(namedQueryNames(), ", "))
	}
	return querySQLite(ctx, real, s.sql, args, s.maxRows)
}

// querySQLite runs query on the SQLite file at path, opened read-only on
// one connection that may only read: the file is opened with mode=ro and
// query_only, ATTACH is disabled, and an authorizer refuses every
// operation but SELECT, reading columns, calling functions and a few
// pragmas that describe the schema.
func querySQLite(ctx context.Context, path, query string, args []any, maxRows int) ([]string, []map[string]any, bool, error) {
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?mode=ro&_query_only=1"
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, nil, false, fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, nil, false, fmt.Errorf("open %s: %w", path, err)
	}
	defer conn.Close()
	if err := conn.Raw(restrictConn); err != nil {
		return nil, nil, false, fmt.Errorf("open %s: %w", path, err)
	}
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, false, fmt.Errorf("sql: %w", explainSQLError(err))
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, false, fmt.Errorf("sql: %w", err)
	}
	var out []map[string]any
	more := false
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if len(out) == maxRows {
			more = true
			break
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, false, fmt.Errorf("sql: %w", err)
		}
		row := make(map[string]any, len(cols))
		for i, c := range cols {
			row[c] = sqlValue(vals[i])
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, false, fmt.Errorf("sql: %w", explainSQLError(err))
	}
	return cols, out, more, nil
}

// sqlValue makes a scanned value JSON- and placeholder-friendly.
func sqlValue(v any) any {
	switch x := v.(type) {
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return "base64:" + base64.StdEncoding.EncodeToString(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return v
}
