package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// benchRuns is how many indexed runs BenchmarkSearchRuns searches.
const benchRuns = 1_000_000

// fillSearchIndex puts n finished runs and their index entries in d in a
// few statements, inside SQLite: each run's text is 40 words drawn from a
// vocabulary of 4,900 (w0 … w4899), skewed so that low numbers are common
// and high ones rare, as words are.
func fillSearchIndex(tb testing.TB, d *DB, n int) {
	tb.Helper()
	ctx := context.Background()
	word := `'w' || ((abs(random()) % 70) * (abs(random()) % 70))`
	words := make([]string, 40)
	for i := range words {
		words[i] = word
	}
	const batch = 100_000
	for from := 1; from <= n; from += batch {
		to := min(from+batch-1, n)
		series := fmt.Sprintf(`WITH RECURSIVE c(x) AS (SELECT %d UNION ALL SELECT x + 1 FROM c WHERE x < %d) `, from, to)
		err := d.tx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, series+`INSERT INTO runs (seq, id, hook, "trigger", status, started_at, finished_at)
				SELECT x, 'run' || x, 'hook' || (x % 50), 'schedule', 'completed', x * 1000000000, x * 1000000000 + 1 FROM c`); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, series+`INSERT INTO runs_fts (docid, hook, body)
				SELECT x, 'hook' || (x % 50), `+strings.Join(words, ` || ' ' || `)+` FROM c`)
			return err
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkSearchRuns prints the latency of SearchRuns over 1,000,000
// indexed runs (target: p50 <= 20 ms), for two-word queries of common,
// middling and rare words.
func BenchmarkSearchRuns(b *testing.B) {
	d, _ := openTest(b)
	start := time.Now()
	fillSearchIndex(b, d, benchRuns)
	b.Logf("filled %d runs in %s", benchRuns, time.Since(start).Round(time.Millisecond))
	queries := []string{"w100 w2000", "w12 w49", "w1500 w2400", "w3600 w4000", "w64 w900", "w4761 w3", "w2 w4", "w777 w1234"}
	ctx := context.Background()
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		q := queries[i%len(queries)]
		t0 := time.Now()
		hits, err := d.SearchRuns(ctx, engine.SearchQuery{Text: q, Limit: 5})
		lat = append(lat, time.Since(t0))
		if err != nil || len(hits) == 0 {
			b.Fatalf("%s: %d hits, %v", q, len(hits), err)
		}
	}
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[min(int(q*float64(len(lat))), len(lat)-1)] }
	b.ReportMetric(float64(p(0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p(0.99).Microseconds())/1000, "p99-ms")
	b.Logf("search over %d runs: p50 %s, p99 %s (%d queries)", benchRuns, p(0.5), p(0.99), len(lat))
}

// BenchmarkSearchIndexCost prints what indexing adds to storing a run's
// final record (target: <= 10 %): FinishRun of the same run with the index
// trigger and without it, interleaved.
func BenchmarkSearchIndexCost(b *testing.B) {
	with, _ := openTest(b)
	without, _ := openTest(b)
	ctx := context.Background()
	if _, err := without.w.ExecContext(ctx, `DROP TRIGGER runs_fts_index`); err != nil {
		b.Fatal(err)
	}
	output := strings.Repeat("--- FAIL: TestLogin (0.31s)\n    login_test.go:42: timeout waiting for session token\n", 25)
	answer := strings.Repeat("TestLogin fails because the session store times out under load; raise the timeout. ", 6)
	finish := func(d *DB) time.Duration {
		r := &engine.Run{ID: engine.NewID(), Hook: "triage", Trigger: "schedule", Status: engine.StatusRunning,
			StartedAt: time.Now(), Event: []byte(`{"test":"TestLogin","branch":"main"}`)}
		if err := d.StartRun(ctx, r); err != nil {
			b.Fatal(err)
		}
		r.Status, r.FinishedAt, r.Response, r.Prompt = engine.StatusCompleted, time.Now(), answer, "Triage:\n"+output
		r.Steps = []*engine.StepResult{{Index: 0, Name: "tests", Type: "shell", Output: output}}
		t0 := time.Now()
		if err := d.FinishRun(ctx, r); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	var tw, to time.Duration
	n := 0
	for b.Loop() {
		tw += finish(with)
		to += finish(without)
		n++
	}
	per := func(d time.Duration) time.Duration { return d / time.Duration(n) }
	cost := float64(tw-to) / float64(to) * 100
	b.ReportMetric(float64(per(tw).Microseconds()), "finish-indexed-us")
	b.ReportMetric(float64(per(to).Microseconds()), "finish-plain-us")
	b.ReportMetric(cost, "index-cost-%")
	b.Logf("FinishRun %s with the index, %s without: indexing costs %s a run, %.1f%% of the run-record write (%d runs each)",
		per(tw), per(to), per(tw)-per(to), cost, n)
}
