package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/store/postgres/postgrestest"
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

// checkTakeover checks, on the database's clock, a failover from the
// lease old (read after its holder was killed, or just before when the
// lease had moved by the read after) to next (another node's, as first
// seen): the dead holder's lease ran at most timeout past its last
// renewal, made before the read; the new holder took it with a
// greater fencing token, and within the documented bound of the read
// (the killed process's node lock goes with it, so the others take the
// lease over without waiting for it to run out; the bound, the timeout
// plus two heartbeat intervals, is what holds where they cannot tell).
// It returns how long after the read the lease was taken.
//
// How soon the lease moves is not asserted: on a loaded machine it is
// mostly how soon the processes get a CPU (BenchmarkClusterFailover
// measures it); the bound is slack for that.
func checkTakeover(t *testing.T, old, next leaseRow, timeout time.Duration) time.Duration {
	t.Helper()
	if old.expires.After(old.now.Add(timeout)) {
		t.Errorf("the lease of killed %s ran until %s, more than heartbeat_timeout %s after %s (read after the kill)",
			old.node, old.expires.Format(time.StampMicro), timeout, old.now.Format(time.StampMicro))
	}
	taken := next.expires.Add(-timeout) // taken or last renewed by next.node: an upper bound of the takeover
	if next.token <= old.token {
		t.Errorf("%s took the lease of killed %s with token %d, not above its %d", next.node, old.node, next.token, old.token)
	}
	lag := taken.Sub(old.now)
	if bound := failoverBound(timeout); lag > bound {
		t.Errorf("%s took the lease %s after the kill, more than %s (a heartbeat interval is %s)", next.node, lag, bound, timeout/5)
	}
	return max(lag, 0)
}

// TestClusterKills runs three `hookd serve` on one PostgreSQL database
// and SIGKILLs the scheduler or a random node 20 times (6 without
// HOOKD_TEST_LONG=1), restarting each,
// while periodic hooks of every overlap policy fire each second and
// events are posted to random live nodes. From the steps' side log: no
// slot ran in two runs, every accepted event reached a step (an event
// whose run and its one rerun were both interrupted is excused, as on a
// single daemon, but only when the database shows exactly that), no run
// is left running; and from the lease, on the database's clock, each
// failover is what the documented bound rests on (checkTakeover).
func TestClusterKills(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts cluster nodes 20 times")
	}
	kills := testtool.Count(6, 20)
	url := postgrestest.NewDatabase(t)
	nodes, side := newCluster(t, url, 3, fmt.Sprintf("max_concurrent: 3, heartbeat_timeout: %s", clusterTimeout),
		"max_concurrent: 6\n", clusterKillHooks)
	logs := func() string { return clusterLogs(nodes) }
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	t.Logf("seed %d", seed)
	for _, n := range nodes {
		n.start()
	}
	lease := newLeaseWatch(t, url)
	waitFor(t, "a scheduler", func() bool { return lease.holder() != "" }, logs)

	// Events go to a random node; em.mu orders them with kills.
	em := startEmitter(func(n int) (result, error) {
		return nodes[rng2(n*3+1)%len(nodes)].e.exec("emit", "crash.ev", fmt.Sprintf("e%d=1", n))
	})

	var failovers, lags []time.Duration
	for i := range kills {
		time.Sleep(time.Duration(300+rng.IntN(900)) * time.Millisecond)
		em.mu.Lock()
		victim := nodes[rng.IntN(len(nodes))]
		lead := lease.holder()
		if i%2 == 0 {
			// Every other kill is the scheduler's: wait for one (on a
			// loaded machine the lease can be between holders).
			waitFor(t, "a scheduler", func() bool { lead = lease.holder(); return lead != "" }, logs)
			victim = nodeNamed(nodes, lead)
		}
		before, _ := lease.row()
		killed := time.Now()
		victim.d.kill()
		old, ok := lease.row()
		switch {
		case victim.name != lead:
			t.Logf("kill %d: worker %s", i+1, victim.name)
		case ok && old.node == lead:
			next := lease.waitOther(t, lead, logs)
			took := time.Since(killed)
			lag := checkTakeover(t, old, next, clusterTimeout)
			failovers, lags = append(failovers, took), append(lags, lag)
			t.Logf("kill %d: scheduler %s; %s took over in %s (%s on the database's clock)",
				i+1, lead, next.node, took.Round(time.Millisecond), lag.Round(time.Millisecond))
		case ok && before.node == lead && old.live() && old.token != before.token:
			// Another node took the lease over between the kill and the
			// read after it (the killed node's lock went with it): the
			// lease as read just before the kill is the dead holder's.
			took := time.Since(killed)
			lag := checkTakeover(t, before, old, clusterTimeout)
			failovers, lags = append(failovers, took), append(lags, lag)
			t.Logf("kill %d: scheduler %s; %s had taken over when read, %s after the kill (%s on the database's clock)",
				i+1, lead, old.node, took.Round(time.Millisecond), lag.Round(time.Millisecond))
		default:
			// The lease ran out before the kill and another node has it.
			t.Logf("kill %d: scheduler %s, whose lease had already gone to %q", i+1, lead, old.node)
		}
		// A node stopped by itself (it lost the lease) is restarted too.
		for _, n := range nodes {
			if n.d.exited() {
				n.start()
			}
		}
		em.mu.Unlock()
	}
	// Enough happened to tell: events accepted and slots run (a loaded
	// machine runs fewer of both in the same time).
	waitFor(t, "enough accepted events and slots", func() bool {
		return em.count() >= kills && len(slotRuns(readSide(t, side))) >= kills
	}, logs)
	accepted := em.end()

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
		// A node may have stopped by itself since (it lost the lease).
		_ = n.d.cmd.Process.Signal(syscall.SIGTERM)
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
	lost, excused := checkReached(t, accepted, seen, runs)
	if lost > 0 {
		t.Logf("what the database holds of the events and the event hook's runs:\n%s", eventHistory(t, url))
	}
	slices.Sort(failovers)
	slices.Sort(lags)
	t.Logf("%d kills (%d of the scheduler, failovers %v, taken %v after the kill on the database's clock), %d slots ran, %d events accepted (%d lost, %d excused), side lines by node %v",
		kills, len(failovers), failovers, lags, slots, len(accepted), lost, excused, byNode)
	if slots < kills || len(accepted) < kills || len(failovers) < kills/4 {
		t.Errorf("too little happened to tell: %d slots ran, %d events accepted, %d failovers seen of the %d kills of the scheduler",
			slots, len(accepted), len(failovers), kills/2)
	}
	if t.Failed() {
		t.Log(logs())
	}
}

// eventHistory is what the database holds of the events crash.ev, the
// hooks each reached, and the runs of hook events, one line each, in the
// order they were stored.
func eventHistory(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Sprintf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var b strings.Builder
	ms := func(v *int64) string {
		if v == nil {
			return "-"
		}
		return time.Unix(0, *v).UTC().Format("15:04:05.000")
	}
	rows, err := conn.Query(ctx, `SELECT seq, id, data, source, time, dispatched, coalesce(fate, '') FROM events
		WHERE type = 'crash.ev' ORDER BY seq`)
	if err != nil {
		return fmt.Sprintf("events: %v", err)
	}
	b.WriteString("events (seq id data source time dispatched fate):\n")
	for rows.Next() {
		var (
			seq              int64
			id, data, source string
			at               *int64
			dispatched       bool
			fate             string
		)
		if err := rows.Scan(&seq, &id, &data, &source, &at, &dispatched, &fate); err != nil {
			return fmt.Sprintf("events: %v", err)
		}
		fmt.Fprintf(&b, "  %d %s %s %q %s dispatched=%t fate=%s\n", seq, id, data, source, ms(at), dispatched, fate)
	}
	rows.Close()
	rows, err = conn.Query(ctx, `SELECT seq, hook, run_id FROM event_dispatches ORDER BY seq, hook`)
	if err != nil {
		return fmt.Sprintf("event_dispatches: %v", err)
	}
	b.WriteString("event_dispatches (seq hook run):\n")
	for rows.Next() {
		var (
			seq       int64
			hook, run string
		)
		if err := rows.Scan(&seq, &hook, &run); err != nil {
			return fmt.Sprintf("event_dispatches: %v", err)
		}
		fmt.Fprintf(&b, "  %d %s %s\n", seq, hook, run)
	}
	rows.Close()
	rows, err = conn.Query(ctx, `SELECT seq, id, "trigger", status, coalesce(node, ''), claimable, queued_at, started_at, finished_at,
			reason, coalesce(event, '') FROM runs WHERE hook = 'events' ORDER BY seq`)
	if err != nil {
		return fmt.Sprintf("runs: %v", err)
	}
	b.WriteString("runs of events (seq id trigger status node claimable queued started finished reason event):\n")
	for rows.Next() {
		var (
			seq                               int64
			id, trigger, status, node, reason string
			event                             string
			claimable                         bool
			queued, started, finished         *int64
		)
		if err := rows.Scan(&seq, &id, &trigger, &status, &node, &claimable, &queued, &started, &finished, &reason, &event); err != nil {
			return fmt.Sprintf("runs: %v", err)
		}
		fmt.Fprintf(&b, "  %d %s %s %s %s claimable=%t %s %s %s %q %s\n", seq, id, trigger, status, node, claimable,
			ms(queued), ms(started), ms(finished), reason, event)
	}
	rows.Close()
	return b.String()
}
