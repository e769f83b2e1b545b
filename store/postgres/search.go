package postgres

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unicode"

	"github.com/hookd/hookd/engine"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sqlSearch is migration 5: the full-text index of finished runs, a
// tsvector column kept by a trigger and a GIN index on it. A run is
// indexed when it is final after it started (its trigger, event, the
// steps' outputs, prompt, answer and error: the stored record, which the
// engine redacted), as in the SQLite store; a deleted run leaves the index
// with its row.
//
// Words are what the SQLite index takes them to be: runs of letters and
// digits, lower-cased; everything else separates them (so /dev/sda1 holds
// dev and sda1). The text is lower-cased and split with the ICU collation
// und-x-icu when the server has it (PostgreSQL built with ICU, as
// Debian's and the official images are), so that letters beyond ASCII are
// words in any database locale; without ICU, the database's collation
// decides, and in the C locale only ASCII letters and digits are words.
// The 'simple' configuration indexes every word as it is: no stemming, no
// stop words.
const sqlSearch = `
CREATE FUNCTION hookd_search_text(trig text, event text, steps text, prompt text, response text, err text)
RETURNS text LANGUAGE sql IMMUTABLE AS $f$
	SELECT trig || E'\n' || coalesce(event, '') || E'\n' ||
		coalesce((SELECT string_agg(s->>'output', E'\n') FROM jsonb_array_elements(
			CASE WHEN jsonb_typeof(steps::jsonb) = 'array' THEN steps::jsonb ELSE '[]'::jsonb END) s), '') || E'\n' ||
		prompt || E'\n' || response || E'\n' || err
$f$;

DO $do$
DECLARE coll text := CASE WHEN EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu')
	THEN '"und-x-icu"' ELSE '"default"' END;
BEGIN
	EXECUTE format($f$CREATE FUNCTION hookd_search_vector(body text) RETURNS tsvector LANGUAGE sql IMMUTABLE AS $b$
		SELECT to_tsvector('simple', lower(regexp_replace(body COLLATE %s, '[^[:alnum:]]+', ' ', 'g')))
	$b$$f$, coll);
END
$do$;

ALTER TABLE runs ADD COLUMN search tsvector;

CREATE FUNCTION hookd_runs_search() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
	IF NEW.status NOT IN ('queued', 'running') AND NEW.started_at IS NOT NULL THEN
		NEW.search := hookd_search_vector(hookd_search_text(NEW."trigger", NEW.event, NEW.steps, NEW.prompt, NEW.response, NEW.error));
	ELSE
		NEW.search := NULL;
	END IF;
	RETURN NEW;
END
$f$;

CREATE TRIGGER runs_search BEFORE INSERT OR UPDATE OF status, "trigger", event, steps, prompt, response, error, started_at
	ON runs FOR EACH ROW EXECUTE FUNCTION hookd_runs_search();

UPDATE runs SET search = hookd_search_vector(hookd_search_text("trigger", event, steps, prompt, response, error))
	WHERE status NOT IN ('queued', 'running') AND started_at IS NOT NULL;

CREATE INDEX runs_search ON runs USING GIN (search);
`

// sqlSearchCaps is migration 15: the text a run is indexed by is capped
// as the SQLite store caps it (the event at 4,096 characters, each step's
// output at 65,536 and its error at 4,096, the prompt at 8,192, the
// answer at 65,536, the run's error at 4,096). Before, a run was indexed
// whole, and a step that printed 1 MB of base64 text made a tsvector
// beyond PostgreSQL's limit of 1 MB: the write that finished the run
// failed ("string is too long for tsvector"). Runs indexed before keep
// their tsvectors.
const sqlSearchCaps = `
CREATE OR REPLACE FUNCTION hookd_search_text(trig text, event text, steps text, prompt text, response text, err text)
RETURNS text LANGUAGE sql IMMUTABLE AS $f$
	SELECT trig || E'\n' || left(coalesce(event, ''), 4096) || E'\n' ||
		coalesce((SELECT string_agg(left(coalesce(s->>'output', ''), 65536) || E'\n' || left(coalesce(s->>'error', ''), 4096), E'\n')
			FROM jsonb_array_elements(CASE WHEN jsonb_typeof(steps::jsonb) = 'array' THEN steps::jsonb ELSE '[]'::jsonb END) s), '') || E'\n' ||
		left(prompt, 8192) || E'\n' || left(response, 65536) || E'\n' || left(err, 4096)
$f$;
`

// The search index is rebuilt when it is larger than searchIndexFloor
// and searchIndexSlack times the live runs' tsvectors (reindexSearch). A
// new index of words that are all new (base64 text) is about 3 times
// their tsvectors (4.9 MB for 1.7 MB), of text whose words recur far
// less: 6 is a rebuild once the index is twice what a new one would be,
// at worst.
const (
	searchIndexFloor = 1 << 20
	searchIndexSlack = 6
)

// reindexSearch rebuilds the search index (REINDEX CONCURRENTLY: runs are
// written and searched meanwhile) when it has outgrown the live runs'
// tsvectors; Prune calls it after it deleted runs and vacuumed. A GIN
// index keeps a key for every word it ever held: VACUUM empties the
// posting lists of the deleted runs' words but never removes a key. Text
// whose words recur (logs, answers) adds few keys; output whose words are
// all new (base64, hashes, ids) adds all of its words with every run, so
// under churn the index grew without bound (BenchmarkStoreChurn: 0.15 MB
// a run of 1 MB base64 output, 14.7 MB for the 6 runs kept after 100).
// Measuring the tsvectors reads the runs table's heap (not its TOAST):
// the daemon prunes hourly by default.
func reindexSearch(ctx context.Context, conn *pgxpool.Conn) error {
	var index, vectors int64
	if err := conn.QueryRow(ctx, `SELECT pg_relation_size('runs_search'),
		(SELECT coalesce(sum(pg_column_size(search)), 0) FROM runs)`).Scan(&index, &vectors); err != nil {
		return fmt.Errorf("measure the search index: %w", err)
	}
	if index <= searchIndexFloor || index <= searchIndexSlack*vectors {
		return nil
	}
	// A rebuild that was stopped (its node stopped or lost the database)
	// leaves an invalid copy, runs_search_ccnew, that writes still
	// update, and the next rebuild would make another: drop it.
	rows, err := conn.Query(ctx, `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE i.indrelid = 'runs'::regclass AND NOT i.indisvalid AND c.relname LIKE 'runs\_search\_ccnew%'`)
	if err != nil {
		return fmt.Errorf("find stopped rebuilds of the search index: %w", err)
	}
	stopped, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("find stopped rebuilds of the search index: %w", err)
	}
	for _, name := range stopped {
		if _, err := conn.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+pgx.Identifier{name}.Sanitize()); err != nil {
			return fmt.Errorf("drop a stopped rebuild of the search index: %w", err)
		}
	}
	if _, err := conn.Exec(ctx, `REINDEX INDEX CONCURRENTLY runs_search`); err != nil {
		return fmt.Errorf("rebuild the search index (%d bytes for %d of live tsvectors): %w", index, vectors, err)
	}
	return nil
}

// maxSearchTerms bounds the words of a query, as in the SQLite store.
const maxSearchTerms = 16

// snippetWords is how many words a hit's snippet holds.
const snippetWords = 16

// SearchRuns finds the finished runs whose record best matches q's words
// (all of them; when fewer than the limit match all, any of them), ranked
// by ts_rank (higher is better; not BM25, so scores differ from the
// SQLite store's), then the newer first.
func (d *DB) SearchRuns(ctx context.Context, q engine.SearchQuery) ([]engine.SearchHit, error) {
	terms := searchWords(q.Text)
	if len(terms) == 0 {
		return nil, fmt.Errorf("search runs: the query %q has no words", engine.Clip(q.Text, 100))
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 5
	}
	hits, err := d.search(ctx, terms, " & ", q, limit, nil)
	if err != nil {
		return nil, err
	}
	if len(hits) < limit && len(terms) > 1 {
		seen := make([]string, len(hits))
		for i, h := range hits {
			seen[i] = h.RunID
		}
		more, err := d.search(ctx, terms, " | ", q, limit-len(hits), seen)
		if err != nil {
			return nil, err
		}
		hits = append(hits, more...)
	}
	return hits, nil
}

// searchWords splits text into the words the index holds: runs of
// letters and digits, lower-cased, each once, at most maxSearchTerms.
func searchWords(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), notWordRune) {
		if !seen[w] && len(out) < maxSearchTerms {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// search returns up to limit runs matching the terms joined by op (a
// tsquery operator), leaving out the runs in skip. Each term is quoted: a
// word of letters and digits holds no quote, so it is never an operator.
func (d *DB) search(ctx context.Context, terms []string, op string, q engine.SearchQuery, limit int, skip []string) ([]engine.SearchHit, error) {
	query := "'" + strings.Join(terms, "'"+op+"'") + "'"
	var since *int64
	if !q.Since.IsZero() {
		since = timeArg(q.Since)
	}
	rows, err := d.pool.Query(ctx, `SELECT id, hook, status, finished_at, ts_rank(search, query), check_failed,
			hookd_search_text("trigger", event, steps, prompt, response, error)
		FROM runs, to_tsquery('simple', $1) query
		WHERE search @@ query AND ($2 = '' OR hook = $2) AND ($3::bigint IS NULL OR finished_at >= $3)
			AND NOT (id = ANY($4))
		ORDER BY 5 DESC, seq DESC LIMIT $5`, query, q.Hook, since, append([]string{}, skip...), limit)
	if err != nil {
		return nil, fmt.Errorf("search runs: %w", err)
	}
	defer rows.Close()
	var hits []engine.SearchHit
	for rows.Next() {
		var (
			h     engine.SearchHit
			fin   *int64
			score float64
			body  string
		)
		if err := rows.Scan(&h.RunID, &h.Hook, &h.Status, &fin, &score, &h.CheckFailed, &body); err != nil {
			return nil, fmt.Errorf("search runs: %w", err)
		}
		h.Time = nullTime(fin)
		h.Score = math.Round(score*1000) / 1000
		h.Snippet = snippet(body, terms)
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search runs: %w", err)
	}
	return hits, nil
}

// snippet returns the words of body around the first that is one of
// terms, snippetWords of them, each matching word in [brackets], with …
// where text was cut.
func snippet(body string, terms []string) string {
	type span struct{ start, end int }
	var words []span
	start := -1
	for i, r := range body {
		switch {
		case !notWordRune(r) && start < 0:
			start = i
		case notWordRune(r) && start >= 0:
			words = append(words, span{start, i})
			start = -1
		}
	}
	if start >= 0 {
		words = append(words, span{start, len(body)})
	}
	match := func(s span) bool {
		w := strings.ToLower(body[s.start:s.end])
		for _, t := range terms {
			if w == t {
				return true
			}
		}
		return false
	}
	first := 0
	for i, s := range words {
		if match(s) {
			first = i
			break
		}
	}
	if len(words) == 0 {
		return ""
	}
	from := max(0, min(first-snippetWords/4, len(words)-snippetWords))
	to := min(len(words), from+snippetWords)
	var b strings.Builder
	if from > 0 {
		b.WriteString("…")
	}
	pos := words[from].start
	for _, s := range words[from:to] {
		b.WriteString(body[pos:s.start])
		if match(s) {
			b.WriteString("[" + body[s.start:s.end] + "]")
		} else {
			b.WriteString(body[s.start:s.end])
		}
		pos = s.end
	}
	if to < len(words) {
		b.WriteString("…")
	}
	return b.String()
}
