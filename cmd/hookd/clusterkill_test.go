package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/pgtest"
	"github.com/jackc/pgx/v5"
)

// clusterKillHooks: periodic hooks of every overlap policy and an event
// hook that re-runs what a kill interrupted.
var clusterKillHooks = map[string]string{
	"tick-skip.yaml": `trigger: {every: 1s}
overlap: skip
env_passthrough: [HOOKD_TEST_NODE]
steps:
  - type: shell
    command: 'echo "SLOT tick-skip {{run}} $HOOKD_TEST_NODE {{event.slot}}" >> %[1]s; sleep 1.3'
skip_llm: true
`,
	"tick-queue.yaml": `trigger: {every: 1s}
overlap: queue
env_passthrough: [HOOKD_TEST_NODE]
steps:
  - type: shell
    command: 'echo "SLOT tick-queue {{run}} $HOOKD_TEST_NODE {{event.slot}}" >> %[1]s; sleep 1.5'
skip_llm: true
`,
	"tick-cancel.yaml": `trigger: {every: 1s}
overlap: cancel_previous
env_passthrough: [HOOKD_TEST_NODE]
steps:
  - type: shell
    command: 'echo "SLOT tick-cancel {{run}} $HOOKD_TEST_NODE {{event.slot}}" >> %[1]s; sleep 1.3'
skip_llm: true
`,
	"tick-fast.yaml": `trigger: {every: 1s}
env_passthrough: [HOOKD_TEST_NODE]
steps:
  - type: shell
    command: 'echo "SLOT tick-fast {{run}} $HOOKD_TEST_NODE {{event.slot}}" >> %[1]s'
skip_llm: true
`,
	"events.yaml": `trigger: {event: crash.ev}
overlap: queue
on_interrupted: rerun
env_passthrough: [HOOKD_TEST_NODE]
steps:
  - type: shell
    command: 'echo "EVENT events {{run}} $HOOKD_TEST_NODE {{event}}" >> %[1]s; sleep 0.2'
skip_llm: true
`,
}

// clusterTimeout is node.heartbeat_timeout in the cluster tests; the
// failover bound (docs/cluster.md) is the timeout plus two heartbeat
// intervals (a fifth of it each).
const clusterTimeout = 2 * time.Second

func failoverBound(timeout time.Duration) time.Duration { return timeout + 2*timeout/5 }

// leaseWatch reads the scheduler lease's holder over one connection.
type leaseWatch struct{ conn *pgx.Conn }

func newLeaseWatch(t testing.TB, url string) *leaseWatch {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return &leaseWatch{conn}
}

// holder is the node holding an unexpired lease, "" when none does.
func (w *leaseWatch) holder() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var h string
	if err := w.conn.QueryRow(ctx, `SELECT holder FROM leases WHERE name = 'scheduler' AND expires_at > now()`).Scan(&h); err != nil {
		return ""
	}
	name, _, _ := strings.Cut(h, "/")
	return name
}

// waitOther waits until a node other than gone holds the lease, and
// returns it.
func (w *leaseWatch) waitOther(t testing.TB, gone string, logs func() string) string {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		if h := w.holder(); h != "" && h != gone {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("no node took the scheduler lease over from %s; logs:\n%s", gone, logs())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClusterKills runs three `hookd serve` on one PostgreSQL database
// and SIGKILLs the scheduler or a random node 20 times, restarting each,
// while periodic hooks of every overlap policy fire each second and
// events are posted to random live nodes. From the steps' side log: no
// slot ran in two runs, every accepted event reached a step (an event
// whose run and its one rerun were both interrupted is excused, as on a
// single daemon, but only when the database shows exactly that), no run
// is left running, and each failover took at most the documented bound.
func TestClusterKills(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts cluster nodes 20 times")
	}
	const kills = 20
	url := pgtest.NewDatabase(t)
	nodes, side := newCluster(t, url, 3, fmt.Sprintf("max_concurrent: 3, heartbeat_timeout: %s", clusterTimeout),
		"max_concurrent: 6\n", clusterKillHooks)
	logs := func() string { return clusterLogs(nodes) }
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	t.Logf("seed %d", seed)
	for _, n := range nodes {
		n.d = n.e.serve()
	}
	lease := newLeaseWatch(t, url)
	waitFor(t, "a scheduler", func() bool { return lease.holder() != "" }, logs)

	// Events go to a random live node; mu orders them with kills.
	var (
		mu       sync.Mutex
		accepted []int
		stop     = make(chan struct{})
		emitted  = make(chan struct{})
	)
	go func() {
		defer close(emitted)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(30+rng2(n)%70) * time.Millisecond):
			}
			mu.Lock()
			to := nodes[rng2(n*3+1)%len(nodes)]
			r, err := to.e.exec("emit", "crash.ev", fmt.Sprintf("e%d=1", n))
			if err == nil && r.code == 0 {
				accepted = append(accepted, n)
			}
			mu.Unlock()
		}
	}()

	var failovers []time.Duration
	for i := range kills {
		time.Sleep(time.Duration(300+rng.IntN(900)) * time.Millisecond)
		mu.Lock()
		lead := lease.holder()
		victim := nodes[rng.IntN(len(nodes))]
		if i%2 == 0 && lead != "" {
			victim = nodeNamed(nodes, lead)
		}
		victim.d.kill()
		if victim.name == lead {
			killed := time.Now()
			next := lease.waitOther(t, lead, logs)
			took := time.Since(killed)
			failovers = append(failovers, took)
			t.Logf("kill %d: scheduler %s; %s took over in %s", i+1, lead, next, took.Round(time.Millisecond))
		} else {
			t.Logf("kill %d: worker %s", i+1, victim.name)
		}
		// A node stopped by itself (it lost the lease) is restarted too.
		for _, n := range nodes {
			if n.d.exited() {
				n.d = n.e.serve()
			}
		}
		mu.Unlock()
	}
	close(stop)
	<-emitted

	// The last runs of the event hook and every posted event end.
	db := openPG(t, url)
	waitFor(t, "the event hook to be idle", func() bool {
		if pend, err := db.PendingEvents(context.Background(), 10); err != nil || len(pend) > 0 {
			return false
		}
		for _, r := range notFinal(t, db) {
			if r.Hook == "events" {
				return false
			}
		}
		return true
	}, logs)
	for _, n := range nodes {
		n.d.signal(syscall.SIGTERM)
	}
	for _, n := range nodes {
		n.d.wait()
	}
	for _, r := range notFinal(t, db) {
		if r.Status == engine.StatusRunning {
			t.Errorf("run %s of %s left running", r.ID, r.Hook)
		}
	}

	lines := readSide(t, side)
	slots := checkSlotsOnce(t, lines)
	seen := map[int]bool{}
	byNode := map[string]int{}
	eventKey := regexp.MustCompile(`\be(\d+)\b`)
	for _, l := range lines {
		byNode[l.node]++
		if l.kind != "EVENT" {
			continue
		}
		for _, m := range eventKey.FindAllStringSubmatch(l.key, -1) {
			n, _ := strconv.Atoi(m[1])
			seen[n] = true
		}
	}
	runs, err := db.ListRuns(context.Background(), engine.RunFilter{Hook: "events", Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	interruptedRerun := func(n int) bool {
		key := fmt.Sprintf(`"e%d"`, n)
		for _, r := range runs {
			if r.Status == engine.StatusInterrupted && r.Trigger == engine.TriggerRerun && strings.Contains(string(r.Event), key) {
				return true
			}
		}
		return false
	}
	lost, excused := 0, 0
	for _, n := range accepted {
		switch {
		case seen[n]:
		case interruptedRerun(n):
			excused++
		default:
			lost++
			t.Errorf("event e%d was accepted but no step saw it", n)
		}
	}
	bound := failoverBound(clusterTimeout)
	for _, d := range failovers {
		if d > bound {
			t.Errorf("a failover took %s, more than the documented bound %s", d, bound)
		}
	}
	slices.Sort(failovers)
	t.Logf("%d kills (%d of the scheduler, failovers %v), %d slots ran, %d events accepted (%d lost, %d excused), side lines by node %v",
		kills, len(failovers), failovers, slots, len(accepted), lost, excused, byNode)
	if slots < kills || len(accepted) < kills || len(failovers) < kills/2 {
		t.Errorf("too little happened to tell: %d slots ran, %d events accepted, %d failovers", slots, len(accepted), len(failovers))
	}
	if t.Failed() {
		t.Log(logs())
	}
}
