package steps

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
)

func TestMemorySearchNewErrors(t *testing.T) {
	newErrTests(t, "memory_search", []struct{ name, src, want string }{
		{"no query", `limit: 3`, "query: required"},
		{"bad placeholder", `query: "{{event.x | nope}}"`, `unknown filter "nope"`},
		{"both limits", "query: x\nlimit: 3\ntop_k: 4", "top_k: top_k is agent-queue's name of limit"},
		{"limit range", "query: x\nlimit: 1000", "limit: must be from 1 to 100"},
		{"limit 0", "query: x\nlimit: 0", "limit: must be from 1 to 100 (got 0)"},
		{"top_k 0", "query: x\ntop_k: 0", "top_k: must be from 1 to 100 (got 0)"},
		{"both limits, one 0", "query: x\nlimit: 0\ntop_k: 4", "top_k: top_k is agent-queue's name of limit"},
		{"since", "query: x\nsince: yesterday", "since: must be a duration"},
		{"since negative", "query: x\nsince: -1d12h", "since: must be a duration back from now"},
		{"unknown", "query: x\ntopk: 3", "topk"},
	})
}

// TestMemorySearchRun searches a real store's index: this hook's runs by
// default, every hook's with hook: "*", agent-queue's top_k and project_id.
func TestMemorySearchRun(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	now := time.Now().UTC()
	add := func(hook, out, answer string, at time.Time) string {
		r := &engine.Run{ID: engine.NewID(), Hook: hook, Trigger: "manual", Status: engine.StatusRunning, StartedAt: at}
		if err := db.StartRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		r.Status, r.FinishedAt, r.Response = engine.StatusCompleted, at, answer
		r.Steps = []*engine.StepResult{{Index: 0, Type: "shell", Output: out}}
		if err := db.FinishRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	old := add("triage", "TestLogin flaky: timeout", "TestLogin is flaky since the DB upgrade.", now.Add(-40*24*time.Hour))
	recent := add("triage", "TestLogin failed again", "Same flaky TestLogin; see the earlier run.", now.Add(-time.Hour))
	other := add("deploy", "TestLogin broke the deploy", "Rolled back.", now.Add(-time.Hour))

	run := func(src string, event map[string]any) *engine.StepResult {
		t.Helper()
		s := mustStep(t, "memory_search", src, 0)
		env := stepEnv(t, event)
		env.Hook, env.Records, env.Now, env.RunID = &engine.Hook{Name: "triage"}, db, now, "current"
		res, err := runStep(t, s, env)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run(`query: "{{event.test}} flaky"`, map[string]any{"test": "TestLogin"})
	hits := res.Fields["hits"].([]any)
	if *res.Count != 2 || len(hits) != 2 || res.Fields["query"] != "TestLogin flaky" {
		t.Fatalf("hits %v", hits)
	}
	for _, h := range hits {
		m := h.(map[string]any)
		if m["hook"] != "triage" || (m["run_id"] != old && m["run_id"] != recent) || m["snippet"] == "" {
			t.Errorf("hit %v", m)
		}
	}
	if !strings.Contains(res.Output, "run "+old) || !strings.Contains(res.Output, "[flaky]") {
		t.Errorf("output:\n%s", res.Output)
	}
	res = run("query: TestLogin\nhook: '*'\ntop_k: 5\nproject_id: p\nsince: 30d", nil)
	ids := ""
	for _, h := range res.Fields["hits"].([]any) {
		ids += h.(map[string]any)["run_id"].(string) + " "
	}
	if *res.Count != 2 || !strings.Contains(ids, recent) || !strings.Contains(ids, other) {
		t.Errorf("every hook, last 30 days: %s", ids)
	}
	res = run("query: TestLogin\nlimit: 1", nil)
	if *res.Count != 1 {
		t.Errorf("limit 1: %d hits", *res.Count)
	}
}
