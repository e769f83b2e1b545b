package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hookd/hookd/engine"
)

// cmdSearch is `hookd search QUERY`: the finished runs whose records best
// match the query's words, from the full-text index.
func cmdSearch(c *cli, args []string) int {
	fs := c.flags()
	hook := fs.String("hook", "", "only this hook's runs")
	limit := fs.Int("limit", 10, "how many runs")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, d, code, ok := c.setup(fs, args, 1, 1)
	if !ok {
		return code
	}
	if *limit < 1 || *limit > 100 {
		fmt.Fprintf(c.stderr, "hookd search: --limit must be from 1 to 100 (got %d)\n", *limit)
		return exitUsage
	}
	db, err := openStore(d)
	if err != nil {
		return c.errorf("%v", err)
	}
	defer db.Close()
	hits, err := db.SearchRuns(context.Background(), engine.SearchQuery{Text: pos[0], Hook: *hook, Limit: *limit})
	if err != nil {
		return c.errorf("%v", err)
	}
	if hits == nil {
		hits = []engine.SearchHit{}
	}
	if *asJSON {
		return c.printJSON(hits)
	}
	if len(hits) == 0 {
		fmt.Fprintln(c.stdout, "no runs match")
		return exitOK
	}
	tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tHOOK\tSTATUS\tFINISHED\tSCORE\tSNIPPET")
	for _, h := range hits {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\n", h.RunID, h.Hook, h.Status, h.Time.Local().Format("01-02 15:04:05"),
			h.Score, oneLine(strings.Join(strings.Fields(h.Snippet), " "), 100))
	}
	tw.Flush()
	return exitOK
}

// search serves GET /v1/search?q=WORDS[&hook=H][&limit=N][&since=RFC3339].
func (a *apiServer) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sq := engine.SearchQuery{Text: q.Get("q"), Hook: q.Get("hook"), Limit: 10}
	if strings.TrimSpace(sq.Text) == "" {
		writeJSON(w, http.StatusBadRequest, apiError{Error: "q is required: the words to search for"})
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeJSON(w, http.StatusBadRequest, apiError{Error: "limit must be from 1 to 100"})
			return
		}
		sq.Limit = n
	}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, apiError{Error: "since must be an RFC 3339 time"})
			return
		}
		sq.Since = t
	}
	hits, err := a.st.SearchRuns(r.Context(), sq)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Error: err.Error()})
		return
	}
	if hits == nil {
		hits = []engine.SearchHit{}
	}
	writeJSON(w, http.StatusOK, hits)
}
