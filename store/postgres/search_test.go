package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/churntest"
)

// TestSearchWords: punctuation separates words, matched in any case, and
// the snippet keeps the text as it was with the matching words in
// brackets; with ICU (the index's collation, see sqlSearch), words beyond
// ASCII are words too, matched in any case. Without ICU that part is
// skipped, saying so: the database's locale decides it (in the C locale
// only ASCII letters and digits are words).
func TestSearchWords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := open(t, migrated.NewDatabase(t))
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
	t.Parallel()
	ctx := context.Background()
	url := migrated.NewDatabase(t)
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

// TestSearchIndexesOutputHead: a step's 1 MB output is stored once, in
// the run's steps: the search index holds the words of its first 64 KiB
// (as the SQLite store's index does), not a second copy of the whole
// text, so a word from its head is found and one from its tail is not.
func TestSearchIndexesOutputHead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := open(t, migrated.NewDatabase(t))
	out := churntest.Output(rand.New(rand.NewPCG(5, 6)), churntest.OutputBytes)
	word := func(text string) string { // a long word of text: base64 has no other words in it
		for _, w := range strings.FieldsFunc(text, notWordRune) {
			if len(w) >= 12 {
				return w
			}
		}
		t.Fatalf("no word of 12 letters in %q", text)
		return ""
	}
	head, tail := word(out[:4096]), word(out[len(out)-4096:])
	r := &engine.Run{ID: engine.NewID(), Hook: "dump", Trigger: "manual", Status: engine.StatusRunning, StartedAt: t0, QueuedAt: t0}
	must(t, d.StartRun(ctx, r))
	r.Status, r.FinishedAt = engine.StatusCompleted, t0.Add(time.Second)
	r.Steps = []*engine.StepResult{{Index: 0, Name: "dump", Type: "shell", Output: out, ExitCode: new(0),
		Fields: map[string]any{"stdout": out}}}
	must(t, d.FinishRun(ctx, r))
	for _, c := range []struct {
		word string
		want int
	}{{head, 1}, {tail, 0}} {
		hits, err := d.SearchRuns(ctx, engine.SearchQuery{Text: c.word})
		must(t, err)
		if len(hits) != c.want {
			t.Errorf("search %q: %d hits, want %d", c.word, len(hits), c.want)
		}
	}
	var vector, steps int
	must(t, d.pool.QueryRow(ctx, `SELECT pg_column_size(search), octet_length(steps) FROM runs WHERE id = $1`, r.ID).Scan(&vector, &steps))
	if vector > 256<<10 || steps > len(out)+len(out)/50 {
		t.Errorf("a run with a %d-byte output: its tsvector takes %d bytes (want at most 256 KiB: the words of 64 KiB), its steps %d", len(out), vector, steps)
	}
}
