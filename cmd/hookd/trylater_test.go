package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// runInBackground runs a hookd command in this process in the background,
// its stderr readable while it runs; the result comes on the channel.
func runInBackground(e *env, stderr *logBuffer, args ...string) <-chan result {
	done := make(chan result, 1)
	go func() {
		var stdout bytes.Buffer
		code := runIn(e.host(), args, &stdout, stderr)
		done <- result{args: args, code: code, stdout: stdout.String(), stderr: stderr.String()}
	}()
	return done
}

// TestLockedByCommandTryAgain: while a `hookd fire` run without a daemon
// (another process, holding the SQLite database's lock) runs, the
// commands that need the lock — fire, emit, pause, prune — exit 75 (they
// exited 1, "stop it first"), naming the command that holds it and the
// way to wait; with --wait-lock they wait for it, then do their work.
func TestLockedByCommandTryAgain(t *testing.T) {
	e := newEnv(t, "", map[string]string{"busy.yaml": busyHook, "quick.yaml": quickHook})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holder := e.command(ctx, "fire", "busy", "--wait") // the real binary: another process
	var out logBuffer
	holder.Stdout, holder.Stderr = &out, &out
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.write("release", "")
	waitFor(t, "the busy step to start", func() bool { return pidIn(e, "busy.pid") > 0 }, out.String)

	want := "is in use by a hookd command run without a daemon (hookd fire, pid " + strconv.Itoa(holder.Process.Pid) + ")"
	for _, args := range [][]string{{"fire", "quick"}, {"emit", "x.y"}, {"pause", "quick"}, {"prune"}} {
		r := e.must(75, args...)
		if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "try again, or wait for it with --wait-lock DURATION") {
			t.Errorf("want %q and the way to wait on stderr:\n%s", want, r)
		}
	}

	var stderr logBuffer
	done := runInBackground(e, &stderr, "fire", "quick", "--wait", "--wait-lock", "1m")
	waitFor(t, "the fire to wait for the lock", func() bool { return strings.Contains(stderr.String(), "waiting up to 1m0s") }, stderr.String)
	e.write("release", "")
	if err := holder.Wait(); err != nil {
		t.Fatalf("the holding fire: %v\n%s", err, out.String())
	}
	r := awaitResult(t, "hookd fire quick --wait --wait-lock 1m", done)
	if r.code != 0 || !strings.Contains(r.stderr, want) {
		t.Fatalf("the waiting fire:\n%s", r)
	}
	if run := e.getRun(runID(t, r)); run.Status != engine.StatusCompleted {
		t.Errorf("the waiting fire's run: %s", run.Status)
	}
}

// TestDaemonStartingTryAgain: a command run while the daemon is still
// starting (it holds the lock; its daemon:start handler has not ended, so
// its socket does not answer) exits 75 saying so (it exited 1, "stop it
// first"); with --wait-lock it waits and goes through the daemon once it
// answers.
func TestDaemonStartingTryAgain(t *testing.T) {
	e := newProcEnv(t, "", map[string]string{
		"quick.yaml": quickHook,
		"hold.yaml": `on: daemon:start
timeout: 2m
command: [sh, -c, "echo $$ > hold.pid; i=0; while [ ! -f started ] && [ $i -lt 2400 ]; do sleep 0.05; i=$((i+1)); done"]
`,
	})
	defer e.write("started", "")
	d := e.startServe()
	waitFor(t, "the daemon:start handler to run", func() bool { return pidIn(e, "hold.pid") > 0 }, d.log.String)

	r := e.must(75, "fire", "quick", "--wait")
	if want := "hookd is still starting (hookd serve, pid " + strconv.Itoa(d.pid()) + ")"; !strings.Contains(r.stderr, want) ||
		!strings.Contains(r.stderr, "--wait-lock") {
		t.Errorf("want %q and the way to wait on stderr:\n%s", want, r)
	}
	var stderr logBuffer
	done := runInBackground(e, &stderr, "fire", "quick", "--wait", "--wait-lock", "1m")
	waitFor(t, "the fire to wait for the daemon", func() bool { return strings.Contains(stderr.String(), "waiting up to 1m0s") }, stderr.String)
	e.write("started", "")
	d.waitLog("hookd serving")
	r = awaitResult(t, "hookd fire quick --wait --wait-lock 1m", done)
	if r.code != 0 {
		t.Fatalf("the waiting fire:\n%s", r)
	}
	// The daemon holds the lock: the run is its own.
	if run := e.getRun(runID(t, r)); run.Status != engine.StatusCompleted {
		t.Errorf("the waiting fire's run: %s", run.Status)
	}
}
