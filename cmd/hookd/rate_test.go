package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/engine"
)

// TestRateAcrossRestart: rate: counts the starts of the daemon before a
// restart (the window is read back from the run records through the
// daemon's store), and an in-process fire with no daemon counts them too.
func TestRateAcrossRestart(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"capped.yaml": "steps:\n  - type: shell\n    command: \"true\"\nskip_llm: true\nrate: 1/1h\n",
	})
	d := e.serve()
	e.must(0, "fire", "capped", "--wait")
	want := "rate: 1 start in the last 1h (rate: 1/1h); the next is allowed in "
	if r := e.must(exitRefused, "fire", "capped"); !strings.Contains(r.stderr, want) {
		t.Fatalf("second fire:\n%s", r)
	}
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("hookd serve exited %d:\n%s", code, d.log)
	}
	if r := e.must(exitRefused, "fire", "capped"); !strings.Contains(r.stderr, want) {
		t.Errorf("in-process fire:\n%s", r)
	}
	e.serve()
	if r := e.must(exitRefused, "fire", "capped"); !strings.Contains(r.stderr, want) {
		t.Errorf("after a restart:\n%s", r)
	}
}

// TestEmitSaysGateRefused: emit says, per hook the event matched, the run
// it started or the gate that refused it, in the words of a refused fire,
// with the daemon (CLI and the API's answer) and without; gates refusing
// every matching hook exit 75 as a refused fire does.
func TestEmitSaysGateRefused(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"capped.yaml": "trigger: {event: deploy.*}\nsteps:\n  - type: shell\n    command: \"true\"\nskip_llm: true\nrate: 1/1h\n",
		"free.yaml":   "trigger: {event: deploy.failed}\nsteps:\n  - type: shell\n    command: \"true\"\nskip_llm: true\n",
	})
	want := "capped refused: rate: 1 start in the last 1h (rate: 1/1h); the next is allowed in "
	d := e.serve()
	if r := e.must(0, "emit", "deploy.failed", "--wait"); len(emitted(t, r)) != 2 || strings.Contains(r.stdout, "refused") {
		t.Fatalf("first emit: want two runs, none refused:\n%s", r)
	}
	// One hook starts, the other is refused: exit 0, both said.
	r := e.must(0, "emit", "deploy.failed", "--wait")
	if !strings.Contains(r.stdout, ": 1 run(s), 1 refused by a gate") || !strings.Contains(r.stdout, want) {
		t.Fatalf("second emit does not say capped was refused:\n%s", r)
	}
	runs := emitted(t, r)
	if rec := e.getRun(runs["capped"]); rec.Status != engine.StatusSkipped || rec.Gate != engine.GateRate {
		t.Errorf("the refused line names record %s: %s, gate %q", runs["capped"], rec.Status, rec.Gate)
	}
	if rec := e.getRun(runs["free"]); rec.Status != engine.StatusCompleted {
		t.Errorf("free: %s", rec.Status)
	}
	// Every matching hook refused: exit 75, and --json carries the refusal.
	r = e.must(exitRefused, "emit", "deploy.done", "--json")
	var ans api.EmitAnswer
	if err := json.Unmarshal([]byte(r.stdout), &ans); err != nil {
		t.Fatalf("emit --json: %v\n%s", err, r)
	}
	if len(ans.Runs) != 0 || len(ans.Refused) != 1 || ans.Refused[0].Hook != "capped" || ans.Refused[0].Gate != engine.GateRate ||
		ans.Refused[0].RunID == "" || !strings.HasPrefix("capped "+engine.RefusedText(ans.Refused[0].Error), want) {
		t.Errorf("emit --json answer: %+v\n%s", ans, r)
	}
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("hookd serve exited %d:\n%s", code, d.log)
	}
	// No daemon: the emit runs in this process and says the same.
	if r := e.must(exitRefused, "emit", "deploy.done"); !strings.Contains(r.stdout, want) {
		t.Errorf("in-process emit:\n%s", r)
	}
}
