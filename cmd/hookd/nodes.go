package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/postgres"
)

// clusterNodes knows the nodes sharing a PostgreSQL database: this
// daemon's postgres.Member, which counts a node alive by the
// node.heartbeat_timeout of hookd.yaml, the same timeout after which the
// scheduler declares a silent node's runs interrupted.
type clusterNodes interface {
	Nodes(ctx context.Context) ([]postgres.Node, error)
}

// nodesOf is the clusterNodes of a daemon: its member, nil when it is not
// a node of a cluster (SQLite).
func nodesOf(m *postgres.Member) clusterNodes {
	if m == nil {
		return nil
	}
	return m
}

// clusterReport is the answer of GET /v1/nodes and "cluster" in
// /v1/status: the hookd nodes sharing the PostgreSQL database, which one
// schedules, and the hooks whose files differ between live nodes.
type clusterReport struct {
	Scheduler      string       `json:"scheduler"` // the node holding the scheduler lease; "" when none does
	Nodes          []nodeReport `json:"nodes"`
	DifferingHooks []hookDrift  `json:"differing_hooks"` // hooks whose versions differ between live nodes
}

// nodeReport is one node.
type nodeReport struct {
	Name          string    `json:"name"`
	Alive         bool      `json:"alive"`     // its latest heartbeat is within the timeout
	Scheduler     bool      `json:"scheduler"` // it holds the scheduler lease
	Running       int       `json:"running"`   // runs it holds running
	MaxConcurrent int       `json:"max_concurrent"`
	Heartbeat     time.Time `json:"heartbeat"`     // its latest, on the database's clock
	HeartbeatAge  string    `json:"heartbeat_age"` // how long ago, on the database's clock
	Started       time.Time `json:"started"`
	Hooks         int       `json:"hooks"` // hooks it loaded; -1 when it never reported them
}

// hookDrift is a hook whose version is not the same on every live node:
// node name to its version ("" when the node lacks the hook).
type hookDrift struct {
	Hook     string            `json:"hook"`
	Versions map[string]string `json:"versions"`
}

// clusterOf returns the nodes cn knows, nil when there is no cluster
// (cn nil: SQLite) or no node registered.
func clusterOf(ctx context.Context, cn clusterNodes) (*clusterReport, error) {
	if cn == nil {
		return nil, nil
	}
	nodes, err := cn.Nodes(ctx)
	if err != nil || len(nodes) == 0 {
		return nil, err
	}
	rep := &clusterReport{Nodes: []nodeReport{}, DifferingHooks: []hookDrift{}}
	for _, n := range nodes {
		hooks := -1
		if n.Hooks != nil {
			hooks = len(n.Hooks)
		}
		if n.Scheduler {
			rep.Scheduler = n.Name
		}
		rep.Nodes = append(rep.Nodes, nodeReport{Name: n.Name, Alive: n.Alive, Scheduler: n.Scheduler, Running: n.Running,
			MaxConcurrent: n.MaxConcurrent, Heartbeat: n.Heartbeat, HeartbeatAge: engine.ElapsedText(n.HeartbeatAge.Truncate(time.Second)),
			Started: n.Started, Hooks: hooks})
	}
	for _, d := range postgres.DifferingHooks(nodes) {
		rep.DifferingHooks = append(rep.DifferingHooks, hookDrift{Hook: d.Hook, Versions: d.Versions})
	}
	return rep, nil
}

// nodes serves GET /v1/nodes: 404 when the database is not shared by
// nodes (SQLite).
func (a *apiServer) nodes(w http.ResponseWriter, r *http.Request) {
	if a.cluster == nil {
		writeJSON(w, http.StatusNotFound, apiError{Error: "no nodes: this hookd's database is SQLite, of one node (see docs/cluster.md)"})
		return
	}
	rep, err := clusterOf(r.Context(), a.cluster)
	if err != nil {
		writeErr(w, err)
		return
	}
	if rep == nil {
		rep = &clusterReport{Nodes: []nodeReport{}, DifferingHooks: []hookDrift{}}
	}
	writeJSON(w, http.StatusOK, rep)
}

// printCluster prints the nodes of `hookd status`, and a loud warning
// when hook files differ between live nodes.
func printCluster(w io.Writer, c *clusterReport) {
	alive := 0
	for _, n := range c.Nodes {
		if n.Alive {
			alive++
		}
	}
	fmt.Fprintf(w, "\nnodes:     %d, %d alive; scheduler: %s\n", len(c.Nodes), alive, orDash(c.Scheduler))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NODE\tALIVE\tSCHEDULES\tRUNNING\tLOAD\tHEARTBEAT\tHOOKS")
	for _, n := range c.Nodes {
		load := "-"
		if n.MaxConcurrent > 0 {
			load = fmt.Sprintf("%d%%", n.Running*100/n.MaxConcurrent)
		}
		hooks := "-"
		if n.Hooks >= 0 {
			hooks = fmt.Sprint(n.Hooks)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d/%d\t%s\t%s ago\t%s\n", n.Name, yesNo(n.Alive), yesNo(n.Scheduler),
			n.Running, n.MaxConcurrent, load, n.HeartbeatAge, hooks)
	}
	tw.Flush()
	if len(c.DifferingHooks) == 0 {
		return
	}
	fmt.Fprintf(w, "\n!!! WARNING: HOOK FILES DIFFER BETWEEN LIVE NODES (%d %s) !!!\n", len(c.DifferingHooks),
		plural(len(c.DifferingHooks), "hook", "hooks"))
	for _, d := range c.DifferingHooks {
		var parts []string
		for _, node := range slices.Sorted(maps.Keys(d.Versions)) {
			v := d.Versions[node]
			if v == "" {
				v = "missing"
			}
			parts = append(parts, node+" "+v)
		}
		fmt.Fprintf(w, "!!!   %s: %s\n", d.Hook, strings.Join(parts, ", "))
	}
	fmt.Fprintln(w, "!!! a node runs a hook's runs only at the version of the hook that queued them: deploy the same hooks.d on every node")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
