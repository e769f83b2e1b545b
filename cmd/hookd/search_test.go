package main

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/llm/llmtest"
	"github.com/hookd/hookd/store/postgres/postgrestest"
)

// TestSearch: finished runs are found by what their steps printed, with
// hookd search and GET /v1/search; a run the memory_search step finds is
// an earlier one.
func TestSearch(t *testing.T) { testSearch(t, "") }

// TestSearchOnPostgres: the same on PostgreSQL (tsvector, GIN, ts_rank).
func TestSearchOnPostgres(t *testing.T) { testSearch(t, "database: "+postgrestest.NewDatabase(t)+"\n") }

func testSearch(t *testing.T, settings string) {
	e := newEnv(t, settings, map[string]string{
		"disk.yaml": "steps:\n  - type: shell\n    command: echo 'sda1 is 97% full, rotate the journal'\nskip_llm: true\n",
		"recall.yaml": `steps:
  - name: memory
    type: memory_search
    query: journal rotate
    hook: "*"
skip_llm: true
`,
	})
	first := runID(t, e.must(0, "fire", "disk", "--wait"))
	var hits []engine.SearchHit
	if err := json.Unmarshal([]byte(e.must(0, "search", "journal full", "--json").stdout), &hits); err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].RunID != first || hits[0].Hook != "disk" || !strings.Contains(hits[0].Snippet, "[journal]") {
		t.Fatalf("hits %+v", hits)
	}
	if out := e.must(0, "search", "journal", "--hook", "recall").stdout; !strings.Contains(out, "no runs match") {
		t.Errorf("hook filter:\n%s", out)
	}
	e.serve()
	var api []engine.SearchHit
	e.socketClient().json("GET", "/v1/search?q=rotate+sda1&limit=3", nil, 200, &api)
	if len(api) != 1 || api[0].RunID != first {
		t.Errorf("GET /v1/search: %+v", api)
	}
	if code, _ := e.socketClient().call("GET", "/v1/search", nil); code != 400 {
		t.Errorf("no q: status %d", code)
	}
	recall := runID(t, e.must(0, "fire", "recall", "--wait"))
	run := e.getRun(recall)
	if len(run.Steps) != 1 || !strings.Contains(run.Steps[0].Output, "run "+first) {
		t.Errorf("memory_search step output: %+v", run.Steps)
	}
}

// TestSearchRunsOtherHooks drives the real daemon with a hostile model
// whose hook lists the run-record tools but names no other hook: it asks
// search_runs, list_runs and get_run for another hook's runs (by naming
// the hook, by searching every hook, by the run's id) and sees none of
// them; a hook whose file names the other hook reads it.
func TestSearchRunsOtherHooks(t *testing.T) {
	const word = "xyzzyledger"
	var payrollRun atomic.Value // the id, set before the hostile model runs
	model := llmtest.NewFunc(func(r llmtest.Request) llmtest.Reply {
		msgs := r.Chat.Messages
		if msgs[len(msgs)-1].Role == "tool" {
			return llmtest.Answer("done")
		}
		return llmtest.Calls(
			llmtest.ToolCall{ID: "s1", Name: "search_runs", Args: `{"query":"` + word + `"}`},
			llmtest.ToolCall{ID: "s2", Name: "search_runs", Args: `{"query":"` + word + `","hook":"payroll"}`},
			llmtest.ToolCall{ID: "s3", Name: "search_runs", Args: `{"query":"` + word + `","hook":"*"}`},
			llmtest.ToolCall{ID: "s4", Name: "search_runs", Args: `{"query":"` + word + ` OR hook:payroll NEAR \"*\""}`},
			llmtest.ToolCall{ID: "l1", Name: "list_runs", Args: `{"hook":"payroll"}`},
			llmtest.ToolCall{ID: "l2", Name: "list_runs", Args: `{}`},
			llmtest.ToolCall{ID: "g1", Name: "get_run", Args: `{"id":"` + payrollRun.Load().(string) + `"}`},
		)
	})
	defer model.Close()
	e := newEnv(t, "llm:\n  model: m\n  base_url: "+model.BaseURL()+"\n", map[string]string{
		"payroll.yaml": "steps:\n  - type: shell\n    command: echo 'salary table " + word + "'\nskip_llm: true\n",
		"intake.yaml":  "prompt: 'Summarise the tickets'\ntools: [search_runs, list_runs, get_run]\n",
		"audit.yaml":   "prompt: 'Audit payroll'\ntools:\n  - search_runs: {hooks: [payroll]}\n  - list_runs\n  - get_run\n",
	})
	payrollID := runID(t, e.must(0, "fire", "payroll", "--wait"))
	payrollRun.Store(payrollID)
	intake := e.getRun(runID(t, e.must(0, "fire", "intake", "--wait")))
	if intake.Status != engine.StatusCompleted {
		t.Fatalf("intake: %s %s", intake.Status, intake.Error)
	}
	tr, err := agent.DecodeTranscript(intake)
	if err != nil || tr == nil || len(tr.Rounds) == 0 {
		t.Fatalf("intake transcript: %v", err)
	}
	for _, c := range tr.Rounds[0].ToolCalls {
		if strings.Contains(c.Result, word) || strings.Contains(c.Result, payrollID) || strings.Contains(c.Error, word) {
			t.Errorf("tool call %s %s(%s) read payroll's run: %q %q", c.ID, c.Name, c.Arguments, c.Result, c.Error)
		}
	}
	for _, r := range model.Requests() {
		for _, m := range r.Chat.Messages {
			if m.Role == "tool" && strings.Contains(r.Chat.Messages[0].Content, "Summarise") && strings.Contains(m.Content, "salary") {
				t.Errorf("payroll's data reached intake's model: %s", m.Content)
			}
		}
	}
	errs := map[string]string{}
	for _, c := range tr.Rounds[0].ToolCalls {
		errs[c.ID] = c.Error
	}
	for id, want := range map[string]string{
		"s2": `hook "payroll" is not one whose runs this hook may read`,
		"l1": `hook "payroll" is not one whose runs this hook may read`,
		"g1": "no run " + payrollID,
	} {
		if !strings.Contains(errs[id], want) {
			t.Errorf("tool call %s: error %q; want %q", id, errs[id], want)
		}
	}

	audit := e.getRun(runID(t, e.must(0, "fire", "audit", "--wait")))
	tr, err = agent.DecodeTranscript(audit)
	if err != nil || tr == nil || len(tr.Rounds) == 0 {
		t.Fatalf("audit transcript: %v", err)
	}
	found := map[string]bool{}
	for _, c := range tr.Rounds[0].ToolCalls {
		found[c.ID] = strings.Contains(c.Result, payrollID)
	}
	if !found["s2"] || !found["l1"] || !found["g1"] || found["s1"] || found["l2"] {
		t.Errorf("audit, which names payroll, read its runs when asked (s2 l1 g1), and only then: %v", found)
	}
}
