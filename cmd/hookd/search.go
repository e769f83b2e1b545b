package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/daemon"
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
	db, err := daemon.OpenStore(d)
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
	if err := c.writeSearchTable(hits, time.Now()); err != nil {
		return c.errorf("%v", err)
	}
	return exitOK
}

// writeSearchTable writes search's table of hits to stdout; on a
// terminal SNIPPET gives way first, FINISHED shows only how long ago it
// was ("3h ago"), then HOOK and STATUS give way; when that is not
// enough, SNIPPET and SCORE are left out. The run id stays whole.
func (c *cli) writeSearchTable(hits []engine.SearchHit, now time.Time) error {
	t := newTable(6, len(hits)+1)
	t.row("ID", "HOOK", "STATUS", "FINISHED", "SCORE", "SNIPPET")
	for _, h := range hits {
		status := string(h.Status)
		if h.CheckFailed != "" {
			status += ", check failed: " + h.CheckFailed
		}
		t.row(h.RunID, h.Hook, status, h.Time.Local().Format("01-02 15:04:05"),
			strconv.FormatFloat(h.Score, 'f', 2, 64), engine.OneLine(strings.Join(strings.Fields(h.Snippet), " "), 100))
	}
	ago := func(i int) string { return relativeText(hits[i].Time, now) }
	return c.layout(t, []int{5, 4},
		cut(5, 20), compact(3, ago), cut(1, 12), cut(2, 9)).write(c.stdout)
}
