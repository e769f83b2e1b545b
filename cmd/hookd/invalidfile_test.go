package main

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// TestBrokenFileSkipsItsSlots: a hook file edited into one that does not
// load keeps its previous version's schedule, but that version no longer
// runs: each slot is recorded skipped: invalid_file with the file's
// error, hookd list says so, a fire is refused the same way, and a notify
// target with on: [failed] hears of it (outcome invalid_file). Fixing the
// file runs its slots again.
func TestBrokenFileSkipsItsSlots(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	e := newEnv(t, "notify:\n  - url: "+srv.URL+"\n    on: [failed]\n", map[string]string{
		"tick.yaml": "trigger:\n  every: 1s\n" + goodHook,
	})
	e.badHooksOK = true
	d := e.serve()
	// `hookd runs tick` refuses a hook whose file does not load: all runs,
	// then tick's.
	runs := func(status engine.Status) []*engine.Run {
		var out []*engine.Run
		for _, r := range e.listRuns("--status", string(status), "--limit", "1000") {
			if r.Hook == "tick" {
				out = append(out, r)
			}
		}
		return out
	}
	completed := func() int { return len(runs(engine.StatusCompleted)) }
	waitFor(t, "a run of tick", func() bool { return completed() > 0 }, d.log.String)

	e.write("hooks.d/tick.yaml", "trigger:\n  every: 1s\nstpes: []\n")
	invalid := func() []*engine.Run {
		var out []*engine.Run
		for _, r := range runs(engine.StatusSkipped) {
			if r.Gate == engine.GateInvalidFile {
				out = append(out, r)
			}
		}
		return out
	}
	waitFor(t, "a slot skipped: invalid_file", func() bool { return len(invalid()) > 0 }, d.log.String)
	before := completed()
	waitFor(t, "two more slots skipped: invalid_file", func() bool { return len(invalid()) >= 3 }, d.log.String)
	for _, r := range invalid() {
		if !strings.HasPrefix(r.Reason, "invalid_file: ") || !strings.Contains(r.Reason, "hooks.d/tick.yaml:3: stpes: ") || !strings.Contains(r.Reason, "did you mean steps?") ||
			r.Slot.IsZero() || r.Trigger != "schedule" {
			t.Errorf("skipped slot: trigger %s, slot %v, reason %q", r.Trigger, r.Slot, r.Reason)
		}
	}
	if n := completed(); n != before {
		t.Errorf("the previous version ran while its file was broken: %d completed runs, %d before", n, before)
	}
	if out := e.must(0, "list").stdout; !strings.Contains(out, "tick [BROKEN]") ||
		!strings.Contains(out, "kept on schedule, each trigger skipped (invalid_file); file error: ") {
		t.Errorf("list while tick.yaml is broken:\n%s", out)
	}
	if r := e.run("fire", "tick"); r.code != exitRefused || !strings.Contains(r.stderr, "refused: invalid_file: ") || !strings.Contains(r.stderr, "hooks.d/tick.yaml:3: stpes") {
		t.Errorf("fire of a hook whose file is broken:\n%s", r)
	}
	waitFor(t, "an invalid_file notification", func() bool {
		for _, m := range rc.got() {
			if m["hook"] == "tick" && m["outcome"] == engine.OutcomeInvalidFile {
				return true
			}
		}
		return false
	}, d.log.String)

	e.write("hooks.d/tick.yaml", "trigger:\n  every: 1s\n"+goodHook)
	waitFor(t, "a run of the fixed file", func() bool { return completed() > before }, d.log.String)
}
