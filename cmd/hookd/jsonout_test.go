package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/engine"
)

// TestJSONFlags: validate, next, fire and emit print JSON with --json,
// and nothing else on stdout.
func TestJSONFlags(t *testing.T) {
	e := newProcEnv(t, "", map[string]string{
		"tick.yaml": "trigger: {every: 10m}\nsteps:\n  - type: shell\n    command: echo tick\nskip_llm: true\n",
		"on.yaml":   "trigger: {event: thing.done}\nsteps:\n  - type: shell\n    command: exit 4\nskip_llm: true\n",
		"hand.yaml": "steps:\n  - type: shell\n    command: echo by hand\nskip_llm: true\n",
	})

	var v validateJSON
	decode(t, e.must(0, "validate", "--json"), &v)
	if !v.Valid || strings.Join(v.Hooks, ",") != "hand,on,tick" || len(v.Errors) != 0 {
		t.Errorf("validate --json: %+v", v)
	}
	e.write("hooks.d/bad.yaml", "trigger:\n  every: -1m\n")
	e.badHooksOK = true
	decode(t, e.must(1, "validate", "--json"), &v)
	if v.Valid || len(v.Errors) != 1 || v.Errors[0].File != "hooks.d/bad.yaml" || v.Errors[0].Line != 2 ||
		v.Errors[0].Field != "trigger.every" || !strings.HasPrefix(v.Errors[0].Text, "hooks.d/bad.yaml:2: trigger.every: ") {
		t.Errorf("validate --json of a bad file: %+v", v)
	}
	removeBad := func() { e.write("hooks.d/bad.yaml", "trigger: {every: 1h}\nskip_llm: true\n") }
	removeBad()

	var n nextJSON
	decode(t, e.must(0, "next", "tick", "-n", "3", "--json"), &n)
	if n.Hook != "tick" || n.Trigger != "every 10m" || len(n.Times) != 3 || n.Times[1].Sub(n.Times[0]) != 10*time.Minute {
		t.Errorf("next --json: %+v", n)
	}
	decode(t, e.must(0, "next", "on", "--json"), &n)
	if n.Times == nil || len(n.Times) != 0 {
		t.Errorf("next --json of an event hook: %+v", n)
	}

	e.serve()
	var run engine.Run
	// A hook fired by hand only: a schedule cannot make it busy.
	decode(t, e.must(0, "fire", "hand", "--json"), &run)
	if run.ID == "" || run.Hook != "hand" {
		t.Errorf("fire --json: %+v", run)
	}
	e.waitRun(run.ID, engine.StatusCompleted)
	r := e.must(0, "fire", "hand", "--json", "--wait")
	decode(t, r, &run)
	if run.Status != engine.StatusCompleted || len(run.Steps) != 1 || r.stderr != "" {
		t.Errorf("fire --json --wait: %+v\n%s", run, r)
	}

	var ans api.EmitAnswer
	r = e.must(1, "emit", "thing.done", "k=v", "--json", "--wait")
	decode(t, r, &ans)
	if ans.Seq == 0 || len(ans.Runs) != 1 || ans.Runs[0].Hook != "on" || ans.Runs[0].Status != engine.StatusFailed {
		t.Errorf("emit --json --wait: %+v\n%s", ans, r)
	}
}

func decode(t *testing.T, r result, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("not one JSON value on stdout: %v\n%s", err, r)
	}
}
