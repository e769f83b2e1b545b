package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookd/hookd/api"
)

const goodHook = "steps:\n  - type: shell\n    command: echo hi\nskip_llm: true\n"

// TestBrokenHookStaysVisible: a hook file that does not load is listed,
// marked and with its error, by a daemon started on it, by hookd status
// (which exits 1 until it loads) and by list without a daemon; a reload
// that breaks a loaded hook's file keeps its previous version's schedule,
// each trigger skipped, and says so; fixing the file ends it all.
func TestBrokenHookStaysVisible(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"good.yaml":  goodHook,
		"typo.yaml":  "stpes:\n  - type: shell\n    command: echo hi\nskip_llm: true\n",
		"later.yaml": "trigger:\n  every: 1h\n" + goodHook,
	})
	e.badHooksOK = true

	// Without a daemon.
	r := e.must(0, "list")
	if !strings.Contains(r.stdout, "typo [BROKEN]") || !strings.Contains(r.stdout, "BROKEN ") || !strings.Contains(r.stdout, "did you mean steps?") {
		t.Errorf("list without a daemon does not show the broken file:\n%s", r)
	}

	e.serve()
	r = e.must(0, "list")
	if !strings.Contains(r.stdout, "typo [BROKEN]") || !strings.Contains(r.stdout, "did you mean steps?") {
		t.Errorf("list does not show the broken file:\n%s", r)
	}
	st := e.run("status")
	if st.code != exitError || !strings.Contains(st.stdout, "BROKEN:    1 hook file(s) do not load") || !strings.Contains(st.stdout, "typo.yaml") {
		t.Errorf("status with a broken hook file must say so and exit 1:\n%s", st)
	}
	var rep api.StatusReport
	if err := json.Unmarshal([]byte(e.run("status", "--json").stdout), &rep); err != nil || len(rep.Broken) != 1 {
		t.Errorf("status --json: %v %+v", err, rep.Broken)
	}

	// A loaded hook's file breaks: its previous version keeps its schedule,
	// its triggers skipped, and the listing says so.
	e.write("hooks.d/later.yaml", "trigger:\n  every: 1h\nstpes: []\n")
	waitFor(t, "the reload to list later.yaml as broken", func() bool {
		r = e.must(0, "list")
		return strings.Contains(r.stdout, "later [BROKEN]") && strings.Contains(r.stdout, "kept on schedule, each trigger skipped (invalid_file)")
	}, func() string { return r.String() })

	// Both fixed: nothing is broken, status exits 0.
	e.write("hooks.d/typo.yaml", goodHook)
	e.write("hooks.d/later.yaml", "trigger:\n  every: 1h\n"+goodHook)
	waitFor(t, "the fixes to load", func() bool {
		st = e.run("status")
		return st.code == 0 && !strings.Contains(st.stdout, "BROKEN")
	}, func() string { return st.String() })
	if r := e.must(0, "list"); strings.Contains(r.stdout, "BROKEN") {
		t.Errorf("list after the fix:\n%s", r)
	}
}

// TestValidateChecksModelAgainstEnvironment: a hook that needs a model
// where none is set in hookd.yaml, the hook or this shell's environment
// fails validate, naming the environment it checked.
func TestValidateChecksModelAgainstEnvironment(t *testing.T) {
	e := newEnv(t, "", map[string]string{"ask.yaml": "prompt: what now?\n"})
	r := e.run("validate")
	if r.code != exitError || !strings.Contains(r.stderr, "this shell's environment") {
		t.Errorf("validate of a hook with no model anywhere:\n%s", r)
	}
	e.write("hookd.yaml", "llm:\n  model: m\n  base_url: http://127.0.0.1:1/v1\n")
	if r := e.run("validate"); r.code != 0 {
		t.Errorf("validate with a model in hookd.yaml:\n%s", r)
	}
}
