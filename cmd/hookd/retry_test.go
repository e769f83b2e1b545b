package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// flakyHook fails its first run (and leaves a mark) and passes the next.
const flakyHook = `steps:
  - name: check
    type: shell
    command: 'if [ -f mark ]; then echo fine; else touch mark; exit 3; fi'
skip_llm: true
retry: {attempts: 2, backoff: 1s, max_backoff: 1s}
`

// TestRetryThroughDaemon: a failed run of a hook with retry: is run again
// by the daemon; hookd runs, hookd run and hookd status show the chain.
func TestRetryThroughDaemon(t *testing.T) {
	e := newEnv(t, "", map[string]string{"flaky.yaml": flakyHook})
	e.serve()
	first := runID(t, e.must(0, "fire", "flaky"))
	r1 := e.waitRun(first, engine.StatusFailed)
	if r1.Attempt != 1 || r1.Attempts != 2 || r1.Retry == nil || r1.Retry.Attempt != 2 {
		t.Fatalf("first run: attempt %d of %d, retry %+v", r1.Attempt, r1.Attempts, r1.Retry)
	}
	// The retry's run exists once its backoff passed.
	waitFor(t, "the retry's run", func() bool { return e.run("run", r1.Retry.RunID).code == 0 }, nil)
	retry := e.waitRun(r1.Retry.RunID, engine.StatusCompleted)
	if retry.RetryOf != first || retry.Attempt != 2 || retry.Trigger != engine.TriggerRetry {
		t.Errorf("retry: %+v", retry)
	}
	list := e.must(0, "runs", "flaky").stdout
	for _, w := range []string{"failed (step_failed), attempt 1 of 2, retry scheduled", "completed, attempt 2 of 2", "retry " + retry.ID} {
		if !strings.Contains(list, w) {
			t.Errorf("hookd runs lacks %q:\n%s", w, list)
		}
	}
	text := e.must(0, "run", retry.ID).stdout
	if !strings.Contains(text, "attempt:   2 of 2 (retry_of: "+first+")") {
		t.Errorf("hookd run lacks the attempt:\n%s", text)
	}
	if text := e.must(0, "run", first).stdout; !strings.Contains(text, "retry:     attempt 2 as run "+retry.ID) {
		t.Errorf("hookd run of the first lacks the retry:\n%s", text)
	}
	var st struct {
		Retries []engine.RetryInfo `json:"retries"`
	}
	if err := json.Unmarshal([]byte(e.must(0, "status", "--json").stdout), &st); err != nil || st.Retries == nil || len(st.Retries) != 0 {
		t.Errorf("status retries: %+v (%v); want an empty list once the retry ran", st.Retries, err)
	}
}

// TestFirstAttemptThatPassesIsJustARun: a run of a hook with retry: that
// completes at once says "completed", not "attempt 1 of 3", in hookd runs,
// hookd run and fire's outcome line; its JSON keeps attempt and attempts.
func TestFirstAttemptThatPassesIsJustARun(t *testing.T) {
	e := newEnv(t, "", map[string]string{"steady.yaml": `steps:
  - type: shell
    command: echo fine
skip_llm: true
retry: {attempts: 3, backoff: 1s}
`})
	fired := e.must(0, "fire", "steady", "--wait")
	if strings.Contains(fired.stderr, "attempt") {
		t.Errorf("fire's outcome names an attempt:\n%s", fired)
	}
	run := e.getRun(runID(t, fired))
	if run.Status != engine.StatusCompleted || run.Attempt != 1 || run.Attempts != 3 {
		t.Fatalf("run: %s, attempt %d of %d", run.Status, run.Attempt, run.Attempts)
	}
	if list := e.must(0, "runs", "steady").stdout; strings.Contains(list, "attempt") || !strings.Contains(list, "completed") {
		t.Errorf("hookd runs:\n%s", list)
	}
	if text := e.must(0, "run", run.ID).stdout; strings.Contains(text, "attempt") {
		t.Errorf("hookd run names an attempt:\n%s", text)
	}
}
