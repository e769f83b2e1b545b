package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// TestSearch: finished runs are found by what their steps printed, with
// hookd search and GET /v1/search; a run the memory_search step finds is
// an earlier one.
func TestSearch(t *testing.T) {
	e := newEnv(t, "", map[string]string{
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
