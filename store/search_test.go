package store

import (
	"context"
	"strings"
	"testing"
	"time"

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
	// Retention takes a run out of the index with it.
	if _, err := d.w.ExecContext(ctx, `DELETE FROM runs WHERE id = ?`, deploy.ID); err != nil {
		t.Fatal(err)
	}
	hits, _ = d.SearchRuns(ctx, engine.SearchQuery{Text: "deploy api"})
	if len(hits) != 0 {
		t.Errorf("a deleted run is still found: %+v", hits)
	}
	var n int
	if err := d.r.QueryRowContext(ctx, `SELECT count(*) FROM runs_fts`).Scan(&n); err != nil || n != 2 {
		t.Errorf("index rows %d (%v), want 2", n, err)
	}
}
