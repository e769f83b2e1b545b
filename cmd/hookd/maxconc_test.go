package main

import (
	"os"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// TestMaxConcurrentReload: max_concurrent is taken again when hookd.yaml
// changes (agent-queue re-read its engine settings on config.reloaded).
// Lowered, it cancels nothing: the run in flight goes on, and a new one
// waits for a slot; raised, the waiting run starts while the first still
// runs.
func TestMaxConcurrentReload(t *testing.T) {
	e := newEnv(t, "max_concurrent: 2\n", map[string]string{
		"busy.yaml":  fireHooks["busy.yaml"],
		"quick.yaml": quickHook,
	})
	d := e.serve()
	settings := func(body string, reloads int) {
		t.Helper()
		e.write("hookd.yaml.new", body)
		if err := os.Rename(e.path("hookd.yaml.new"), e.path("hookd.yaml")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "hookd.yaml reloaded", func() bool {
			return strings.Count(d.log.String(), "changed=[max_concurrent]") >= reloads
		}, d.log.String)
	}
	busy := runID(t, e.must(0, "fire", "busy"))

	settings("max_concurrent: 1\n", 1)
	r := e.must(0, "fire", "quick")
	quick := runID(t, r)
	if !strings.Contains(r.stderr, "queued:") || !strings.Contains(r.stderr, "max_concurrent 1") {
		t.Fatalf("a fire after max_concurrent was lowered to 1 with one run in flight should wait for a slot:\n%s\n%s", r, d.log)
	}
	if run := e.getRun(busy); run.Status != engine.StatusRunning {
		t.Fatalf("the run in flight when max_concurrent was lowered: %s %s", run.Status, run.Error)
	}

	settings("max_concurrent: 2\n", 2)
	e.waitRun(quick, engine.StatusCompleted)
	if run := e.getRun(busy); run.Status != engine.StatusRunning {
		t.Fatalf("busy ended before the queued run started: %s", run.Status)
	}
	e.write("release", "")
	e.waitRun(busy, engine.StatusCompleted)
}
