package server

import (
	"context"
	"net/http"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/internal/human"
	"github.com/hookd/hookd/store/postgres"
)

// ClusterNodes knows the nodes sharing a PostgreSQL database: this
// daemon's postgres.Member, which counts a node alive by the
// node.heartbeat_timeout of hookd.yaml, the same timeout after which the
// scheduler declares a silent node's runs interrupted.
type ClusterNodes interface {
	Nodes(ctx context.Context) ([]postgres.Node, error)
}

// NodesOf is the clusterNodes of a daemon: its member, nil when it is not
// a node of a cluster (SQLite).
func NodesOf(m *postgres.Member) ClusterNodes {
	if m == nil {
		return nil
	}
	return m
}

// clusterOf returns the nodes cn knows, nil when there is no cluster
// (cn nil: SQLite) or no node registered.
func clusterOf(ctx context.Context, cn ClusterNodes) (*api.ClusterReport, error) {
	if cn == nil {
		return nil, nil
	}
	nodes, err := cn.Nodes(ctx)
	if err != nil || len(nodes) == 0 {
		return nil, err
	}
	rep := &api.ClusterReport{Nodes: []api.NodeReport{}, DifferingHooks: []api.HookDrift{}}
	for _, n := range nodes {
		hooks := -1
		if n.Hooks != nil {
			hooks = len(n.Hooks)
		}
		if n.Scheduler {
			rep.Scheduler = n.Name
		}
		rep.Nodes = append(rep.Nodes, api.NodeReport{Name: n.Name, Alive: n.Alive, Scheduler: n.Scheduler, Running: n.Running,
			MaxConcurrent: n.MaxConcurrent, Heartbeat: n.Heartbeat, HeartbeatAge: human.Duration(n.HeartbeatAge.Truncate(time.Second)),
			Started: n.Started, Hooks: hooks})
	}
	for _, d := range postgres.DifferingHooks(nodes) {
		rep.DifferingHooks = append(rep.DifferingHooks, api.HookDrift{Hook: d.Hook, Versions: d.Versions})
	}
	return rep, nil
}

// nodes serves GET /v1/nodes: 404 when the database is not shared by
// nodes (SQLite).
func (a *Server) nodes(w http.ResponseWriter, r *http.Request) {
	if a.cluster == nil {
		writeJSON(w, http.StatusNotFound, api.Error{Error: "no nodes: this hookd's database is SQLite, of one node (see docs/cluster.md)"})
		return
	}
	rep, err := clusterOf(r.Context(), a.cluster)
	if err != nil {
		writeErr(w, err)
		return
	}
	if rep == nil {
		rep = &api.ClusterReport{Nodes: []api.NodeReport{}, DifferingHooks: []api.HookDrift{}}
	}
	writeJSON(w, http.StatusOK, rep)
}
