package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/engine"
)

// finishedRun stores a run that started and finished with the given
// texts.
func finishedRun(t testing.TB, d *DB, hook, output, response string, at time.Time) *engine.Run {
	t.Helper()
	ctx := context.Background()
	r := &engine.Run{ID: engine.NewID(), Hook: hook, Trigger: "manual", Status: engine.StatusRunning, StartedAt: at, QueuedAt: at}
	if err := d.StartRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.Status, r.FinishedAt, r.Response = engine.StatusCompleted, at.Add(time.Second), response
	r.Steps = []*engine.StepResult{{Index: 0, Name: "df", Type: "shell", Output: output}}
	if err := d.FinishRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSearchRuns(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	disk := finishedRun(t, d, "disk", "/dev/sda1 97% used\nline two", "The disk is nearly full: clean /var/log.", t0)
	other := finishedRun(t, d, "disk", "/dev/sda1 40% used", "All fine.", t0.Add(time.Hour))
	deploy := finishedRun(t, d, "deploy", "deploy of api failed: disk full", "Roll back the api deploy.", t0.Add(2*time.Hour))
	// A run that a gate refused is not indexed; neither is a queued one.
	if err := d.InsertRun(ctx, &engine.Run{ID: engine.NewID(), Hook: "disk", Status: engine.StatusSkipped, Reason: "paused: disk full",
		QueuedAt: t0, FinishedAt: t0}); err != nil {
		t.Fatal(err)
	}

	hits, err := d.SearchRuns(ctx, engine.SearchQuery{Text: "disk full"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 {
		t.Fatalf("hits %+v", hits)
	}
	for _, h := range hits {
		if h.RunID != disk.ID && h.RunID != deploy.ID || h.Score <= 0 || !strings.Contains(h.Snippet, "[") {
			t.Errorf("hit %+v", h)
		}
	}
	// All words first; any word fills up to the limit.
	hits, _ = d.SearchRuns(ctx, engine.SearchQuery{Text: "nearly fine", Limit: 5})
	if len(hits) != 2 {
		t.Errorf("any-word hits: %+v", hits)
	}
	// Hook filter, since, limit.
	hits, _ = d.SearchRuns(ctx, engine.SearchQuery{Text: "sda1", Hook: "disk"})
	if len(hits) != 2 || hits[0].Hook != "disk" {
		t.Errorf("hook filter: %+v", hits)
	}
	hits, _ = d.SearchRuns(ctx, engine.SearchQuery{Text: "sda1", Since: t0.Add(30 * time.Minute)})
	if len(hits) != 1 || hits[0].RunID != other.ID {
		t.Errorf("since: %+v", hits)
	}
	// Operators and quotes are words, not query syntax.
	if _, err := d.SearchRuns(ctx, engine.SearchQuery{Text: `"disk" OR NEAR( -full* ^`}); err != nil {
		t.Errorf("hostile query: %v", err)
	}
	if _, err := d.SearchRuns(ctx, engine.SearchQuery{Text: " ;; "}); err == nil {
		t.Error("a query without words searched")
	}
	// A prefix (dep*), a column filter (hook:deploy) and NEAR do not work
	// as such: dep is no word of any run, and hook: names no column.
	for _, q := range []string{"dep*", "hook:dep*", "NEAR(dep* ap*)", `"dep"*`, "^dep"} {
		if hits, err := d.SearchRuns(ctx, engine.SearchQuery{Text: q}); err != nil || len(hits) != 0 {
			t.Errorf("%s: %v %+v", q, err, hits)
		}
	}
	// A huge query: 16 words are searched, and an error quotes 100
	// characters of it.
	if _, err := d.SearchRuns(ctx, engine.SearchQuery{Text: strings.Repeat("disk full ", 100000)}); err != nil {
		t.Errorf("huge query: %v", err)
	}
	if _, err := d.SearchRuns(ctx, engine.SearchQuery{Text: strings.Repeat("-", 1<<20)}); err == nil || len(err.Error()) > 200 {
		t.Errorf("a huge query without words: %.300v", err)
	}
	// Retention takes a run out of the index with it.
	if _, err := d.w.ExecContext(ctx, `DELETE FROM runs WHERE id = ?`, deploy.ID); err != nil {
		t.Fatal(err)
	}
	hits, _ = d.SearchRuns(ctx, engine.SearchQuery{Text: "deploy api"})
	if len(hits) != 0 {
		t.Errorf("a deleted run is still found: %+v", hits)
	}
	var n int
	if err := d.r.QueryRowContext(ctx, `SELECT count(*) FROM runs_fts_docsize`).Scan(&n); err != nil || n != 2 {
		t.Errorf("index rows %d (%v), want 2", n, err)
	}
}

// indexedRuns is how many runs the search index holds.
func indexedRuns(t *testing.T, d *DB) int {
	t.Helper()
	var n int
	if err := d.r.QueryRowContext(context.Background(), `SELECT count(*) FROM runs_fts_docsize`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitIndexed waits for the background indexer to hold n runs; it does
// not search, since a search indexes what is missing itself.
func waitIndexed(t *testing.T, d *DB, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for indexedRuns(t, d) != n {
		if time.Now().After(deadline) {
			t.Fatalf("the indexer holds %d runs after 60 s, want %d", indexedRuns(t, d), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSearchIndexer: a run's write does not index it; the background
// indexer does, soon after, in its own transaction; retention takes a
// pruned run out of the index and out of search.
func TestSearchIndexer(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	old := time.Now().Add(-48 * time.Hour)
	gone := finishedRun(t, d, "disk", "/dev/sda1 97% used", "Rotate the journal.", old)
	kept := finishedRun(t, d, "disk", "/dev/sda1 96% used", "Rotate the journal again.", time.Now())
	waitIndexed(t, d, 2)
	hits, err := d.SearchRuns(ctx, engine.SearchQuery{Text: "rotate journal"})
	if err != nil || len(hits) != 2 {
		t.Fatalf("hits %+v, %v", hits, err)
	}

	st, err := d.Prune(ctx, time.Now(), PrunePolicy{Retention: engine.Retention{Runs: 24 * time.Hour}})
	if err != nil || st.Runs != 1 {
		t.Fatalf("prune: %+v, %v", st, err)
	}
	if n := indexedRuns(t, d); n != 1 {
		t.Errorf("the index holds %d runs after the prune, want 1", n)
	}
	hits, err = d.SearchRuns(ctx, engine.SearchQuery{Text: "rotate journal sda1"})
	if err != nil || len(hits) != 1 || hits[0].RunID != kept.ID {
		t.Errorf("after the prune: hits %+v, %v (pruned: %s)", hits, err, gone.ID)
	}
}

// TestSearchIndexerMark: a run still running holds the indexer's mark,
// and runs that finish after it are indexed all the same; once it
// finishes it is indexed too, and the mark moves past all of them.
func TestSearchIndexerMark(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	at := time.Now()
	long := &engine.Run{ID: engine.NewID(), Hook: "long", Trigger: "manual", Status: engine.StatusRunning, StartedAt: at, QueuedAt: at}
	if err := d.StartRun(ctx, long); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		finishedRun(t, d, "short", "quick output", fmt.Sprintf("answer %d", i), at)
	}
	waitIndexed(t, d, 3)
	var mark, longSeq int64
	if err := d.r.QueryRowContext(ctx, `SELECT m.seq, r.seq FROM runs_fts_mark m, runs r WHERE r.id = ?`, long.ID).Scan(&mark, &longSeq); err != nil {
		t.Fatal(err)
	}
	if mark >= longSeq {
		t.Errorf("the mark %d passed the running run %d", mark, longSeq)
	}
	// A gate's record (never indexed) after them: the mark passes it.
	if err := d.InsertRun(ctx, &engine.Run{ID: engine.NewID(), Hook: "short", Status: engine.StatusSkipped, Reason: "cooldown",
		QueuedAt: at, FinishedAt: at}); err != nil {
		t.Fatal(err)
	}
	long.Status, long.FinishedAt, long.Response = engine.StatusCompleted, at.Add(time.Minute), "the long answer"
	if err := d.FinishRun(ctx, long); err != nil {
		t.Fatal(err)
	}
	waitIndexed(t, d, 4)
	var last int64
	if err := d.r.QueryRowContext(ctx, `SELECT (SELECT seq FROM runs_fts_mark), (SELECT max(seq) FROM runs)`).Scan(&mark, &last); err != nil {
		t.Fatal(err)
	}
	if mark != last {
		t.Errorf("mark %d, want the last run's seq %d", mark, last)
	}
	hits, err := d.SearchRuns(ctx, engine.SearchQuery{Text: "long answer", Limit: 1})
	if err != nil || len(hits) != 1 || hits[0].RunID != long.ID {
		t.Errorf("hits %+v, %v", hits, err)
	}
}

// TestSearchIndexedOnClose: a process that finishes a run and closes the
// store at once (a `hookd fire` without a daemon) leaves it indexed.
func TestSearchIndexedOnClose(t *testing.T) {
	d, path := openTest(t)
	r := finishedRun(t, d, "once", "a one-off output", "done", time.Now())
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if n := indexedRuns(t, d2); n != 1 {
		t.Fatalf("%d runs indexed after Close, want 1 (%s)", n, r.ID)
	}
}

// TestSearchHookFilterBeyondNewest: with a hook filter, the hook's runs
// are ranked even when every newer match is another hook's (the search
// ranks the newest matches only).
func TestSearchHookFilterBeyondNewest(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	at := time.Now()
	rare := finishedRun(t, d, "rare-hook", "kernel oops in module", "reboot", at)
	if _, err := d.w.ExecContext(ctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?)
		INSERT INTO runs (id, hook, "trigger", status, started_at, finished_at, response)
		SELECT 'bulk' || x, 'busy', 'schedule', 'running', 1, NULL, 'kernel oops again' FROM c`, maxCandidates+10); err != nil {
		t.Fatal(err)
	}
	if _, err := d.w.ExecContext(ctx, `UPDATE runs SET status = 'completed', finished_at = 2 WHERE hook = 'busy'`); err != nil {
		t.Fatal(err)
	}
	hits, err := d.SearchRuns(ctx, engine.SearchQuery{Text: "kernel oops", Hook: "rare-hook"})
	if err != nil || len(hits) != 1 || hits[0].RunID != rare.ID {
		t.Errorf("hits %+v, %v", hits, err)
	}
	hits, err = d.SearchRuns(ctx, engine.SearchQuery{Text: "kernel oops", Hook: "rare"})
	if err != nil || len(hits) != 0 {
		t.Errorf("a hook filter is the whole name: hits %+v, %v", hits, err)
	}
	if hits, _ := d.SearchRuns(ctx, engine.SearchQuery{Text: "kernel oops", Limit: 3}); len(hits) != 3 || hits[0].Hook != "busy" {
		t.Errorf("without a filter: %+v", hits)
	}
}

// TestSearchMarkMigration: a database indexed by the trigger of
// migration 10 gets the indexer's mark just below its first run still
// running, which is indexed once it finishes.
func TestSearchMarkMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hookd.db")
	db, err := sql.Open("sqlite3", path+"?_txlock=immediate")
	mustRun(t, err)
	mustRun(t, migrate(ctx, db, migrations[:10], clock.System{}))
	for _, q := range []string{
		`INSERT INTO runs (id, hook, status, started_at) VALUES ('r1', 'h', 'running', 1), ('r2', 'h', 'running', 1), ('r3', 'h', 'running', 1)`,
		`UPDATE runs SET status = 'completed', response = 'early answer' WHERE id IN ('r1', 'r3')`,
	} {
		_, err := db.ExecContext(ctx, q)
		mustRun(t, err)
	}
	mustRun(t, db.Close())

	d, err := Open(path)
	mustRun(t, err)
	defer d.Close()
	var mark int64
	mustRun(t, d.r.QueryRowContext(ctx, `SELECT seq FROM runs_fts_mark`).Scan(&mark))
	if mark != 1 || indexedRuns(t, d) != 2 {
		t.Fatalf("mark %d, %d runs indexed; want 1 and 2", mark, indexedRuns(t, d))
	}
	mustRun(t, d.FinishRun(ctx, &engine.Run{ID: "r2", Hook: "h", Status: engine.StatusCompleted, FinishedAt: time.Now(), Response: "late answer"}))
	hits, err := d.SearchRuns(ctx, engine.SearchQuery{Text: "late answer", Limit: 1})
	if err != nil || len(hits) != 1 || hits[0].RunID != "r2" {
		t.Errorf("hits %+v, %v", hits, err)
	}
	mustRun(t, d.r.QueryRowContext(ctx, `SELECT seq FROM runs_fts_mark`).Scan(&mark))
	if mark != 3 || indexedRuns(t, d) != 3 {
		t.Errorf("mark %d, %d runs indexed; want 3 and 3", mark, indexedRuns(t, d))
	}
}

// ftsBytes is what the search index's own tables hold: its segments'
// blocks and roots and its document sizes.
func ftsBytes(tb testing.TB, d *DB) int64 {
	tb.Helper()
	var n int64
	err := d.r.QueryRowContext(context.Background(), `SELECT
		(SELECT coalesce(sum(length(block)), 0) FROM runs_fts_segments) +
		(SELECT coalesce(sum(length(root)), 0) FROM runs_fts_segdir) +
		(SELECT coalesce(sum(length(size)), 0) FROM runs_fts_docsize)`).Scan(&n)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// ftsSegments is how many segments the search index has.
func ftsSegments(t *testing.T, d *DB) int {
	t.Helper()
	var n int
	mustRun(t, d.r.QueryRowContext(context.Background(), `SELECT count(*) FROM runs_fts_segdir`).Scan(&n))
	return n
}

// TestSearchIndexShrinksAfterPrune: the runs retention deletes leave the
// index with them — their words, not only their docids — so the index
// after a prune is about what indexing the kept runs alone makes, in one
// segment; and it holds no copy of the text it indexes.
func TestSearchIndexShrinksAfterPrune(t *testing.T) {
	d, _ := openTest(t)
	fresh, _ := openTest(t)
	ctx := context.Background()
	text := func(i int) string {
		var b strings.Builder
		for w := range 300 {
			fmt.Fprintf(&b, "run%dword%d ", i, w) // words of this run only
		}
		return b.String()
	}
	const runs, keep = 40, 4
	at := t0
	for i := range runs {
		at = at.Add(time.Minute)
		finishedRun(t, d, "h", text(i), "answer", at)
		mustRun(t, d.IndexQueued(ctx)) // a batch each, as runs finish apart
		if i >= runs-keep {
			finishedRun(t, fresh, "h", text(i), "answer", at)
			mustRun(t, fresh.IndexQueued(ctx))
		}
	}
	before := ftsBytes(t, d)
	st, err := d.Prune(ctx, at.Add(time.Hour), PrunePolicy{Retention: engine.Retention{Runs: time.Minute, KeepLast: keep}})
	mustRun(t, err)
	if st.Runs != runs-keep {
		t.Fatalf("pruned %d runs, want %d", st.Runs, runs-keep)
	}
	after, want := ftsBytes(t, d), ftsBytes(t, fresh)
	if n := indexedRuns(t, d); n != keep {
		t.Errorf("the index holds %d runs after the prune, want %d", n, keep)
	}
	if seg := ftsSegments(t, d); seg != 1 || after > want*3/2 {
		t.Errorf("after the prune the index has %d segments and %d bytes (%d before it); the kept runs alone take %d bytes: want 1 segment and at most %d bytes",
			seg, after, before, want, want*3/2)
	}
	var copies int
	mustRun(t, d.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'runs_fts_content'`).Scan(&copies))
	if copies != 0 {
		t.Error("the index keeps a copy of the text it indexes (runs_fts_content)")
	}
	hits, err := d.SearchRuns(ctx, engine.SearchQuery{Text: fmt.Sprintf("run%dword7", runs-1)})
	if err != nil || len(hits) != 1 || !strings.Contains(hits[0].Snippet, "[") {
		t.Errorf("a kept run: %+v, %v", hits, err)
	}
	if hits, err := d.SearchRuns(ctx, engine.SearchQuery{Text: "run0word7"}); err != nil || len(hits) != 0 {
		t.Errorf("a pruned run: %+v, %v", hits, err)
	}
}

// TestSearchIndexFollowsChange: the index reads an indexed run's text
// from its row; a run whose text changes after it was indexed leaves the
// index before the change (which FTS4 needs: it removes the words the row
// holds) and is indexed again with its new text.
func TestSearchIndexFollowsChange(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	r := finishedRun(t, d, "h", "alpha output", "first answer", t0)
	later := finishedRun(t, d, "h", "gamma output", "other answer", t0.Add(time.Minute))
	mustRun(t, d.IndexQueued(ctx))
	r.Steps[0].Output = "beta output"
	mustRun(t, d.FinishRun(ctx, r))
	for _, c := range []struct {
		q    string
		want []string
	}{{"alpha", nil}, {"beta", []string{r.ID}}, {"gamma", []string{later.ID}}} {
		hits, err := d.SearchRuns(ctx, engine.SearchQuery{Text: c.q})
		mustRun(t, err)
		var got []string
		for _, h := range hits {
			got = append(got, h.RunID)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: hits %v, want %v", c.q, got, c.want)
		}
	}
	// The index is sound: FTS4's own check finds it matches the rows.
	if _, err := d.w.ExecContext(ctx, `INSERT INTO runs_fts (runs_fts) VALUES ('integrity-check')`); err != nil {
		t.Errorf("integrity-check: %v", err)
	}
}
