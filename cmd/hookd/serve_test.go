package main

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

const quickHook = `steps:
  - type: shell
    command: echo quick
skip_llm: true
`

// TestSecondServeRefused starts a second daemon on the database of a
// running one: it exits 1 naming the holder's pid, and the first daemon
// keeps serving.
func TestSecondServeRefused(t *testing.T) {
	e := newProcEnv(t, "", map[string]string{"quick.yaml": quickHook})
	d := e.serve("--log-format", "json")

	r := e.must(1, "serve")
	if !strings.Contains(r.stderr, "in use by another hookd") {
		t.Errorf("want the lock refusal on stderr:\n%s", r)
	}
	if !strings.Contains(r.stderr, "pid "+strconv.Itoa(d.pid())) {
		t.Errorf("want the holder's pid %d on stderr:\n%s", d.pid(), r)
	}
	// The same with the database given by flag.
	r = e.must(1, "serve", "--db", e.path(".hookd/hookd.db"))
	if !strings.Contains(r.stderr, "in use by another hookd") {
		t.Errorf("want the lock refusal on stderr:\n%s", r)
	}

	// The first daemon was not disturbed: its socket still answers.
	e.must(0, "status")
	e.must(0, "fire", "quick", "--wait")
	if d.exited() {
		t.Fatalf("the first daemon exited:\n%s", d.log)
	}
	// --log-format json: every log line is a JSON object.
	for _, line := range strings.Split(strings.TrimSpace(d.log.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["msg"] == nil {
			t.Errorf("log line is not JSON (%v): %q", err, line)
		}
	}
}

// busyHook runs until the test creates the file "release" (bounded: 60s).
const busyHook = `steps:
  - type: shell
    command: |
      echo $$ > busy.pid
      i=0
      while [ ! -f release ] && [ "$i" -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
      echo released
skip_llm: true
`

// TestSIGTERMGraceful stops the daemon with SIGTERM while a run is in
// flight and another waits in the queue: no new runs start, the run in
// flight finishes, the daemon exits 0, and the queued run waits in the
// database for the next start.
func TestSIGTERMGraceful(t *testing.T) {
	e := newEnv(t, "grace: 2m\nmax_concurrent: 1\n", map[string]string{"busy.yaml": busyHook, "quick.yaml": quickHook})
	d := e.serve()

	id := runID(t, e.must(0, "fire", "busy"))
	queued := runID(t, e.must(0, "fire", "quick"))
	waitFor(t, "the busy step to start", func() bool { return pidIn(e, "busy.pid") > 0 }, nil)

	d.signal(syscall.SIGTERM)
	d.waitLog("stopping:")
	if d.exited() {
		t.Fatalf("the daemon exited before its run finished:\n%s", d.log)
	}
	e.write("release", "")
	if code := d.wait(); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0; log:\n%s", code, d.log)
	}
	run := e.getRun(id)
	if run.Status != engine.StatusCompleted || !strings.Contains(run.Steps[0].Output, "released") {
		t.Errorf("run %s: status %s (%s), steps %+v; want completed", id, run.Status, run.Reason, run.Steps)
	}
	if got := e.getRun(queued); got.Status != engine.StatusQueued {
		t.Errorf("queued run %s: status %s (%s) after the stop, want still queued", queued, got.Status, got.Reason)
	}
	if e.exists(".hookd/hookd.sock") {
		t.Errorf("the socket was left behind")
	}
	e.must(1, "status")

	// The next start runs the queued run.
	e.serve()
	e.waitRun(queued, engine.StatusCompleted)
}

// TestSIGTERMTwice forces the stop with a second signal: the daemon exits
// 1 without waiting for the grace period, the run in flight is cancelled
// and its command killed at once: SIGKILL, no SIGTERM and grace first (the
// step would note a SIGTERM in got-term).
func TestSIGTERMTwice(t *testing.T) {
	e := newProcEnv(t, "grace: 2m\n", map[string]string{"busy.yaml": strings.Replace(busyHook,
		"echo $$ > busy.pid", "trap 'echo term >> got-term' TERM; echo $$ > busy.pid", 1)})
	d := e.serve()
	id := runID(t, e.must(0, "fire", "busy"))
	waitFor(t, "the busy step to start", func() bool { return pidIn(e, "busy.pid") > 0 }, nil)

	pid := pidIn(e, "busy.pid")
	d.signal(syscall.SIGTERM)
	d.waitLog("stopping:")
	d.signal(syscall.SIGINT)
	if code := d.wait(); code != 1 {
		t.Fatalf("exit %d after a second signal, want 1; log:\n%s", code, d.log)
	}
	if !strings.Contains(d.log.String(), "forced stop") {
		t.Errorf("the log does not say the stop was forced:\n%s", d.log)
	}
	if e.exists(".hookd/hookd.sock") {
		t.Errorf("the socket was left behind")
	}
	if !testtool.ProcessGone(pid) {
		t.Errorf("the step's process %d outlived a forced stop", pid)
	}
	if e.exists("got-term") {
		t.Errorf("the step got SIGTERM and a grace period; a forced stop kills at once")
	}
	e.killSteps()

	e.serve()
	if run := e.getRun(id); run.Status != engine.StatusCancelled || !strings.Contains(run.Reason, "by force") {
		t.Errorf("run %s: status %s (%s), want cancelled by force", id, run.Status, run.Reason)
	}
}

// TestSIGTERMGraceOver stops the daemon with SIGTERM while a run is in
// flight that outlasts the grace period: it is cancelled and recorded so,
// and the daemon exits 0.
func TestSIGTERMGraceOver(t *testing.T) {
	e := newEnv(t, "grace: 1s\n", map[string]string{"sleepy.yaml": `steps:
  - type: shell
    command: echo $$ > sleepy.pid; sleep 30
skip_llm: true
`})
	d := e.serve()

	id := runID(t, e.must(0, "fire", "sleepy"))
	waitFor(t, "the sleepy step to start", func() bool { return pidIn(e, "sleepy.pid") > 0 }, nil)

	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0; log:\n%s", code, d.log)
	}
	if !strings.Contains(d.log.String(), "grace period over") {
		t.Errorf("the log does not say the grace period ran out:\n%s", d.log)
	}
	run := e.getRun(id)
	if run.Status != engine.StatusCancelled {
		t.Errorf("run %s: status %s (%s), want cancelled", id, run.Status, run.Reason)
	}
	if !strings.Contains(run.Reason, "shutdown") {
		t.Errorf("run %s: reason %q should say hookd stopped", id, run.Reason)
	}
	// The step's process group was stopped with the run.
	if pid := pidIn(e, "sleepy.pid"); syscall.Kill(pid, 0) == nil {
		t.Errorf("the step process %d still runs after the daemon stopped", pid)
	}
}

// TestServeStartErrors: settings and hooks directories that are wrong stop
// the start with exit 1; a bad hook file does not, it is logged and left
// out.
func TestServeStartErrors(t *testing.T) {
	e := newEnv(t, "", map[string]string{"quick.yaml": quickHook})

	r := e.must(1, "serve", "--hooks", "nowhere")
	if !strings.Contains(r.stderr, "nowhere does not exist") {
		t.Errorf("serve with a missing hooks dir:\n%s", r)
	}
	r = e.must(1, "serve", "--config", "missing.yaml")
	if !strings.Contains(r.stderr, "missing.yaml") {
		t.Errorf("serve with a missing settings file:\n%s", r)
	}
	e.write("hookd.yaml", "max_concurrent: 0\n")
	r = e.must(1, "serve")
	if !strings.Contains(r.stderr, "hookd.yaml:1: max_concurrent: must be >= 1") {
		t.Errorf("serve with bad settings:\n%s", r)
	}
	e.write("hookd.yaml", "max_concurent: 2\n")
	r = e.must(1, "serve")
	if !strings.Contains(r.stderr, "max_concurent") {
		t.Errorf("serve with a misspelled setting:\n%s", r)
	}
	if e.exists(".hookd/hookd.sock") {
		t.Errorf("a failed start left a socket")
	}
	os.Remove(e.path("hookd.yaml"))

	e.write("hooks.d/broken.yaml", "steps:\n  - type: nosuchkind\n")
	e.badHooksOK = true
	d := e.serve()
	d.waitLog("hook file not loaded")
	if !strings.Contains(d.log.String(), "broken.yaml") {
		t.Errorf("the log does not name the bad file:\n%s", d.log)
	}
	r = e.must(0, "list")
	if !strings.Contains(r.stdout, "quick") || !strings.Contains(r.stdout, "broken [BROKEN]") || !strings.Contains(r.stdout, "nosuchkind") {
		t.Errorf("list with a bad file: want it listed, marked, with its error:\n%s", r)
	}
	e.must(0, "fire", "quick", "--wait")
	e.must(1, "fire", "broken")
}

// TestTwoDatabasesOneDirectory: each database's daemon listens on a socket
// named after it, so two databases in one directory never share a socket
// and commands reach the daemon of the database they name.
func TestTwoDatabasesOneDirectory(t *testing.T) {
	e := newEnv(t, "", map[string]string{"quick.yaml": quickHook})
	a := e.serve("--db", ".hookd/a.db")
	b := e.serve("--db", ".hookd/b.db")

	// Each daemon has its own socket, named after its database, and
	// commands reach the daemon of the database they name.
	idA := runID(t, e.must(0, "fire", "quick", "--db", ".hookd/a.db", "--wait"))
	idB := runID(t, e.must(0, "fire", "quick", "--db", ".hookd/b.db", "--wait"))
	if runs := e.listRuns("--db", ".hookd/a.db"); len(runs) != 1 || runs[0].ID != idA {
		t.Errorf("runs of a.db: %+v, want only %s", runs, idA)
	}
	if runs := e.listRuns("--db", ".hookd/b.db"); len(runs) != 1 || runs[0].ID != idB {
		t.Errorf("runs of b.db: %+v, want only %s", runs, idB)
	}
	if !strings.Contains(a.log.String(), idA) || strings.Contains(a.log.String(), idB) {
		t.Errorf("the daemon of a.db ran the wrong runs; its log:\n%s", a.log)
	}
	if !strings.Contains(b.log.String(), idB) || strings.Contains(b.log.String(), idA) {
		t.Errorf("the daemon of b.db ran the wrong runs; its log:\n%s", b.log)
	}
	e.must(0, "status", "--db", ".hookd/a.db")
	e.must(0, "status", "--db", ".hookd/b.db")
}

// TestSIGTERMGraceZero: grace: 0 means a stop does not wait for runs in
// flight: they are cancelled at once.
func TestSIGTERMGraceZero(t *testing.T) {
	e := newEnv(t, "grace: 0s\n", map[string]string{"busy.yaml": busyHook})
	d := e.serve()
	id := runID(t, e.must(0, "fire", "busy"))
	waitFor(t, "the busy step to start", func() bool { return pidIn(e, "busy.pid") > 0 }, nil)

	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0; log:\n%s", code, d.log)
	}
	if run := e.getRun(id); run.Status != engine.StatusCancelled {
		t.Errorf("run %s: status %s (%s), want cancelled", id, run.Status, run.Reason)
	}
}
