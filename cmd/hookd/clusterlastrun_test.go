package main

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres/postgrestest"
)

// clusterLastRun writes the run's {{last_run_time}} (T= when empty).
const clusterLastRun = `env_passthrough: [HOOKD_TEST_NODE]
steps:
  - type: shell
    command: 'echo "EVENT last {{run}} $HOOKD_TEST_NODE T={{last_run_time}}" >> %[1]s'
skip_llm: true
`

// clusterBlock holds a node's one slot.
const clusterBlock = `steps:
  - type: shell
    command: 'sleep 120'
skip_llm: true
`

// TestClusterLastRunTime: {{last_run_time}} of a run is the hook's
// previous start whichever node executes it. n1 schedules, its one slot
// held by a hook only it has; n2 executes three fires of hook last one
// after another: the first has no previous run, each next one the start
// of the one before (it was empty on a node that does not schedule).
func TestClusterLastRunTime(t *testing.T) {
	ctx := context.Background()
	url := postgrestest.NewDatabase(t)
	nodes, side := newCluster(t, url, 2, "heartbeat_timeout: 2s, max_concurrent: 1", "grace: 1s\n",
		map[string]string{"last.yaml": clusterLastRun, "block.yaml": clusterBlock})
	n1, n2 := nodes[0], nodes[1]
	if err := os.Remove(n2.e.path("hooks.d/block.yaml")); err != nil {
		t.Fatal(err)
	}
	logs := func() string { return clusterLogs(nodes) }
	n1.d = n1.e.serve()
	lease := newLeaseWatch(t, url)
	waitFor(t, "n1 to schedule", func() bool { return lease.holder() == "n1" }, logs)
	n2.d = n2.e.serve()
	db := openPG(t, url)
	block := runID(t, n1.e.must(0, "fire", "block"))
	waitFor(t, "n1 to run the blocking hook", func() bool {
		r, err := db.GetRun(ctx, block)
		return err == nil && r.Status == engine.StatusRunning
	}, logs)

	var ids []string
	for range 3 {
		ids = append(ids, runID(t, n2.e.must(0, "fire", "--wait", "last")))
	}
	got := map[string]sideLine{}
	for _, l := range readSide(t, side) {
		got[l.run] = l
	}
	for i, id := range ids {
		l, ok := got[id]
		if !ok {
			t.Fatalf("run %s of last wrote nothing\n%s", id, logs())
		}
		if l.node != "n2" {
			t.Errorf("run %s ran on %s, want n2 (n1's one slot is held)", id, l.node)
		}
		last := strings.TrimPrefix(l.key, "T=")
		if i == 0 {
			if last != "" {
				t.Errorf("the first run's last_run_time is %q, want empty", last)
			}
			continue
		}
		prev, err := db.GetRun(ctx, ids[i-1])
		if err != nil {
			t.Fatal(err)
		}
		at, err := time.Parse(time.RFC3339, last)
		if err != nil {
			t.Errorf("run %s (on %s): last_run_time %q: %v", id, l.node, last, err)
			continue
		}
		// The scheduler's start of the previous run: it released it, n2
		// claimed it a moment later (recorded as its start).
		if d := prev.StartedAt.Sub(at); d < 0 || d > 5*time.Second {
			t.Errorf("run %s: last_run_time %s, the previous run started at %s", id, at, prev.StartedAt)
		}
	}
	for _, n := range nodes {
		n.d.signal(syscall.SIGTERM)
	}
	for _, n := range nodes {
		n.d.wait()
	}
}
