package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres/postgrestest"
)

// fireInProcess runs `hookd fire NAME --wait` with no daemon (so the
// command holds the database lock and runs the hook itself) in the
// background; the result comes on the channel.
func fireInProcess(t *testing.T, e *env, name string) <-chan result {
	t.Helper()
	done := make(chan result, 1)
	go func() {
		r, err := e.exec("fire", name, "--wait")
		if err != nil {
			r.code = -1
			r.stderr += "\n" + err.Error()
		}
		done <- r
	}()
	return done
}

// waitStep waits until the step of a background fire has written its pid
// to the file pidFile, failing the test at once, with the fire's result,
// when the fire ends first (instead of after waitLong, saying nothing).
func waitStep(t *testing.T, e *env, pidFile string, fired <-chan result) {
	t.Helper()
	var ended *result
	waitFor(t, "the step to start", func() bool {
		select {
		case r := <-fired:
			ended = &r
			return true
		default:
		}
		return pidIn(e, pidFile) > 0
	}, nil)
	if ended != nil {
		t.Fatalf("the fire ended before the test released its step:\n%s", *ended)
	}
}

// awaitResult waits for a background command's result.
func awaitResult(t *testing.T, what string, done <-chan result) result {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(2 * waitLong):
		t.Fatalf("%s did not end", what)
		return result{}
	}
}

// TestServeWaitsForCommand: `hookd serve` started while a `hookd fire`
// run without a daemon holds the database lock (a script firing during a
// restart) waits for it, saying which command and pid, instead of
// exiting; it serves once the fire has ended, and the fire's run is
// recorded once. Another command meanwhile is refused at once, naming
// the fire; a second serve beside the running one still exits at once.
func TestServeWaitsForCommand(t *testing.T) {
	testServeWaitsForCommand(t, "")
}

// TestServeWaitsForCommandOnPostgres: the same with the store in
// PostgreSQL, where the offline fire holds the database alone and the
// node waits for it.
func TestServeWaitsForCommandOnPostgres(t *testing.T) {
	testServeWaitsForCommand(t, postgrestest.NewDatabase(t))
}

// testServeWaitsForCommand runs the test on SQLite (url "") or on the
// PostgreSQL database at url.
func testServeWaitsForCommand(t *testing.T, url string) {
	settings := ""
	if url != "" {
		settings = "database: " + url + "\n"
	}
	e := newProcEnv(t, settings, map[string]string{"busy.yaml": busyHook, "quick.yaml": quickHook})
	fired := fireInProcess(t, e, "busy")
	waitStep(t, e, "busy.pid", fired)

	d := e.startServe()
	d.waitLog("waiting for it to end")
	if !strings.Contains(d.log.String(), `command="hookd fire"`) {
		t.Errorf("the daemon does not say which command it waits for:\n%s", d.log)
	}
	// A command beside the fire: refused at once with 75, try again
	// (commands do not wait for each other unless told: --wait-lock),
	// naming the holder.
	r := e.must(75, "fire", "quick")
	want := "in use by a hookd command run without a daemon (hookd fire, pid "
	if !strings.Contains(r.stderr, want) {
		t.Errorf("want %q on stderr:\n%s", want, r)
	}
	if d.exited() {
		t.Fatalf("hookd serve exited while the fire held the lock (code %d):\n%s", d.code, d.log)
	}

	e.write("release", "")
	r = awaitResult(t, "hookd fire busy --wait", fired)
	if r.code != 0 {
		t.Fatalf("the fire failed:\n%s", r)
	}
	id := runID(t, r)
	d.waitLog("hookd serving")
	if n := strings.Count(d.log.String(), "waiting for it to end"); n != 1 {
		t.Errorf("the wait was logged %d times, want once:\n%s", n, d.log)
	}
	e.must(0, "status")
	e.must(0, "fire", "quick", "--wait") // through the daemon

	runs := e.listRuns("busy")
	if len(runs) != 1 || runs[0].ID != id || runs[0].Status != engine.StatusCompleted {
		t.Fatalf("want the fire's run %s recorded once, completed; got %d runs: %+v", id, len(runs), runs)
	}

	// A second daemon does not wait: it exits at once naming the first
	// (on PostgreSQL: the node of the same name).
	r = e.must(1, "serve")
	want = "in use by another hookd (hookd serve, pid " + strconv.Itoa(d.pid()) + ")"
	if url != "" {
		want = "a live hookd runs as node"
	}
	if !strings.Contains(r.stderr, want) {
		t.Errorf("want %q on stderr:\n%s", want, r)
	}
	if d.exited() {
		t.Fatalf("the first daemon exited:\n%s", d.log)
	}
}

// TestServeWaitStoppedBySignal: SIGTERM ends a daemon waiting for a
// command's lock (systemd stopping it): it exits 0 at once, without
// waiting for the command, which goes on undisturbed.
func TestServeWaitStoppedBySignal(t *testing.T) {
	e := newEnv(t, "", map[string]string{"busy.yaml": busyHook})
	fired := fireInProcess(t, e, "busy")
	waitStep(t, e, "busy.pid", fired)

	d := e.startServe()
	d.waitLog("waiting for it to end")
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Errorf("hookd serve exited %d on SIGTERM while waiting, want 0:\n%s", code, d.log)
	}
	if !strings.Contains(d.log.String(), "hookd stopped before it started") {
		t.Errorf("want the stop logged:\n%s", d.log)
	}
	if strings.Contains(d.log.String(), "hookd serving") {
		t.Errorf("the daemon served:\n%s", d.log)
	}
	if _, err := os.Stat(e.path(".hookd/hookd.sock")); err == nil {
		t.Errorf("the waiting daemon left a socket")
	}

	e.write("release", "")
	r := awaitResult(t, "hookd fire busy --wait", fired)
	if r.code != 0 {
		t.Fatalf("the fire failed:\n%s", r)
	}
	if run := e.getRun(runID(t, r)); run.Status != engine.StatusCompleted {
		t.Errorf("the fire's run is %s, want completed", run.Status)
	}
}
