package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
	"github.com/hookd/hookd/store/postgres/postgrestest"
	"github.com/jackc/pgx/v5"
)

// TestStatusShowsNodes: on PostgreSQL, hookd status and GET /v1/nodes
// show the nodes sharing the database (alive or silent, the scheduler,
// running runs against capacity, heartbeat age) and warn loudly about
// hooks whose files differ between live nodes; a silent node's hooks do
// not count. On SQLite status shows no nodes and /v1/nodes is 404.
func TestStatusShowsNodes(t *testing.T) {
	ctx := context.Background()
	url := postgrestest.NewDatabase(t)
	// The daemon is node-b, the scheduler (it holds the lease); the
	// test's report of node-b's hooks replaces the daemon's own.
	e := newEnv(t, "database: "+url+"\nmax_concurrent: 8\nnode: {name: node-b}\n", map[string]string{"quick.yaml": quickHook})
	e.serve()
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, n := range []struct {
		name  string
		hooks map[string]string
	}{
		{"node-a", map[string]string{"build": "aaaa11112222", "triage": "t1"}},
		{"node-b", map[string]string{"build": "bbbb33334444", "triage": "t1", "deploy": "d1"}},
		{"node-gone", map[string]string{"build": "cccc55556666"}},
	} {
		if err := db.Heartbeat(ctx, n.name, 8, ""); err != nil {
			t.Fatal(err)
		}
		if err := db.ReportHookVersions(ctx, n.name, n.hooks); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE nodes SET heartbeat_at = now() - interval '1 hour' WHERE name = 'node-gone'`); err != nil {
		t.Fatal(err)
	}

	out := e.must(0, "status").stdout
	t.Logf("hookd status:\n%s", out)
	for _, want := range []string{
		"nodes:     3, 2 alive; scheduler: node-b",
		"!!! WARNING: HOOK FILES DIFFER BETWEEN LIVE NODES (2 hooks) !!!",
		"!!!   build: node-a aaaa11112222, node-b bbbb33334444",
		"!!!   deploy: node-a missing, node-b d1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("hookd status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "cccc55556666") || strings.Contains(out, "triage:") {
		t.Errorf("the warning names a silent node's hook or a hook the same everywhere:\n%s", out)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "node-") {
			lines = append(lines, strings.Join(f, " "))
		}
	}
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "node-a yes no 0/8 0% ") ||
		!strings.HasPrefix(lines[1], "node-b yes yes 0/8 0% ") || !strings.HasPrefix(lines[2], "node-gone no no 0/8 0% 1h") {
		t.Errorf("node lines:\n%s", strings.Join(lines, "\n"))
	}

	var rep api.ClusterReport
	e.socketClient().json("GET", "/v1/nodes", nil, 200, &rep)
	if rep.Scheduler != "node-b" || len(rep.Nodes) != 3 || len(rep.DifferingHooks) != 2 ||
		rep.DifferingHooks[0].Hook != "build" || rep.DifferingHooks[0].Versions["node-b"] != "bbbb33334444" ||
		rep.Nodes[2].Alive || rep.Nodes[0].Hooks != 2 || rep.Nodes[0].MaxConcurrent != 8 {
		t.Errorf("GET /v1/nodes: %+v", rep)
	}
	c := e.socketClient()
	c.base = "http://localhost"
	code, body := c.call("GET", "/", nil)
	page := string(body)
	if code != 200 || !strings.Contains(page, `id="nodes"`) || !strings.Contains(page, `id="node-node-gone"`) ||
		!strings.Contains(page, "Hook files differ between live nodes") || !strings.Contains(page, "node-a missing") {
		t.Errorf("the dashboard's overview does not show the nodes and the differing hooks: %d\n%s", code, page)
	}
	var st struct {
		Cluster *api.ClusterReport `json:"cluster"`
	}
	if err := json.Unmarshal([]byte(e.must(0, "status", "--json").stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.Cluster == nil || len(st.Cluster.Nodes) != 3 {
		t.Errorf("status --json cluster: %+v", st.Cluster)
	}

	// SQLite: nothing new.
	s := newEnv(t, "", map[string]string{"quick.yaml": quickHook})
	s.serve()
	if out := s.must(0, "status").stdout; strings.Contains(out, "nodes:") {
		t.Errorf("status on SQLite shows nodes:\n%s", out)
	}
	if out := s.must(0, "status", "--json").stdout; strings.Contains(out, `"cluster"`) {
		t.Errorf("status --json on SQLite has a cluster:\n%s", out)
	}
	if code, _ := s.socketClient().call("GET", "/v1/nodes", nil); code != 404 {
		t.Errorf("GET /v1/nodes on SQLite: %d, want 404", code)
	}
	sc := s.socketClient()
	sc.base = "http://localhost"
	if code, body := sc.call("GET", "/", nil); code != 200 || strings.Contains(string(body), `id="nodes"`) {
		t.Errorf("the overview on SQLite: %d, shows nodes: %v", code, strings.Contains(string(body), `id="nodes"`))
	}
}

// TestNodesAliveByHeartbeatTimeout: status, GET /v1/nodes and the
// scheduler's expiry of a silent node's runs all go by the one
// node.heartbeat_timeout of hookd.yaml: a node silent for 12s is alive
// with a 20s timeout (status shows it, its run keeps running), and once
// silent beyond the timeout it is shown dead and its run is interrupted.
func TestNodesAliveByHeartbeatTimeout(t *testing.T) {
	ctx := context.Background()
	url := postgrestest.NewDatabase(t)
	e := newEnv(t, "database: "+url+"\nnode: {name: node-s, heartbeat_timeout: 20s}\n", map[string]string{"quick.yaml": quickHook})
	e.serve()
	db := openPG(t, url)
	// node-w holds a run of a hook node-s does not have (so only node-w
	// claims it).
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.Heartbeat(ctx, "node-w", 4, ""))
	must(db.InsertRun(ctx, &engine.Run{ID: "far1", Hook: "elsewhere", Trigger: "manual", Status: engine.StatusQueued, QueuedAt: time.Now()}))
	conn, err := pgx.Connect(ctx, url)
	must(err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `UPDATE runs SET claimable = true WHERE id = 'far1'`)
	must(err)
	claimed, err := db.ClaimRuns(ctx, "node-w", 1)
	must(err)
	if len(claimed) != 1 {
		t.Fatalf("node-w claimed %d runs", len(claimed))
	}
	silentFor := func(d time.Duration) {
		t.Helper()
		_, err := conn.Exec(ctx, `UPDATE nodes SET heartbeat_at = now() - $1 * interval '1 second' WHERE name = 'node-w'`, d.Seconds())
		must(err)
	}
	nodeW := func() api.NodeReport {
		t.Helper()
		var rep api.ClusterReport
		e.socketClient().json("GET", "/v1/nodes", nil, 200, &rep)
		for _, n := range rep.Nodes {
			if n.Name == "node-w" {
				return n
			}
		}
		t.Fatalf("GET /v1/nodes lacks node-w: %+v", rep)
		return api.NodeReport{}
	}

	silentFor(12 * time.Second)
	if n := nodeW(); !n.Alive || n.Running != 1 {
		t.Errorf("node-w silent for 12s with a 20s timeout: %+v, want alive with its run", n)
	}
	if out := e.must(0, "status").stdout; !strings.Contains(out, "nodes:     2, 2 alive; scheduler: node-s") {
		t.Errorf("hookd status with node-w silent for 12s of 20s:\n%s", out)
	}
	if r, err := db.GetRun(ctx, "far1"); err != nil || r.Status != engine.StatusRunning {
		t.Errorf("node-w's run within the timeout: %+v %v, want running", r, err)
	}

	silentFor(time.Minute)
	if n := nodeW(); n.Alive {
		t.Errorf("node-w silent for a minute with a 20s timeout: %+v, want dead", n)
	}
	waitFor(t, "the scheduler interrupts node-w's run", func() bool {
		r, err := db.GetRun(ctx, "far1")
		return err == nil && r.Status == engine.StatusInterrupted && r.Reason == postgres.InterruptedByTimeout
	}, func() string { r, err := db.GetRun(ctx, "far1"); return fmt.Sprintf("%+v %v", r, err) })
}
