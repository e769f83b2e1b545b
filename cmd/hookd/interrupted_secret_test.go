package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/hookd/hookd/engine"
)

// TestInterruptedRunRedacted performs a crash with a secret in a run's
// event: a client posts an event that holds the secret of the hook it
// fires (a webhook echoing a token), the run is killed with hookd
// (SIGKILL) while its step sleeps, and the next hookd marks it
// interrupted. Its record never reached the final write that redacts
// it; it must hold the secret redacted anyway, from the first write: in
// `hookd run` while it runs and once interrupted, and in the search
// index, which indexes interrupted runs (the secret's words find
// nothing).
func TestInterruptedRunRedacted(t *testing.T) {
	e := newEnv(t, "", map[string]string{"keeper.yaml": `secrets: [MY_SECRET]
trigger:
  event: job.start
steps:
  - type: shell
    command: 'echo $$ > keeper.pid; sleep 30'
    secrets: [MY_SECRET]
skip_llm: true
`})
	e.environ = []string{"MY_SECRET=" + hookSecret}
	d := e.serve()
	data, _ := json.Marshal(map[string]any{"token": hookSecret, "note": "webhook"})
	e.must(0, "emit", "job.start", "--data", string(data))
	waitFor(t, "the step asleep", func() bool { return pidIn(e, "keeper.pid") > 0 }, func() string { return d.log.String() })
	run := e.listRuns("keeper")[0]
	if l := leaked(e.must(0, "run", run.ID, "--json").stdout); l != "" {
		t.Errorf("the running run's record holds %s", l)
	}
	d.signal(syscall.SIGKILL)
	d.wait()

	d2 := e.serve()
	defer func() { d2.signal(syscall.SIGTERM); d2.wait() }()
	waitFor(t, "the run interrupted", func() bool { return e.getRun(run.ID).Status == engine.StatusInterrupted },
		func() string { return d2.log.String() })
	out := e.must(0, "run", run.ID, "--json").stdout
	if l := leaked(out); l != "" {
		t.Errorf("the interrupted run's record holds %s:\n%s", l, out)
	}
	if !strings.Contains(out, "REDACTED:MY_SECRET") {
		t.Errorf("the interrupted run's record does not show the secret redacted:\n%s", out)
	}
	for _, q := range []string{"Zx81", "ключ"} {
		if out := e.must(0, "search", q, "--json").stdout; strings.Contains(out, "run_id") || leaked(out) != "" {
			t.Errorf("hookd search %q found the interrupted run by the secret:\n%s", q, out)
		}
	}
	if out := e.must(0, "search", "webhook", "--json").stdout; !strings.Contains(out, run.ID) {
		t.Errorf("the interrupted run is not indexed:\n%s", out)
	}
}
