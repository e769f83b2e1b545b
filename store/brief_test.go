package store

import (
	"context"
	"fmt"
	"reflect"
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

func TestListRunsByTime(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	briefRuns(t, d)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	tests := []struct {
		name string
		f    engine.RunFilter
		want []string
	}{
		{"since", engine.RunFilter{Since: at(7)}, []string{"r09", "r08", "r07"}},
		{"until", engine.RunFilter{Until: at(2)}, []string{"r01", "r00"}},
		{"between", engine.RunFilter{Since: at(3), Until: at(6)}, []string{"r05", "r04", "r03"}},
		{"between, hook, limit", engine.RunFilter{Hook: "a", Since: at(1), Until: at(9), Limit: 2}, []string{"r08", "r06"}},
		{"between, before", engine.RunFilter{Since: at(3), Until: at(6), Before: "r05"}, []string{"r04", "r03"}},
		{"since after the last", engine.RunFilter{Since: at(11)}, nil},
		{"until before the first", engine.RunFilter{Until: at(0)}, nil},
		{"status and since", engine.RunFilter{Status: engine.StatusSkipped, Since: at(4)}, []string{"r09", "r07", "r05"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs, err := d.ListRuns(ctx, tt.f)
			mustRun(t, err)
			if got := runIDs(runs); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ListRuns(%+v) = %v, want %v", tt.f, got, tt.want)
			}
		})
	}
}

func TestBriefs(t *testing.T) {
	ctx := context.Background()
	d, _ := openTest(t)
	briefRuns(t, d)
	latest, err := d.LatestBriefs(ctx, "a", 3)
	mustRun(t, err)
	var ids []string
	for _, b := range latest {
		ids = append(ids, b.ID)
	}
	if !reflect.DeepEqual(ids, []string{"r08", "r06", "r04"}) {
		t.Errorf("LatestBriefs(a, 3) = %v, want r08 r06 r04", ids)
	}
	if b := latest[0]; b.Hook != "a" || b.Status != engine.StatusCompleted || b.Duration() != 8*time.Second ||
		!b.QueuedAt.Equal(t0.Add(8*time.Minute)) {
		t.Errorf("LatestBriefs: first is %+v", b)
	}
	since, err := d.BriefsSince(ctx, t0.Add(8*time.Minute), 100)
	mustRun(t, err)
	if len(since) != 2 || since[0].ID != "r09" || since[1].ID != "r08" || since[0].Status != engine.StatusSkipped {
		t.Errorf("BriefsSince = %+v, want r09 (skipped), r08", since)
	}
	capped, err := d.BriefsSince(ctx, t0, 4)
	mustRun(t, err)
	if len(capped) != 4 || capped[0].ID != "r09" {
		t.Errorf("BriefsSince with limit 4 = %+v, want the 4 newest", capped)
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
