package main

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

// fdHooks leave what a long-running daemon must clean up after every run:
// a background process holding the step's output pipe (swept), a step
// killed at its timeout, and a plain command; each step's process group
// takes and frees a slot of the process journal.
var fdHooks = map[string]string{
	"bg.yaml": `steps:
  - type: shell
    command: 'sleep 60 & echo started'
skip_llm: true
`,
	"slow.yaml": `steps:
  - type: shell
    command: 'echo going; sleep 60'
    timeout: 50ms
skip_llm: true
`,
	"plain.yaml": `steps:
  - type: shell
    command: 'echo out; echo err >&2'
skip_llm: true
`,
}

// openFDs lists the descriptors process pid holds, with their targets.
func openFDs(t *testing.T, pid int) []string {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("no %s: %v", dir, err)
	}
	var out []string
	for _, e := range ents {
		target, _ := os.Readlink(dir + "/" + e.Name())
		out = append(out, e.Name()+" -> "+target)
	}
	return out
}

// TestDaemonKeepsNoDescriptorsAcrossRuns is the long-running user's
// check of the pipes, the process journal and the run goroutines kept
// for the next run: a real daemon runs steps that leave a background
// process on the output pipe, time out, or just write, and holds no
// more descriptors after them than after the first few. The default run
// fires 30 runs (10 of each hook: a descriptor leaked by every run of
// any one of them is more than the slack of 4); HOOKD_TEST_LONG=1 fires
// 200.
func TestDaemonKeepsNoDescriptorsAcrossRuns(t *testing.T) {
	e := newProcEnv(t, "", fdHooks)
	d := e.serve()
	// The runs are fired and waited for as `hookd fire --wait` does, with
	// the same two requests on a new connection each, but from the test:
	// 200 CLI processes took most of the test's time.
	sc := e.socketClient()
	sc.http.Transport.(*http.Transport).DisableKeepAlives = true
	names := []string{"bg", "slow", "plain"}
	want := []engine.Status{engine.StatusCompleted, engine.StatusFailed, engine.StatusCompleted} // slow fails at its timeout
	fire := func(n int) {
		for i := 0; i < n; i++ {
			var fired api.RunAnswer
			sc.json("POST", "/v1/hooks/"+names[i%len(names)]+"/fire", nil, http.StatusOK, &fired)
			var final engine.Run
			sc.json("GET", "/v1/runs/"+fired.Run.ID+"/wait", nil, http.StatusOK, &final)
			if final.Status != want[i%len(names)] {
				t.Fatalf("run %s of %s: %s %q, want %s", final.ID, final.Hook, final.Status, final.Error, want[i%len(names)])
			}
		}
	}
	fire(6) // what the daemon opens once (database connections, /dev/null)
	var before []string
	waitFor(t, "the daemon's descriptors to settle", func() bool {
		a := openFDs(t, d.pid())
		before = openFDs(t, d.pid())
		return len(a) == len(before)
	}, func() string { return strings.Join(before, "\n") })
	runs := testtool.Count(30, 200)
	fire(runs)
	// Descriptors of the CLI's connections and of the database may come
	// and go: wait for the count to come back, with a little slack that
	// no leak of one descriptor a run fits in.
	var after []string
	waitFor(t, "the daemon's descriptors to come back to their count before the runs", func() bool {
		after = openFDs(t, d.pid())
		return len(after) <= len(before)+4
	}, func() string {
		return fmt.Sprintf("%d descriptors after %d runs, %d before:\n%s", len(after), runs, len(before), strings.Join(after, "\n"))
	})
	pipes := func(fds []string) int { return strings.Count(strings.Join(fds, "\n"), "pipe:") }
	if pipes(after) > pipes(before) {
		t.Errorf("%d pipes open after %d runs, %d before:\nbefore:\n%s\nafter:\n%s", pipes(after), runs, pipes(before),
			strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("hookd serve after SIGTERM: exit %d; log:\n%s", code, d.log)
	}
}
