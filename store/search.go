package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/hookd/hookd/engine"
)

// sqlRunSearch adds the full-text index of finished runs (FTS4: the
// sqlite3 driver builds FTS3/4 in by default; FTS5 needs a build tag, which
// would break a plain `go build`): a run that reaches a final status after
// it started is indexed (its hook, trigger, event, the steps' outputs,
// prompt and answer — the stored record, which the engine redacted), and a
// run deleted by retention leaves the index with it. Its docid is the
// run's seq. Migration 12 (searchindex.go) replaced the trigger that
// indexed a run in its own write with a background indexer; migration 20
// (searchindex.go) made the index read its text from the runs' rows
// instead of keeping a copy.
const sqlRunSearch = `
CREATE VIRTUAL TABLE runs_fts USING fts4(hook, body, tokenize=unicode61);
CREATE TRIGGER runs_fts_index AFTER UPDATE OF status ON runs
	WHEN new.status NOT IN ('queued', 'running') AND new.started_at IS NOT NULL
BEGIN
	DELETE FROM runs_fts WHERE docid = new.seq;
	INSERT INTO runs_fts (docid, hook, body) VALUES (new.seq, new.hook,
		new."trigger" || char(10) || coalesce(new.event, '') || char(10) ||
		coalesce((SELECT group_concat(json_extract(j.value, '$.output'), char(10)) FROM json_each(new.steps) j), '') || char(10) ||
		new.prompt || char(10) || new.response || char(10) || new.error);
END;
CREATE TRIGGER runs_fts_forget AFTER DELETE ON runs BEGIN
	DELETE FROM runs_fts WHERE docid = old.seq;
END;
INSERT INTO runs_fts (docid, hook, body)
	SELECT seq, hook, "trigger" || char(10) || coalesce(event, '') || char(10) ||
		coalesce((SELECT group_concat(json_extract(j.value, '$.output'), char(10)) FROM json_each(runs.steps) j), '') || char(10) ||
		prompt || char(10) || response || char(10) || error
	FROM runs WHERE status NOT IN ('queued', 'running') AND started_at IS NOT NULL;
`

// maxSearchTerms bounds the words of a query.
const maxSearchTerms = 16

// SearchRuns finds the finished runs whose record best matches q's words
// (all of them; when fewer than the limit match all, any of them),
// ranked by BM25, best first. It indexes the finished runs the index
// lacks first, so it sees every one. It ranks the newest maxCandidates
// matches (of q.Hook's runs, with a hook filter).
func (d *DB) SearchRuns(ctx context.Context, q engine.SearchQuery) ([]engine.SearchHit, error) {
	terms := searchTerms(q.Text)
	if len(terms) == 0 {
		return nil, fmt.Errorf("search runs: the query %q has no words", engine.Clip(q.Text, 100))
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 5
	}
	// Runs finished since the indexer last ran are indexed first, so a
	// search sees every finished run.
	if err := d.IndexQueued(ctx); err != nil {
		return nil, fmt.Errorf("search runs: %w", err)
	}
	hits, err := d.search(ctx, terms, " AND ", q, limit)
	if err == nil && len(hits) < limit && len(terms) > 1 {
		more, err2 := d.search(ctx, terms, " OR ", q, limit)
		if err2 != nil {
			return nil, err2
		}
		seen := map[string]bool{}
		for _, h := range hits {
			seen[h.RunID] = true
		}
		for _, h := range more {
			if len(hits) >= limit {
				break
			}
			if !seen[h.RunID] {
				hits = append(hits, h)
			}
		}
	}
	return hits, err
}

// searchTerms splits text into the words the index holds: letters and
// digits, lower case (FTS4's operators are upper case, and no other
// character of its query syntax survives, so no word is an operator).
func searchTerms(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	seen := map[string]bool{}
	var out []string
	for _, w := range words {
		if !seen[w] && len(out) < maxSearchTerms {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

type scored struct {
	seq   int64
	score float64
}

// maxCandidates bounds the matches a search ranks: the newest ones.
const maxCandidates = 2000

// matchExpr is the FTS4 query of the words in the body column, joined by
// op (" AND ", " OR "), and, with a hook filter, of the words of the
// hook's name in the hook column: a search of one hook ranks that hook's
// runs (and those of hooks whose names hold the same words, which the
// caller checks the record for).
func matchExpr(terms []string, op, hook string) string {
	col := func(c string, words []string) []string {
		out := make([]string, len(words))
		for i, w := range words {
			out[i] = c + ":" + w
		}
		return out
	}
	m := strings.Join(col("body", terms), op)
	if words := searchTerms(hook); len(words) > 0 {
		m = strings.Join(col("hook", words), " AND ") + " AND (" + m + ")"
	}
	return m
}

func (d *DB) search(ctx context.Context, terms []string, op string, q engine.SearchQuery, limit int) ([]engine.SearchHit, error) {
	match := matchExpr(terms, op, q.Hook)
	// Score the newest matches from the index alone (its match data);
	// read no record yet.
	rows, err := d.r.QueryContext(ctx, `SELECT docid, matchinfo(runs_fts, 'pcnalx') FROM runs_fts WHERE runs_fts MATCH ?
		ORDER BY docid DESC LIMIT ?`, match, maxCandidates)
	if err != nil {
		return nil, fmt.Errorf("search runs: %w", err)
	}
	var cands []scored
	for rows.Next() {
		var (
			seq int64
			mi  []byte
		)
		if err := rows.Scan(&seq, &mi); err != nil {
			rows.Close()
			return nil, fmt.Errorf("search runs: %w", err)
		}
		cands = append(cands, scored{seq, bm25(mi)})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search runs: %w", err)
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].score != cands[j].score {
			return cands[i].score > cands[j].score
		}
		return cands[i].seq > cands[j].seq // the newer first
	})
	// Then read the runs best first, only until the limit is reached:
	// the record decides the hook and since filters, and a run pruned
	// meanwhile is skipped.
	conn, err := d.r.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("search runs: %w", err)
	}
	defer conn.Close()
	get, err := conn.PrepareContext(ctx, `SELECT id, hook, status, finished_at, check_failed FROM runs WHERE seq = ?`)
	if err != nil {
		return nil, fmt.Errorf("search runs: %w", err)
	}
	defer get.Close()
	var (
		hits []engine.SearchHit
		seqs []int64
	)
	for _, c := range cands {
		if len(hits) >= limit {
			break
		}
		var (
			h   engine.SearchHit
			fin sql.NullInt64
		)
		err := get.QueryRowContext(ctx, c.seq).Scan(&h.RunID, &h.Hook, &h.Status, &fin, &h.CheckFailed)
		if err == sql.ErrNoRows {
			continue // pruned meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("search runs: %w", err)
		}
		h.Time = nullTime(fin)
		if q.Hook != "" && h.Hook != q.Hook || !q.Since.IsZero() && h.Time.Before(q.Since) {
			continue
		}
		h.Score = math.Round(c.score*1000) / 1000
		hits = append(hits, h)
		seqs = append(seqs, c.seq)
	}
	if len(hits) == 0 {
		return nil, nil
	}
	// The snippets of the hits, in one more pass over the matches.
	sq, args := inList(`SELECT docid, snippet(runs_fts, '[', ']', '…', 1, 16) FROM runs_fts WHERE runs_fts MATCH ? AND docid IN `, seqs)
	rows, err = conn.QueryContext(ctx, sq, append([]any{match}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("search runs: %w", err)
	}
	snippets := make(map[int64]string, len(seqs))
	for rows.Next() {
		var (
			seq  int64
			snip string
		)
		if err := rows.Scan(&seq, &snip); err != nil {
			rows.Close()
			return nil, fmt.Errorf("search runs: %w", err)
		}
		snippets[seq] = snip
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search runs: %w", err)
	}
	for i := range hits {
		hits[i].Snippet = snippets[seqs[i]]
	}
	return hits, nil
}

// bm25 scores one match from FTS4's matchinfo 'pcnalx' (Okapi BM25, k1
// 1.2, b 0.75, over the body column).
func bm25(mi []byte) float64 {
	u := func(i int) float64 {
		if 4*i+4 > len(mi) {
			return 0
		}
		return float64(binary.NativeEndian.Uint32(mi[4*i:]))
	}
	p, c := int(u(0)), int(u(1))
	n := u(2)
	const col = 1 // body
	avgdl := u(3 + col)
	dl := u(3 + c + col)
	x := 3 + 2*c
	score := 0.0
	for i := 0; i < p; i++ {
		base := x + 3*(i*c+col)
		tf, docs := u(base), u(base+2)
		if tf == 0 {
			continue
		}
		idf := math.Log(1 + (n-docs+0.5)/(docs+0.5))
		score += idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*dl/max(avgdl, 1)))
	}
	return score
}
