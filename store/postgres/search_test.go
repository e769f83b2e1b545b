package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/pgtest"
)

// TestSearchWords: punctuation separates words, matched in any case, and
// the snippet keeps the text as it was with the matching words in
// brackets; with ICU (the index's collation, see sqlSearch), words beyond
// ASCII are words too, matched in any case. Without ICU that part is
// skipped, saying so: the database's locale decides it (in the C locale
// only ASCII letters and digits are words).
func TestSearchWords(t *testing.T) {
	ctx := context.Background()
	d := open(t, pgtest.NewDatabase(t))
	var icu bool
	must(t, d.pool.QueryRow(ctx, `SELECT prosrc LIKE '%und-x-icu%' FROM pg_proc WHERE proname = 'hookd_search_vector'`).Scan(&icu))
	finish := func(id, output string) {
		t.Helper()
		r := &engine.Run{ID: id, Hook: "h", Status: engine.StatusRunning, QueuedAt: t0, StartedAt: t0}
		must(t, d.StartRun(ctx, r))
		r.Status, r.FinishedAt = engine.StatusCompleted, t0.Add(time.Second)
		r.Steps = []*engine.StepResult{{Index: 0, Name: "s", Type: "shell", Output: output}}
		must(t, d.FinishRun(ctx, r))
	}
	finish("fr", "Le CAFÉ de la gare: Über-Prüfung fällig; /dev/sda1 97% voll")
	finish("jp", "ログ 日本語 error_code=E42")
	search := func(t *testing.T, words map[string]string) {
		t.Helper()
		for q, want := range words {
			hits, err := d.SearchRuns(ctx, engine.SearchQuery{Text: q})
			must(t, err)
			if len(hits) != 1 || hits[0].RunID != want {
				t.Errorf("search %q: %+v, want run %s", q, hits, want)
			}
		}
	}
	search(t, map[string]string{"SDA1": "fr", "DEV": "fr", "gare": "fr", "e42": "jp", "code": "jp", "ERROR": "jp"})
	t.Run("beyond ASCII", func(t *testing.T) {
		if !icu {
			t.Skip("this PostgreSQL server has no ICU collation und-x-icu: words beyond ASCII are as its locale makes them (Debian's postgresql has ICU)")
		}
		search(t, map[string]string{"café": "fr", "über prüfung": "fr", "日本語": "jp"})
	})
	hits, err := d.SearchRuns(ctx, engine.SearchQuery{Text: "sda1 voll"})
	must(t, err)
	if len(hits) != 1 || !strings.Contains(hits[0].Snippet, "/dev/[sda1] 97% [voll]") {
		t.Errorf("snippet: %+v", hits)
	}
}

// TestSearchIndexesOlderRuns: a database migrated before the search index
// existed has its finished runs indexed by the migration.
func TestSearchIndexesOlderRuns(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	d := open(t, url)
	i := slices.IndexFunc(migrations, func(m migration) bool { return m.sql == sqlSearch })
	for _, q := range []string{`DROP TRIGGER runs_search ON runs`, `DROP INDEX runs_search`,
		`ALTER TABLE runs DROP COLUMN search`, `DROP FUNCTION hookd_runs_search()`,
		`DROP FUNCTION hookd_search_vector(text)`, `DROP FUNCTION hookd_search_text(text, text, text, text, text, text)`,
		fmt.Sprintf(`DELETE FROM schema_migrations WHERE version >= %d`, migrations[i].version)} {
		if _, err := d.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	r := &engine.Run{ID: "old", Hook: "h", Status: engine.StatusRunning, QueuedAt: t0, StartedAt: t0}
	must(t, d.StartRun(ctx, r))
	r.Status, r.FinishedAt, r.Response = engine.StatusFailed, t0, "the backup volume is full"
	must(t, d.FinishRun(ctx, r))
	d2 := open(t, url) // migrates again
	hits, err := d2.SearchRuns(ctx, engine.SearchQuery{Text: "backup volume"})
	must(t, err)
	if len(hits) != 1 || hits[0].RunID != "old" {
		t.Errorf("hits %+v, want the run finished before the index", hits)
	}
}
