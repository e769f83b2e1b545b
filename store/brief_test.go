package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// briefRuns records r00..r09, queued a minute apart from t0, alternating
// hooks a and b; odd ones are skipped.
func briefRuns(t *testing.T, d *DB) {
	t.Helper()
	for i := range 10 {
		at := t0.Add(time.Duration(i) * time.Minute)
		r := &engine.Run{ID: fmt.Sprintf("r%02d", i), Hook: []string{"a", "b"}[i%2], Status: engine.StatusCompleted,
			QueuedAt: at, StartedAt: at, FinishedAt: at.Add(time.Duration(i) * time.Second)}
		if i%2 == 1 {
			r.Status, r.StartedAt = engine.StatusSkipped, time.Time{}
		}
		mustRun(t, d.InsertRun(context.Background(), r))
	}
}

// TestDashboardQueriesUseIndexes checks SQLite's plan for every query
// behind the dashboard's pages: each finds its rows through an index or
// the primary key, never by scanning the runs table.
func TestDashboardQueriesUseIndexes(t *testing.T) {
	d, _ := openTest(t)
	n := timeInt(t0)
	queries := map[string][]any{
		`SELECT ` + briefCols + ` FROM runs WHERE hook = ? ORDER BY seq DESC LIMIT ?`:                                                                     {"a", 50},
		`SELECT ` + briefCols + ` FROM runs WHERE queued_at >= ? ORDER BY queued_at DESC LIMIT ?`:                                                         {n, 100},
		`SELECT seq FROM runs WHERE queued_at >= ? ORDER BY queued_at LIMIT 1`:                                                                            {n},
		`SELECT seq FROM runs WHERE queued_at < ? ORDER BY queued_at DESC LIMIT 1`:                                                                        {n},
		`SELECT ` + runCols + `, seq FROM runs ORDER BY seq DESC LIMIT ?`:                                                                                 {50},
		`SELECT ` + runCols + `, seq FROM runs WHERE hook = ? ORDER BY seq DESC LIMIT ?`:                                                                  {"a", 50},
		`SELECT ` + runCols + `, seq FROM runs WHERE status = ? ORDER BY seq DESC LIMIT ?`:                                                                {"failed", 50},
		`SELECT ` + runCols + `, seq FROM runs WHERE seq >= ? AND +queued_at >= ? ORDER BY seq DESC LIMIT ?`:                                              {1, n, 50},
		`SELECT ` + runCols + `, seq FROM runs WHERE hook = ? AND seq >= ? AND +queued_at >= ? AND seq <= ? AND +queued_at < ? ORDER BY seq DESC LIMIT ?`: {"a", 1, n, 9, n, 50},
		`SELECT ` + runCols + ` FROM runs WHERE id = ?`:                                                                                                   {"r1"},
	}
	for q, args := range queries {
		rows, err := d.r.Query(`EXPLAIN QUERY PLAN `+q, args...)
		mustRun(t, err)
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			mustRun(t, rows.Scan(&id, &parent, &notused, &detail))
			plan = append(plan, detail)
		}
		rows.Close()
		p := strings.Join(plan, "; ")
		// The unfiltered listing walks the primary key from the newest
		// and stops at its limit: SQLite calls that a scan.
		walk := !strings.Contains(q, "WHERE") && strings.Contains(q, "ORDER BY seq DESC LIMIT")
		if strings.Contains(p, "SCAN runs") && !strings.Contains(p, "USING") && !walk {
			t.Errorf("query scans the runs table: %s\n  plan: %s", q, p)
		}
		if strings.Contains(p, "USE TEMP B-TREE") {
			t.Errorf("query sorts its rows: %s\n  plan: %s", q, p)
		}
	}
}
