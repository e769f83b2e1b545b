package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres/postgrestest"
	"github.com/jackc/pgx/v5"
)

// Hooks fired by hand on the node that does not schedule.
const (
	clusterFireOK = `env_passthrough: [HOOKD_TEST_NODE]
steps:
  - type: shell
    command: 'echo "EVENT ok {{run}} $HOOKD_TEST_NODE {{trigger}}" >> %[1]s; sleep 0.5'
skip_llm: true
`
	clusterFireBad = `steps:
  - type: shell
    command: 'exit 3'
skip_llm: true
`
	clusterFireCool = `cooldown: 1h
env_passthrough: [HOOKD_TEST_NODE]
steps:
  - type: shell
    command: 'echo "EVENT cool {{run}} $HOOKD_TEST_NODE {{trigger}}" >> %[1]s'
skip_llm: true
`
)

// TestClusterFireOnWorker: hookd fire, fire --wait, pause and resume on
// the node that does not schedule work as on a single daemon: the fire is
// stored, decided once by the scheduler and answered with its run;
// --wait follows the run (executed by either node) to its end and exits
// 0 when it completed, 1 when it failed; a gate's refusal exits 75
// naming the gate. A pause made on the worker stops the scheduler's
// slots of the hook (recorded skipped, paused) and shows in both nodes'
// lists; a resume there starts them again.
func TestClusterFireOnWorker(t *testing.T) {
	ctx := context.Background()
	url := postgrestest.NewDatabase(t)
	hooks := map[string]string{"tick.yaml": clusterTwoHooks, "ok.yaml": clusterFireOK, "bad.yaml": clusterFireBad,
		"cool.yaml": clusterFireCool}
	nodes, side := newCluster(t, url, 2, "heartbeat_timeout: 2s", "", hooks)
	for _, n := range nodes {
		n.d = n.e.serve()
	}
	logs := func() string { return clusterLogs(nodes) }
	lease := newLeaseWatch(t, url)
	var lead *clusterNode
	waitFor(t, "a scheduler", func() bool { lead = nodeNamed(nodes, lease.holder()); return lead != nil }, logs)
	worker := nodes[0]
	if worker == lead {
		worker = nodes[1]
	}
	db := openPG(t, url)

	// fire --wait on the worker: the run completes (on either node), once.
	r := worker.e.run("fire", "--wait", "ok")
	if r.code != 0 {
		t.Fatalf("fire --wait ok on the worker: %s\n%s", r, logs())
	}
	id := runID(t, r)
	ran := 0
	for _, l := range readSide(t, side) {
		if l.hook == "ok" {
			ran++
			if l.run != id || l.key != "manual" {
				t.Errorf("side log line %+v, want run %s, manual", l, id)
			}
		}
	}
	if ran != 1 {
		t.Errorf("the fired hook's step ran %d times, want once", ran)
	}
	if got, err := db.GetRun(ctx, id); err != nil || got.Status != engine.StatusCompleted || got.Trigger != "manual" {
		t.Errorf("the fired run in the database: %+v %v", got, err)
	}

	// A failing run: --wait exits 1.
	if r := worker.e.run("fire", "--wait", "bad"); r.code != 1 || !strings.Contains(r.stderr, "bad failed") {
		t.Errorf("fire --wait bad on the worker: exit %d, want 1:\n%s", r.code, r)
	}
	// Without --wait: the run id at once, and the run goes on to its end.
	r = worker.e.must(0, "fire", "ok")
	waitFor(t, "the run fired without --wait to complete", func() bool {
		got, err := db.GetRun(ctx, runID(t, r))
		return err == nil && got.Status == engine.StatusCompleted
	}, logs)

	// A gate's refusal: exit 75, naming the gate.
	worker.e.must(0, "fire", "--wait", "cool")
	if r := worker.e.run("fire", "cool"); r.code != exitRefused || !strings.Contains(r.stderr, "cooldown") {
		t.Errorf("second fire of a hook in cooldown on the worker: exit %d, want %d naming the cooldown:\n%s", r.code, exitRefused, r)
	}
	if r := worker.e.run("fire", "nosuch"); r.code == 0 || !strings.Contains(r.stderr, "no hook named") {
		t.Errorf("fire of an unknown hook on the worker:\n%s", r)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var answered int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM fires WHERE answer IS NOT NULL`).Scan(&answered); err != nil {
		t.Fatal(err)
	}
	if answered != 5 {
		t.Errorf("%d fire requests answered, want the 5 fires of known hooks made on the worker", answered)
	}

	// Pause on the worker: the scheduler refuses the hook's slots (a
	// skipped run, paused) and starts none of them.
	worker.e.must(0, "pause", "tick")
	var pausedAt time.Time
	waitFor(t, "the scheduler to refuse a slot of the paused hook", func() bool {
		runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "tick", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.Status == engine.StatusSkipped && r.Gate == engine.GatePaused {
				pausedAt = r.QueuedAt
				return true
			}
		}
		return false
	}, logs)
	for _, n := range []*clusterNode{worker, lead} {
		if !listPaused(t, n, "tick") {
			t.Errorf("hookd list on node %s does not show tick paused", n.name)
		}
	}
	slotsPaused := checkSlotsOnce(t, readSide(t, side))
	runs, err := db.ListRuns(ctx, engine.RunFilter{Hook: "tick", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if !r.StartedAt.IsZero() && r.StartedAt.After(pausedAt) {
			t.Errorf("run %s of the paused hook started at %s, after a slot was refused paused at %s", r.ID, r.StartedAt, pausedAt)
		}
	}

	// Resume on the worker: the slots run again.
	worker.e.must(0, "resume", "tick")
	waitFor(t, "the resumed hook's slots to run again", func() bool { return checkSlotsOnce(t, readSide(t, side)) >= slotsPaused+2 }, logs)
	for _, n := range []*clusterNode{worker, lead} {
		if listPaused(t, n, "tick") {
			t.Errorf("hookd list on node %s shows tick paused after the resume", n.name)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Log(logs())
	}
}

// listPaused reports whether `hookd list --json` on node n shows hook
// paused.
func listPaused(t *testing.T, n *clusterNode, hook string) bool {
	t.Helper()
	var hooks []engine.HookStatus
	if err := json.Unmarshal([]byte(n.e.must(0, "list", "--json").stdout), &hooks); err != nil {
		t.Fatal(err)
	}
	for _, h := range hooks {
		if h.Name == hook {
			return h.Paused
		}
	}
	t.Fatalf("hookd list on %s lacks %s", n.name, hook)
	return false
}
