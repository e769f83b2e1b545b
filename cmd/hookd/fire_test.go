package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/hookd/hookd/engine"
)

// fireHooks are hooks for the fire tests, each ending a different way.
var fireHooks = map[string]string{
	"ok.yaml": `steps:
  - type: shell
    command: echo ok ran
skip_llm: true
`,
	// The step exits 0, so the run completes without the model.
	"short.yaml": `steps:
  - type: shell
    command: echo all good
    skip_llm_if_exit_zero: true
prompt: "never sent: {{step_0}}"
`,
	// A prompt and no model client: the run fails.
	"nomodel.yaml": `steps:
  - type: shell
    command: echo context
prompt: "summarise {{step_0}}"
`,
	// A required step that times out: the run fails.
	"slow.yaml": `steps:
  - type: shell
    command: sleep 5
    timeout: 100ms
    required: true
skip_llm: true
`,
	// A command that exits non-zero fails a hook with no model stage.
	"exit3.yaml": `steps:
  - type: shell
    command: exit 3
skip_llm: true
`,
	"cool.yaml": `cooldown: 1h
steps:
  - type: shell
    command: echo cool
skip_llm: true
`,
	// Runs until the test creates the file "release" (bounded: 60s).
	"busy.yaml": `steps:
  - type: shell
    command: |
      echo $$ > busy.pid
      i=0
      while [ ! -f release ] && [ "$i" -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
      echo released
skip_llm: true
`,
	"pausable.yaml": `steps:
  - type: shell
    command: echo pausable ran
skip_llm: true
`,
}

// TestFireThroughDaemon fires hooks through a running daemon: the run id,
// the exit codes of --wait, and the gates that refuse a fire with 75.
func TestFireThroughDaemon(t *testing.T) {
	e := newEnv(t, "", fireHooks)
	d := e.serve()

	t.Run("prints run id", func(t *testing.T) {
		r := e.must(0, "fire", "ok")
		id := runID(t, r)
		run := e.waitRun(id, engine.StatusCompleted)
		if run.Hook != "ok" || run.Trigger != "manual" {
			t.Errorf("run %s: hook %q trigger %q", id, run.Hook, run.Trigger)
		}
		if len(run.Steps) != 1 || run.Steps[0].Output != "ok ran\n" {
			t.Errorf("run %s steps: %+v", id, run.Steps)
		}
	})
	t.Run("wait completed", func(t *testing.T) {
		r := e.must(0, "fire", "ok", "--wait")
		if !strings.Contains(r.stderr, "ok completed") {
			t.Errorf("want the outcome on stderr:\n%s", r)
		}
		if got := e.getRun(runID(t, r)); got.Status != engine.StatusCompleted {
			t.Errorf("status %s", got.Status)
		}
	})
	t.Run("wait nonzero exit fails", func(t *testing.T) {
		r := e.must(1, "fire", "exit3", "--wait")
		run := e.getRun(runID(t, r))
		if run.Status != engine.StatusFailed || run.Reason != "step_0: exit code 3" || len(run.Steps) != 1 ||
			run.Steps[0].ExitCode == nil || *run.Steps[0].ExitCode != 3 {
			t.Errorf("status %s reason %q, steps %+v", run.Status, run.Reason, run.Steps)
		}
	})
	t.Run("wait short-circuit", func(t *testing.T) {
		r := e.must(0, "fire", "short", "--wait")
		run := e.getRun(runID(t, r))
		if run.Status != engine.StatusCompleted || run.Cause != engine.CauseShortCircuit || !strings.Contains(run.Reason, "exit code 0") {
			t.Errorf("status %s cause %q reason %q, want completed, short-circuit: exit code 0", run.Status, run.Cause, run.Reason)
		}
		if run.Prompt != "" {
			t.Errorf("a short-circuited run rendered its prompt: %q", run.Prompt)
		}
	})
	t.Run("wait failed no model", func(t *testing.T) {
		r := e.must(1, "fire", "nomodel", "--wait")
		if !strings.Contains(r.stderr, "nomodel failed") || !strings.Contains(r.stderr, "no model") {
			t.Errorf("want the failure on stderr:\n%s", r)
		}
		if got := e.getRun(runID(t, r)); got.Status != engine.StatusFailed {
			t.Errorf("status %s", got.Status)
		}
	})
	t.Run("wait failed step timeout", func(t *testing.T) {
		r := e.must(1, "fire", "slow", "--wait")
		run := e.getRun(runID(t, r))
		if run.Status != engine.StatusFailed || !strings.Contains(run.Error, "step_0") {
			t.Errorf("status %s error %q, want failed naming step_0", run.Status, run.Error)
		}
	})
	t.Run("cooldown", func(t *testing.T) {
		first := runID(t, e.must(0, "fire", "cool", "--wait"))
		r := e.must(75, "fire", "cool")
		if !strings.Contains(r.stderr, "cooldown:") || !strings.Contains(r.stderr, "--force") {
			t.Errorf("refusal should name the cooldown gate and --force:\n%s", r)
		}
		if r.stdout != "" {
			t.Errorf("a refused fire printed a run id: %q", r.stdout)
		}
		forced := runID(t, e.must(0, "fire", "cool", "--force", "--wait"))
		if forced == first {
			t.Errorf("--force fire returned the old run %s", first)
		}
		skipped := e.listRuns("cool", "--status", "skipped")
		if len(skipped) != 1 || !strings.HasPrefix(skipped[0].Reason, "cooldown:") {
			t.Errorf("want one cooldown record, got %d: %+v", len(skipped), skipped)
		}
	})
	t.Run("in flight", func(t *testing.T) {
		id := runID(t, e.must(0, "fire", "busy"))
		r := e.must(75, "fire", "busy")
		if !strings.Contains(r.stderr, "in flight: run "+id) {
			t.Errorf("refusal should name the run in flight %s:\n%s", id, r)
		}
		// --force skips the cooldown, never the in-flight gate.
		r = e.must(75, "fire", "busy", "--force")
		if !strings.Contains(r.stderr, "in flight: run "+id) {
			t.Errorf("--force must not pass the in-flight gate:\n%s", r)
		}
		skipped := e.listRuns("busy", "--status", "skipped")
		if len(skipped) != 2 || !strings.HasPrefix(skipped[0].Reason, "in_flight") {
			t.Errorf("want two in_flight records, got %d: %+v", len(skipped), skipped)
		}
		e.write("release", "")
		run := e.waitRun(id, engine.StatusCompleted)
		if !strings.Contains(run.Steps[0].Output, "released") {
			t.Errorf("busy output %q", run.Steps[0].Output)
		}
	})
	t.Run("paused", func(t *testing.T) {
		r := e.must(0, "pause", "pausable")
		if strings.TrimSpace(r.stdout) != "pausable paused" {
			t.Errorf("pause through the daemon:\n%s", r)
		}
		r = e.must(75, "fire", "pausable")
		if !strings.Contains(r.stderr, "paused") || !strings.Contains(r.stderr, "hookd resume pausable") {
			t.Errorf("refusal should say the hook is paused and how to resume it:\n%s", r)
		}
		if skipped := e.listRuns("pausable", "--status", "skipped"); len(skipped) != 1 || !strings.HasPrefix(skipped[0].Reason, "paused") {
			t.Errorf("want one paused record, got %+v", skipped)
		}
		e.must(0, "resume", "pausable")
		e.must(0, "fire", "pausable", "--wait")
	})
	t.Run("unknown hook", func(t *testing.T) {
		r := e.must(1, "fire", "nope")
		if !strings.Contains(r.stderr, `no hook named "nope"`) {
			t.Errorf("want the hook named in the error:\n%s", r)
		}
		e.must(1, "pause", "nope")
	})
	t.Run("runs filter", func(t *testing.T) {
		skipped := e.listRuns("--status", "skipped", "--limit", "1000")
		if len(skipped) == 0 {
			t.Fatal("no skipped runs listed")
		}
		for _, r := range skipped {
			if r.Status != engine.StatusSkipped {
				t.Errorf("--status skipped listed run %s %s", r.ID, r.Status)
			}
		}
		for _, r := range e.listRuns("cool", "--limit", "1000") {
			if r.Hook != "cool" {
				t.Errorf("runs cool listed run %s of %s", r.ID, r.Hook)
			}
		}
		if n := len(e.listRuns("--limit", "2")); n != 2 {
			t.Errorf("--limit 2 listed %d runs", n)
		}
		// The table names the runs too.
		r := e.must(0, "runs", "cool")
		if !strings.Contains(r.stdout, "cooldown:") || !strings.Contains(r.stdout, "completed") {
			t.Errorf("runs table:\n%s", r)
		}
	})
	if d.exited() {
		t.Fatalf("the daemon exited during the test:\n%s", d.log)
	}
}

// TestFireInProcess fires hooks with no daemon running: the run happens in
// the hookd process, is recorded in the database, and the exit code of
// --wait follows its outcome.
func TestFireInProcess(t *testing.T) {
	e := newEnv(t, "", fireHooks)

	r := e.must(0, "fire", "ok", "--wait")
	id := runID(t, r)
	if got := e.getRun(id); got.Status != engine.StatusCompleted || got.Steps[0].Output != "ok ran\n" {
		t.Errorf("in-process run %s: status %s steps %+v", id, got.Status, got.Steps)
	}
	if r := e.must(0, "runs", "ok"); !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "completed") {
		t.Errorf("`hookd runs ok` does not list run %s:\n%s", id, r)
	}

	e.must(0, "fire", "short", "--wait")
	r = e.must(1, "fire", "nomodel", "--wait")
	if !strings.Contains(r.stderr, "no model") {
		t.Errorf("want the failure on stderr:\n%s", r)
	}
	// Without --wait the run still happens here, but the fire itself
	// succeeded.
	r = e.must(0, "fire", "nomodel")
	if got := e.getRun(runID(t, r)); got.Status != engine.StatusFailed {
		t.Errorf("status %s, want failed", got.Status)
	}
	e.must(1, "fire", "slow", "--wait")

	// The cooldown reads the last start from the database.
	e.must(0, "fire", "cool", "--wait")
	r = e.must(75, "fire", "cool", "--wait")
	if !strings.Contains(r.stderr, "cooldown:") || !strings.Contains(r.stderr, "--force") {
		t.Errorf("refusal should name the cooldown gate and --force:\n%s", r)
	}
	e.must(0, "fire", "cool", "--force", "--wait")

	// Paused without a daemon: stored, and the in-process engine obeys it.
	r = e.must(0, "pause", "pausable")
	if !strings.Contains(r.stdout, "pausable paused") || !strings.Contains(r.stdout, "not running") {
		t.Errorf("pause without a daemon:\n%s", r)
	}
	r = e.must(75, "fire", "pausable", "--wait")
	if !strings.Contains(r.stderr, "hookd resume pausable") {
		t.Errorf("refusal should say how to resume:\n%s", r)
	}
	e.must(0, "resume", "pausable")
	e.must(0, "fire", "pausable", "--wait")

	e.must(1, "fire", "nope")

	statuses := map[engine.Status]int{}
	for _, r := range e.listRuns("--limit", "1000") {
		statuses[r.Status]++
	}
	want := map[engine.Status]int{
		engine.StatusCompleted: 5, // ok, short (short-circuit), cool, cool --force, pausable
		engine.StatusSkipped:   2, // cooldown, paused
		engine.StatusFailed:    3, // nomodel twice, slow
	}
	for s, n := range want {
		if statuses[s] != n {
			t.Errorf("%d %s runs recorded, want %d (all: %v)", statuses[s], s, n, statuses)
		}
	}
	if len(statuses) != len(want) {
		t.Errorf("unexpected statuses recorded: %v", statuses)
	}
	for _, r := range e.listRuns("--status", "failed") {
		if r.Status != engine.StatusFailed {
			t.Errorf("--status failed listed %s %s", r.ID, r.Status)
		}
	}
}

// TestFireQueueGates fires through a daemon with one concurrency slot and
// a queue of one: a fire waits in the queue (exit 0, "queued:"), the next
// is dropped (exit 75, queue_full); a disabled hook is refused; a hook
// with overlap: queue keeps one pending rerun that later fires join.
func TestFireQueueGates(t *testing.T) {
	e := newEnv(t, "max_concurrent: 1\nqueue_size: 1\n", map[string]string{
		"busy.yaml":   fireHooks["busy.yaml"],
		"second.yaml": quickHook,
		"third.yaml":  quickHook,
		"off.yaml":    "enabled: false\n" + quickHook,
		"rerun.yaml": `overlap: queue
steps:
  - type: shell
    command: |
      echo $$ > rerun.pid
      i=0
      while [ ! -f release-rerun ] && [ "$i" -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
skip_llm: true
`,
	})
	e.serve()

	busy := runID(t, e.must(0, "fire", "busy"))
	r := e.must(0, "fire", "second")
	second := runID(t, r)
	if !strings.Contains(r.stderr, "queued:") || !strings.Contains(r.stderr, "max_concurrent 1") {
		t.Errorf("fire of a run that waits for a slot:\n%s", r)
	}
	r = e.must(75, "fire", "third")
	if !strings.Contains(r.stderr, "queue_full") {
		t.Errorf("fire with the queue full should name the gate:\n%s", r)
	}
	if runs := e.listRuns("third"); len(runs) != 1 || runs[0].Status != engine.StatusDropped {
		t.Errorf("third: want one dropped record, got %+v", runs)
	}
	r = e.must(75, "fire", "off")
	if !strings.Contains(r.stderr, "disabled") || !strings.Contains(r.stderr, "enabled: true") {
		t.Errorf("fire of a disabled hook:\n%s", r)
	}
	if line := listLine(t, e.must(0, "list"), "off"); !strings.Contains(line, "disabled") {
		t.Errorf("list line of a disabled hook: %q", line)
	}
	st := e.must(0, "status")
	if !regexp.MustCompile(`in flight: 1\n  busy +`+busy).MatchString(st.stdout) || !strings.Contains(st.stdout, "queued:    1 "+second) {
		t.Errorf("status:\n%s", st)
	}

	e.write("release", "")
	e.waitRun(busy, engine.StatusCompleted)
	e.waitRun(second, engine.StatusCompleted)

	first := runID(t, e.must(0, "fire", "rerun"))
	r = e.must(0, "fire", "rerun", "--event", `{"a":1,"b":"x"}`)
	pending := runID(t, r)
	if pending == first || !strings.Contains(r.stderr, "pending: waits for run "+first) {
		t.Errorf("fire while in flight with overlap: queue:\n%s", r)
	}
	r = e.must(0, "fire", "rerun", "--event", `{"b":"y","c":true}`)
	if got := runID(t, r); got != pending {
		t.Errorf("a later fire made run %s; want it coalesced into %s", got, pending)
	}
	e.write("release-rerun", "")
	e.waitRun(first, engine.StatusCompleted)
	run := e.waitRun(pending, engine.StatusCompleted)
	var ev map[string]any
	if err := json.Unmarshal(run.Event, &ev); err != nil || ev["a"] != float64(1) || ev["b"] != "y" || ev["c"] != true {
		t.Errorf("pending run payload %s (%v), want the merged payloads", run.Event, err)
	}
	if n := len(e.listRuns("rerun")); n != 2 {
		t.Errorf("%d runs of rerun, want 2", n)
	}
}

// TestFireInProcessInterrupted interrupts `hookd fire` running a hook in
// its own process: the run is cancelled, recorded so, and its step ends.
func TestFireInProcessInterrupted(t *testing.T) {
	e := newEnv(t, "", map[string]string{"busy.yaml": fireHooks["busy.yaml"]})
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	cmd := e.command(ctx, "fire", "busy", "--wait")
	var stdout, stderr logBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The run id is printed once the run is recorded, the pid once its
	// step runs.
	waitFor(t, "the busy step to start", func() bool {
		return pidIn(e, "busy.pid") > 0 && strings.HasSuffix(stdout.String(), "\n")
	}, func() string { return stderr.String() })
	id := strings.TrimSpace(stdout.String())
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit %d (%v) after SIGINT, want 1\nstdout:\n%s\nstderr:\n%s", code, err, &stdout, &stderr)
	}
	if !strings.Contains(stderr.String(), "cancelled") {
		t.Errorf("stderr should say the run was cancelled:\n%s", &stderr)
	}
	run := e.getRun(id)
	if run.Status != engine.StatusCancelled {
		t.Errorf("run %s: status %s (%s), want cancelled", id, run.Status, run.Reason)
	}
	if pid := pidIn(e, "busy.pid"); syscall.Kill(pid, 0) == nil {
		t.Errorf("the step process %d still runs after hookd fire ended", pid)
	}
	// The lock was released: the next fire runs.
	e.write("release", "")
	e.must(0, "fire", "busy", "--wait")
}

// TestFireConcurrent fires many hooks at once through a daemon with two
// concurrency slots while other commands read: every fire gets a run, and
// every run completes.
func TestFireConcurrent(t *testing.T) {
	const n = 16
	hooks := map[string]string{}
	for i := range n {
		hooks["h"+strconv.Itoa(i)+".yaml"] = quickHook
	}
	e := newEnv(t, "max_concurrent: 2\n", hooks)
	e.serve()

	var wg sync.WaitGroup
	results := make([]result, n+4)
	errs := make([]error, n+4)
	for i := range n + 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch {
			case i < n:
				results[i], errs[i] = e.exec("fire", "h"+strconv.Itoa(i), "--wait")
			case i%2 == 0:
				results[i], errs[i] = e.exec("runs", "--json")
			default:
				results[i], errs[i] = e.exec("list")
			}
		}()
	}
	wg.Wait()
	ids := map[string]bool{}
	for i, r := range results {
		if errs[i] != nil || r.code != 0 {
			t.Errorf("%v\n%s", errs[i], r)
			continue
		}
		if i < n {
			ids[runID(t, r)] = true
		}
	}
	runs := e.listRuns("--limit", "1000")
	if len(runs) != n {
		t.Errorf("%d runs recorded, want %d", len(runs), n)
	}
	for _, r := range runs {
		if !ids[r.ID] || r.Status != engine.StatusCompleted {
			t.Errorf("run %s of %s: %s (%s)", r.ID, r.Hook, r.Status, r.Reason)
		}
	}
}
