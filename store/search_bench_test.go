package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// benchRuns is how many indexed runs BenchmarkSearchRuns searches.
const benchRuns = 1_000_000

// searchFixture is the database of benchRuns indexed runs, built once per
// test binary (a benchmark function may run several times: -count) in a
// directory TestMain removes.
var searchFixture struct {
	once sync.Once
	dir  string
	path string
	took time.Duration
	err  error
}

// searchFixturePath returns the fixture, building it on first use.
func searchFixturePath(tb testing.TB) string {
	tb.Helper()
	f := &searchFixture
	f.once.Do(func() {
		f.dir, f.err = os.MkdirTemp("", "hookd-search-bench-")
		if f.err != nil {
			return
		}
		f.path = filepath.Join(f.dir, "hookd.db")
		start := time.Now()
		f.err = buildSearchFixture(f.path, benchRuns)
		f.took = time.Since(start)
	})
	if f.err != nil {
		tb.Fatal(f.err)
	}
	return f.path
}

// removeSearchFixture deletes the fixture's directory, if one was made.
func removeSearchFixture() {
	if searchFixture.dir != "" {
		os.RemoveAll(searchFixture.dir)
	}
}

// buildSearchFixture creates a store at path with n finished runs,
// indexed (as the indexer leaves them once it caught up), in one
// transaction of two statements that SQLite runs without a round trip a
// row: each run's answer is 40 words drawn from a vocabulary of 4,900 (w0 …
// w4899), skewed so that low numbers are common and high ones rare, as
// words are.
func buildSearchFixture(path string, n int) error {
	d, err := Open(path)
	if err != nil {
		return err
	}
	defer d.Close()
	ctx := context.Background()
	for _, p := range []string{`PRAGMA synchronous = OFF`, `PRAGMA cache_size = -262144`} {
		if _, err := d.w.ExecContext(ctx, p); err != nil {
			return err
		}
	}
	word := `'w' || ((abs(random()) % 70) * (abs(random()) % 70))`
	words := make([]string, 40)
	for i := range words {
		words[i] = word
	}
	series := fmt.Sprintf(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d) `, n)
	return d.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, series+`INSERT INTO runs (seq, id, hook, "trigger", status, started_at, finished_at, response)
			SELECT x, 'run' || x, 'hook' || (x % 50), 'schedule', 'completed', x * 1000000000, x * 1000000000 + 1,
			`+strings.Join(words, ` || ' ' || `)+` FROM c`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO runs_fts (docid, hook, body) SELECT rowid, hook, body FROM runs_fts_text`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE runs_fts_mark SET seq = ?`, n)
		return err
	})
}

// BenchmarkSearchRuns prints the latency of SearchRuns over 1,000,000
// indexed runs (target: p50 <= 20 ms), for two-word queries of common,
// middling and rare words.
func BenchmarkSearchRuns(b *testing.B) {
	path := searchFixturePath(b)
	b.Logf("built the fixture of %d runs in %s", benchRuns, searchFixture.took.Round(time.Millisecond))
	d, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	queries := []string{"w100 w2000", "w12 w49", "w1500 w2400", "w3600 w4000", "w64 w900", "w4761 w3", "w2 w4", "w777 w1234"}
	ctx := context.Background()
	var lat []time.Duration
	c0 := procCPU(b)
	for i := 0; b.Loop(); i++ {
		q := queries[i%len(queries)]
		t0 := time.Now()
		hits, err := d.SearchRuns(ctx, engine.SearchQuery{Text: q, Limit: 5})
		lat = append(lat, time.Since(t0))
		if err != nil || len(hits) == 0 {
			b.Fatalf("%s: %d hits, %v", q, len(hits), err)
		}
	}
	cpu := (procCPU(b) - c0) / time.Duration(len(lat))
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[min(int(q*float64(len(lat))), len(lat)-1)] }
	b.ReportMetric(float64(p(0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/1000, "cpu-ms/query")
	b.Logf("search over %d runs: p50 %s, p99 %s, %s of CPU a query (%d queries); p50 is %.2f of the 20 ms target",
		benchRuns, p(0.5), p(0.99), cpu, len(lat), float64(p(0.5))/float64(20*time.Millisecond))
}

// BenchmarkSearchIndexCost prints what indexing adds to storing a run's
// final record (target: <= 10 %): FinishRun on a store whose indexer
// indexes in the background as runs finish, and on one with no indexing
// at all, interleaved. It also prints what the indexer spends a run, in
// its batches, outside the run's write.
func BenchmarkSearchIndexCost(b *testing.B) {
	with, _ := openTest(b)
	without, _ := openTest(b)
	ctx := context.Background()
	without.ix.closed = true // no indexer: runs are written and never indexed
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
	var tw, to []time.Duration
	for b.Loop() {
		tw = append(tw, finish(with))
		to = append(to, finish(without))
	}
	b.StopTimer()
	n := len(tw)
	// The indexer's own cost: the same runs, indexed in its batches.
	t0, c0 := time.Now(), procCPU(b)
	if err := without.IndexQueued(ctx); err != nil {
		b.Fatal(err)
	}
	ti, ci := time.Since(t0), procCPU(b)-c0
	for _, d := range []*DB{with, without} {
		if err := d.IndexQueued(ctx); err != nil {
			b.Fatal(err)
		}
		var indexed int
		if err := d.r.QueryRowContext(ctx, `SELECT count(*) FROM runs_fts_docsize`).Scan(&indexed); err != nil || indexed != n {
			b.Fatalf("%d runs indexed (%v), want %d", indexed, err, n)
		}
	}
	// Medians, and means: the machine's other work adds outliers to both
	// sides; the mean also holds the writes that waited for a batch.
	med := func(ds []time.Duration) time.Duration {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	mean := func(ds []time.Duration) time.Duration {
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		return sum / time.Duration(len(ds))
	}
	mw, mo, aw, ao, perIdx, cpuIdx := med(tw), med(to), mean(tw), mean(to), ti/time.Duration(n), ci/time.Duration(n)
	cost := float64(mw-mo) / float64(mo) * 100
	costMean := float64(aw-ao) / float64(ao) * 100
	later := float64(perIdx) / float64(mo) * 100
	b.ReportMetric(float64(mw.Microseconds()), "finish-indexed-us")
	b.ReportMetric(float64(mo.Microseconds()), "finish-plain-us")
	b.ReportMetric(cost, "index-cost-%")
	b.ReportMetric(later, "indexer-%")
	b.ReportMetric(float64(cpuIdx.Microseconds()), "indexer-cpu-us")
	b.Logf("FinishRun with the indexer at work %s (median; mean %s), without indexing %s (mean %s): indexing costs the run's write "+
		"%.1f%% (median; %.2f of the 10%% target), %.1f%% (mean); the indexer spends %s a run (%s of CPU) in batches of %d, "+
		"outside the write (%.0f%% of the median write) (%d runs each)",
		mw, aw, mo, ao, cost, cost/10, costMean, perIdx, cpuIdx, indexBatch, later, n)
}

// procCPU is the CPU time the process used so far.
func procCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestMain runs the lock-holding helper process when asked to
// (lockHelperMain), and otherwise the tests, then removes the search
// benchmark's fixture.
func TestMain(m *testing.M) {
	if path := os.Getenv("HOOKD_STORE_LOCK_HELPER"); path != "" {
		os.Exit(lockHelperMain(path))
	}
	code := m.Run()
	removeSearchFixture()
	os.Exit(code)
}
