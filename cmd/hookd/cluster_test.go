package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
	"github.com/hookd/hookd/store/postgres/postgrestest"
	"github.com/jackc/pgx/v5"
)

// A cluster in these tests: real `hookd serve` processes, each in a
// directory of its own (its socket, its hookd.yaml naming it), sharing
// one PostgreSQL database and the same hooks. Steps append to one side
// log, naming the node they ran on (HOOKD_TEST_NODE), so that what ran
// is read from the steps themselves, not from the database.

type clusterNode struct {
	name string
	e    *env
	d    *served
	past []*logBuffer // the logs of its earlier processes, oldest first
}

// start starts the node's `hookd serve`, keeping the log of the process
// before it, if any.
func (n *clusterNode) start() {
	if n.d != nil {
		n.past = append(n.past, n.d.log)
	}
	n.d = n.e.serve()
}

// newCluster makes the directories of nodes n1..nN on url; nodeOpts are
// added to each node's node: and settings to its hookd.yaml. hooks may
// name the side log as %[1]s and a directory for file watches as %[2]s.
func newCluster(t *testing.T, url string, n int, nodeOpts, settings string, hooks map[string]string) ([]*clusterNode, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "hkside")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	side, watched := filepath.Join(dir, "side.log"), filepath.Join(dir, "watched")
	if err := os.Mkdir(watched, 0o755); err != nil {
		t.Fatal(err)
	}
	expanded := map[string]string{}
	for name, body := range hooks {
		// The side log lies outside every node's workdir: each hook
		// declares it writable.
		expanded[name] = "writes: ['" + dir + "']\n" + strings.ReplaceAll(strings.ReplaceAll(body, "%[1]s", side), "%[2]s", watched)
	}
	var nodes []*clusterNode
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("n%d", i)
		e := newEnv(t, fmt.Sprintf("database: %s\nnode: {name: %s, %s}\n%s", url, name, nodeOpts, settings), expanded)
		e.environ = append(e.environ, "HOOKD_TEST_NODE="+name)
		e.cmdsInProcess = true // the nodes' commands only talk to them
		nodes = append(nodes, &clusterNode{name: name, e: e})
	}
	return nodes, side
}

// leaseWatch reads the scheduler lease's row over one connection.
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

// leaseRow is the scheduler lease as one read saw it, with the database
// server's clock at that read (leases live on that clock).
type leaseRow struct {
	node    string // the holder's node name
	token   int64
	expires time.Time
	now     time.Time
}

func (l leaseRow) live() bool { return l.node != "" && l.expires.After(l.now) }

// row reads the lease; ok is false when there is none (or the read
// failed).
func (w *leaseWatch) row() (l leaseRow, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var h string
	if err := w.conn.QueryRow(ctx, `SELECT holder, token, expires_at, now() FROM leases WHERE name = 'scheduler'`).
		Scan(&h, &l.token, &l.expires, &l.now); err != nil {
		return leaseRow{}, false
	}
	l.node, _, _ = strings.Cut(h, "/")
	return l, true
}

// holder is the node holding an unexpired lease, "" when none does.
func (w *leaseWatch) holder() string {
	if l, ok := w.row(); ok && l.live() {
		return l.node
	}
	return ""
}

// waitOther waits until a node other than gone holds an unexpired lease,
// and returns the lease as first seen so.
func (w *leaseWatch) waitOther(t testing.TB, gone string, logs func() string) leaseRow {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		if l, ok := w.row(); ok && l.live() && l.node != gone {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("no node took the scheduler lease over from %s; logs:\n%s", gone, logs())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func nodeNamed(nodes []*clusterNode, name string) *clusterNode {
	for _, n := range nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

func clusterLogs(nodes []*clusterNode) string {
	var b strings.Builder
	for _, n := range nodes {
		for i, l := range n.past {
			fmt.Fprintf(&b, "--- node %s, process %d:\n%s\n", n.name, i+1, l)
		}
		if n.d != nil {
			fmt.Fprintf(&b, "--- node %s, process %d:\n%s\n", n.name, len(n.past)+1, n.d.log)
		}
	}
	return b.String()
}

// sideLine is one line a step appended: KIND hook run node key, where
// KIND is SLOT (key: the slot) or EVENT (key: the event's payload).
type sideLine struct {
	kind, hook, run, node, key string
}

func readSide(t *testing.T, path string) []sideLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []sideLine
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 || (f[0] != "SLOT" && f[0] != "EVENT") {
			t.Errorf("unexpected side log line %q", line)
			continue
		}
		out = append(out, sideLine{f[0], f[1], f[2], f[3], strings.Join(f[4:], " ")})
	}
	return out
}

// slotRuns returns the runs each slot of a hook ran in ("hook slot" ->
// run ids), from the side log's SLOT lines.
func slotRuns(lines []sideLine) map[string]map[string]bool {
	runs := map[string]map[string]bool{}
	for _, l := range lines {
		if l.kind != "SLOT" {
			continue
		}
		k := l.hook + " " + l.key
		if runs[k] == nil {
			runs[k] = map[string]bool{}
		}
		runs[k][l.run] = true
	}
	return runs
}

// checkSlotsOnce fails the test for a slot of a hook that ran in two
// runs, and returns how many slots ran.
func checkSlotsOnce(t *testing.T, lines []sideLine) int {
	t.Helper()
	for _, l := range lines {
		if l.kind == "SLOT" && !strings.Contains(l.key, "T") {
			t.Errorf("side log line without a slot: %+v", l)
		}
	}
	runs := slotRuns(lines)
	for k, ids := range runs {
		if len(ids) > 1 {
			t.Errorf("slot %s ran in %d runs: %v", k, len(ids), ids)
		}
	}
	return len(runs)
}

// openPG opens the database for the test's own reads.
func openPG(t testing.TB, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// notFinal returns the runs of the database that are queued or running.
func notFinal(t *testing.T, db *postgres.DB) []*engine.Run {
	t.Helper()
	runs, err := db.ListRuns(context.Background(), engine.RunFilter{Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	var out []*engine.Run
	for _, r := range runs {
		if !r.Status.Final() {
			out = append(out, r)
		}
	}
	return out
}

const clusterTwoHooks = `trigger: {every: 1s}
env_passthrough: [HOOKD_TEST_NODE]
steps:
  - type: shell
    command: 'echo "SLOT tick {{run}} $HOOKD_TEST_NODE {{event.slot}}" >> %[1]s; sleep 0.3'
skip_llm: true
`

// clusterWatchHook watches a directory every node sees.
const clusterWatchHook = `trigger:
  watch: {paths: ["%[2]s"], debounce: 100ms}
env_passthrough: [HOOKD_TEST_NODE]
steps:
  - type: shell
    command: 'echo "EVENT watch {{run}} $HOOKD_TEST_NODE {{trigger}}" >> %[1]s'
skip_llm: true
`

// workHook is an event hook whose step takes a second, so that runs
// released together outnumber one node's capacity for long enough.
func workHook(name string) string {
	return `trigger: {event: work.item}
overlap: queue
env_passthrough: [HOOKD_TEST_NODE]
steps:
  - type: shell
    command: 'echo "EVENT ` + name + ` {{run}} $HOOKD_TEST_NODE {{event.key}}" >> %[1]s; sleep 1'
skip_llm: true
`
}

// TestClusterTwoNodes: two `hookd serve` on one PostgreSQL database. One
// schedules; runs released together beyond one node's capacity run on
// both; an event posted to the node that does not schedule is stored,
// acknowledged and run once; SIGKILL of the scheduler hands scheduling to
// the other node, whose periodic hook goes on without firing a slot
// twice; the killed node comes back as a worker and its killed runs are
// interrupted, none left running. Both nodes watch one directory: a
// change fires one run, by the scheduler's watch, before and after the
// failover.
func TestClusterTwoNodes(t *testing.T) {
	url := postgrestest.NewDatabase(t)
	hooks := map[string]string{"tick.yaml": clusterTwoHooks, "watch.yaml": clusterWatchHook}
	for i := 1; i <= 4; i++ {
		hooks[fmt.Sprintf("w%d.yaml", i)] = workHook(fmt.Sprintf("w%d", i))
	}
	nodes, side := newCluster(t, url, 2, "max_concurrent: 2, heartbeat_timeout: 2s", "max_concurrent: 4\n", hooks)
	for _, n := range nodes {
		n.d = n.e.serve()
	}
	logs := func() string { return clusterLogs(nodes) }
	lease := newLeaseWatch(t, url)
	var lead *clusterNode
	waitFor(t, "a scheduler", func() bool { lead = nodeNamed(nodes, lease.holder()); return lead != nil }, logs)
	other := nodes[0]
	if other == lead {
		other = nodes[1]
	}
	// Events posted to the node that does not schedule: acknowledged once
	// stored, run once each; four at once are more than one node's two.
	for i := 1; i <= 2; i++ {
		r := other.e.must(0, "emit", "work.item", "key=k"+strconv.Itoa(i))
		if strings.Contains(r.stderr, "error") {
			t.Errorf("emit on the worker node:\n%s", r)
		}
	}
	db := openPG(t, url)
	events := func(lines []sideLine) map[string]map[string]bool { // key -> "hook run"
		out := map[string]map[string]bool{}
		for _, l := range lines {
			if l.kind == "EVENT" && l.hook != "watch" {
				if out[l.key] == nil {
					out[l.key] = map[string]bool{}
				}
				out[l.key][l.hook+" "+l.run] = true
			}
		}
		return out
	}
	waitFor(t, "8 event runs (2 events x 4 hooks)", func() bool {
		n := 0
		for _, runs := range events(readSide(t, side)) {
			n += len(runs)
		}
		return n >= 8
	}, logs)
	ranOn := map[string]int{}
	for _, l := range readSide(t, side) {
		if l.kind == "EVENT" && l.hook != "watch" {
			ranOn[l.node]++
		}
	}
	if ranOn["n1"] == 0 || ranOn["n2"] == 0 {
		t.Errorf("event runs by node: %v; want both nodes to run some (4 released at once, 2 per node)", ranOn)
	}
	waitFor(t, "3 slots of the periodic hook", func() bool { return checkSlotsOnce(t, readSide(t, side)) >= 3 }, logs)
	watchRuns := func() (n int) {
		for _, l := range readSide(t, side) {
			if l.hook == "watch" {
				n++
			}
		}
		return n
	}
	watched := filepath.Join(filepath.Dir(side), "watched")
	if err := os.WriteFile(filepath.Join(watched, "a.txt"), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the watch to fire", func() bool { return watchRuns() >= 1 }, logs)

	// SIGKILL the scheduler: the other node takes over within the lease.
	lead.d.kill()
	killed := time.Now()
	waitFor(t, "the other node to schedule", func() bool { return lease.holder() == other.name }, logs)
	t.Logf("failover took %s", time.Since(killed).Round(time.Millisecond))
	slots := checkSlotsOnce(t, readSide(t, side))
	waitFor(t, "the periodic hook to go on", func() bool { return len(slotRuns(readSide(t, side))) >= slots+2 }, logs)
	// The watch run the kill cut short counts as in flight (overlap: skip)
	// until the dead node misses its heartbeat_timeout and the run is
	// interrupted; a change before that is refused, as documented.
	waitFor(t, "the killed node's watch run to be interrupted", func() bool {
		for _, r := range notFinal(t, db) {
			if r.Status == engine.StatusRunning && r.Hook == "watch" {
				return false
			}
		}
		return true
	}, logs)
	if err := os.WriteFile(filepath.Join(watched, "b.txt"), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new scheduler's watch to fire", func() bool { return watchRuns() >= 2 }, logs)

	// The killed node comes back as a worker under the same name.
	lead.d = lead.e.serve()
	if got := lease.holder(); got != other.name {
		t.Errorf("scheduler after the restart: %q, want %s", got, other.name)
	}
	lead.e.must(0, "emit", "work.item", "key=k3")
	waitFor(t, "the event posted to the restarted node to run on every work hook", func() bool {
		return len(events(readSide(t, side))["k3"]) >= 4
	}, logs)

	for _, n := range nodes {
		n.d.signal(syscall.SIGTERM)
	}
	for _, n := range nodes {
		if code := n.d.wait(); code != 0 {
			t.Errorf("node %s exited %d after SIGTERM", n.name, code)
		}
	}
	// A slot the scheduler released just before the nodes stopped stays
	// queued for the next start (queued runs survive restarts); nothing
	// may be left running.
	for _, r := range notFinal(t, db) {
		if r.Status == engine.StatusRunning {
			t.Errorf("run %s of %s left running", r.ID, r.Hook)
		}
	}
	checkSlotsOnce(t, readSide(t, side))
	if n := watchRuns(); n != 2 {
		t.Errorf("%d watch runs for 2 changes of the watched directory, want 2 (the scheduler's watch only)", n)
	}
	for key, runs := range events(readSide(t, side)) {
		if len(runs) != 4 {
			t.Errorf("event %s ran %d times, want once on each of 4 hooks: %v", key, len(runs), runs)
		}
	}
	if t.Failed() || os.Getenv("HOOKD_TEST_LOGS") != "" {
		t.Log(logs())
	}
}
