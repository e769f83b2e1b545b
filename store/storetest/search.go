package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
)

// pruneAll deletes every finished run a day old that the gates do not
// need.
var pruneAll = store.PrunePolicy{Retention: engine.Retention{Runs: day}}

// finishedRun stores a run that started and finished with the given
// texts.
func finishedRun(t testing.TB, s Store, hook, output, response string, at time.Time) *engine.Run {
	t.Helper()
	ctx := context.Background()
	r := &engine.Run{ID: engine.NewID(), Hook: hook, Trigger: "manual", Status: engine.StatusRunning, StartedAt: at, QueuedAt: at}
	must(t, s.StartRun(ctx, r))
	r.Status, r.FinishedAt, r.Response = engine.StatusCompleted, at.Add(time.Second), response
	r.Steps = []*engine.StepResult{{Index: 0, Name: "df", Type: "shell", Output: output}}
	must(t, s.FinishRun(ctx, r))
	return r
}

// testSearchRuns: full-text search finds finished runs by the words of
// their steps' output and answer (all words first, then any), filters by
// hook and time, treats query syntax as words, and leaves out what was
// refused, queued or running, and what retention deleted.
func testSearchRuns(t *testing.T, e *env) {
	s := e.store()
	ctx := context.Background()
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	disk := finishedRun(t, s, "disk", "/dev/sda1 97% used\nline two", "The disk is nearly full: clean /var/log.", t1)
	other := finishedRun(t, s, "disk", "/dev/sda1 40% used", "All fine.", t1.Add(time.Hour))
	// A run whose check failed says so in its hit.
	deploy := &engine.Run{ID: engine.NewID(), Hook: "deploy", Trigger: "manual", Status: engine.StatusRunning,
		StartedAt: t1.Add(2 * time.Hour), QueuedAt: t1.Add(2 * time.Hour)}
	must(t, s.StartRun(ctx, deploy))
	deploy.Status, deploy.FinishedAt, deploy.Response, deploy.CheckFailed = engine.StatusCompleted, deploy.StartedAt.Add(time.Second),
		"Roll back the api deploy.", "smoke"
	deploy.Steps = []*engine.StepResult{{Index: 0, Name: "smoke", Type: "shell", Output: "deploy of api failed: disk full"}}
	must(t, s.FinishRun(ctx, deploy))
	// A run that a gate refused is not indexed; neither is a queued or a
	// running one.
	must(t, s.InsertRun(ctx, &engine.Run{ID: engine.NewID(), Hook: "disk", Status: engine.StatusSkipped, Reason: "paused: disk full",
		QueuedAt: t1, FinishedAt: t1}))
	must(t, s.InsertRun(ctx, &engine.Run{ID: engine.NewID(), Hook: "disk", Status: engine.StatusQueued, Reason: "disk full", QueuedAt: t1}))
	must(t, s.StartRun(ctx, &engine.Run{ID: engine.NewID(), Hook: "disk", Trigger: "disk full", Status: engine.StatusRunning,
		QueuedAt: t1, StartedAt: t1}))

	hits, err := s.SearchRuns(ctx, engine.SearchQuery{Text: "disk full"})
	must(t, err)
	if len(hits) != 2 {
		t.Fatalf("hits %+v, want the 2 finished runs with both words", hits)
	}
	for _, h := range hits {
		if h.RunID != disk.ID && h.RunID != deploy.ID || h.Score <= 0 || !strings.Contains(h.Snippet, "[") ||
			h.Status != engine.StatusCompleted || h.Time.IsZero() || h.CheckFailed != map[string]string{deploy.ID: "smoke"}[h.RunID] {
			t.Errorf("hit %+v", h)
		}
	}
	// All words first; any word fills up to the limit.
	hits, err = s.SearchRuns(ctx, engine.SearchQuery{Text: "nearly fine", Limit: 5})
	must(t, err)
	if len(hits) != 2 {
		t.Errorf("any-word hits: %+v", hits)
	}
	hits, err = s.SearchRuns(ctx, engine.SearchQuery{Text: "DISK nearly", Limit: 5})
	must(t, err)
	if len(hits) < 1 || hits[0].RunID != disk.ID {
		t.Errorf("the run with all the words (any case) is not first: %+v", hits)
	}
	// Words inside paths are words.
	hits, _ = s.SearchRuns(ctx, engine.SearchQuery{Text: "sda1", Hook: "disk"})
	if len(hits) != 2 || hits[0].Hook != "disk" || hits[1].Hook != "disk" {
		t.Errorf("hook filter: %+v", hits)
	}
	hits, _ = s.SearchRuns(ctx, engine.SearchQuery{Text: "sda1", Since: t1.Add(30 * time.Minute)})
	if len(hits) != 1 || hits[0].RunID != other.ID {
		t.Errorf("since: %+v", hits)
	}
	hits, _ = s.SearchRuns(ctx, engine.SearchQuery{Text: "sda1", Limit: 1})
	if len(hits) != 1 {
		t.Errorf("limit 1: %+v", hits)
	}
	// Operators and quotes are words, not query syntax.
	for _, q := range []string{`"disk" OR NEAR( -full* ^`, `disk' | !full & (`, `a:* <-> b`} {
		if _, err := s.SearchRuns(ctx, engine.SearchQuery{Text: q}); err != nil {
			t.Errorf("query %q: %v", q, err)
		}
	}
	if _, err := s.SearchRuns(ctx, engine.SearchQuery{Text: " ;; "}); err == nil {
		t.Error("a query without words searched")
	}
	// A hostile query from a model (search_runs) or a client: a megabyte
	// without words is quoted in 100 characters, not sent back whole; a
	// word longer than any index holds finds nothing, without an error,
	// and the other words still search.
	if _, err := s.SearchRuns(ctx, engine.SearchQuery{Text: strings.Repeat("-", 1<<20)}); err == nil || len(err.Error()) > 200 {
		t.Errorf("a huge query without words: %.300v", err)
	}
	long := strings.Repeat("a", 5000)
	if hits, err := s.SearchRuns(ctx, engine.SearchQuery{Text: long}); err != nil || len(hits) != 0 {
		t.Errorf("a word of 5000 letters: %.300v, %d hits", err, len(hits))
	}
	if hits, err := s.SearchRuns(ctx, engine.SearchQuery{Text: long + " sda1", Hook: "disk"}); err != nil || len(hits) != 2 {
		t.Errorf("a word of 5000 letters and sda1: %.300v, %+v", err, hits)
	}
	// A step that printed 1 MB (of words every one new) is indexed by
	// its first 64 KiB: the run finishes, and is found by a word there.
	var big strings.Builder
	for i := 0; big.Len() < 1<<20; i++ {
		fmt.Fprintf(&big, "w%d ", i*7919)
	}
	huge := finishedRun(t, s, "dump", big.String(), "dumped", t1)
	if hits, err := s.SearchRuns(ctx, engine.SearchQuery{Text: "w7919"}); err != nil || len(hits) != 1 || hits[0].RunID != huge.ID {
		t.Errorf("a word early in a 1 MB output: %v, %+v", err, hits)
	}
	// Retention takes a run out of the index with it.
	pruned, err := s.Prune(ctx, t1.Add(100*day), pruneAll)
	must(t, err)
	if pruned.Runs == 0 {
		t.Fatalf("nothing pruned: %+v", pruned)
	}
	hits, _ = s.SearchRuns(ctx, engine.SearchQuery{Text: "disk"})
	for _, h := range hits {
		if h.RunID == disk.ID {
			t.Errorf("a deleted run is still found: %+v", hits)
		}
	}
}
