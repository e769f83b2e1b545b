package server

import (
	"cmp"
	"context"
	"maps"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/dashboard"
	"github.com/hookd/hookd/engine"
)

// dashSource is what the dashboard reads and does.
type dashSource struct {
	eng   *engine.Engine
	db    engine.Store
	grace time.Duration
	nodes ClusterNodes // nil on SQLite
}

func (s dashSource) Hooks(ctx context.Context) ([]engine.HookStatus, error) { return s.eng.Hooks(ctx) }

func (s dashSource) Summary(ctx context.Context) (engine.Summary, error) { return s.eng.Summary(ctx) }

func (s dashSource) Overdue(ctx context.Context) ([]string, error) {
	return s.eng.Overdue(ctx, s.grace)
}

func (s dashSource) Fire(ctx context.Context, hook string, opt engine.FireOptions) (*engine.Run, error) {
	return s.eng.Fire(ctx, hook, opt)
}

func (s dashSource) SetPaused(ctx context.Context, hook string, paused bool) error {
	return s.eng.SetPaused(ctx, hook, paused)
}

func (s dashSource) ListRuns(ctx context.Context, f engine.RunFilter) ([]*engine.Run, error) {
	return s.db.ListRuns(ctx, f)
}

func (s dashSource) GetRun(ctx context.Context, id string) (*engine.Run, error) {
	return s.db.GetRun(ctx, id)
}

func (s dashSource) Progress(ctx context.Context, runID string) (engine.RunProgress, bool, error) {
	return s.eng.Progress(ctx, runID)
}

func (s dashSource) LatestBriefs(ctx context.Context, hook string, n int) ([]engine.RunBrief, error) {
	return s.db.LatestBriefs(ctx, hook, n)
}

func (s dashSource) BriefsSince(ctx context.Context, since time.Time, limit int) ([]engine.RunBrief, error) {
	return s.db.BriefsSince(ctx, since, limit)
}

func (s dashSource) DatabaseBytes(ctx context.Context) (int64, error) {
	size, err := s.db.Size(ctx)
	return size.Bytes + size.WALBytes, err
}

// Nodes lists the nodes sharing a PostgreSQL database for the overview,
// with the hooks whose files differ between live nodes; a daemon of one
// node (SQLite) has no cluster and answers none.
func (s dashSource) Nodes(ctx context.Context) ([]dashboard.Node, []dashboard.HookDrift, error) {
	if s.nodes == nil {
		return nil, nil, nil // one node: no cluster
	}
	rep, err := clusterOf(ctx, s.nodes)
	if err != nil || rep == nil {
		return nil, nil, err
	}
	nodes := make([]dashboard.Node, len(rep.Nodes))
	for i, n := range rep.Nodes {
		nodes[i] = dashboard.Node{Name: n.Name, Alive: n.Alive, Scheduler: n.Scheduler, Running: n.Running,
			MaxConcurrent: n.MaxConcurrent, HeartbeatAge: n.HeartbeatAge}
	}
	var drift []dashboard.HookDrift
	for _, d := range rep.DifferingHooks {
		dd := dashboard.HookDrift{Hook: d.Hook}
		for _, node := range slices.Sorted(maps.Keys(d.Versions)) {
			dd.Versions = append(dd.Versions, node+" "+cmp.Or(d.Versions[node], "missing"))
		}
		drift = append(drift, dd)
	}
	return nodes, drift, nil
}

// newDashboards returns the dashboard of the unix socket and, when the
// daemon listens on TCP (token set), the one of the TCP listener.
func newDashboards(src dashboard.Source, token string, hosts []string, clk clock.Clock, a *Server) error {
	var err error
	if a.dash, err = dashboard.New(dashboard.Options{Source: src, Log: a.log, Clock: clk}); err != nil {
		return err
	}
	if token != "" {
		if a.tcpDash, err = dashboard.New(dashboard.Options{Source: src, Login: true, Token: token, Hosts: hosts, Log: a.log,
			Logins: a.tokenLimiter(), Clock: clk}); err != nil {
			return err
		}
	}
	return nil
}

// tcpHandler is the TCP listener's handler: the dashboard's pages, and
// the API behind the bearer token. The event stream and a run's live
// output also answer a logged-in browser of the dashboard (EventSource
// sends no header but the session cookie), for as long as its session
// lasts.
func (a *Server) tcpHandler(token string) http.Handler {
	api := requireToken(token, a.tokenLimiter(), a.log, a.handler(nil))
	if a.tcpDash == nil {
		return api
	}
	mux := http.NewServeMux()
	a.tcpDash.Register(mux)
	mux.Handle("/", api)
	cookie := func(h func(http.ResponseWriter, *http.Request, *dashboard.StreamSession)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "" {
				if sess := a.tcpDash.StreamSession(r); sess != nil {
					h(w, r, sess)
					return
				}
			}
			api.ServeHTTP(w, r)
		}
	}
	mux.HandleFunc("GET /v1/stream", cookie(a.stream))
	mux.HandleFunc("GET /v1/runs/{id}/output", cookie(a.output))
	return mux
}

// uiLoginTTL is how long a one-time login link is good for (the
// dashboard's codeTTL).
const uiLoginTTL = 5 * time.Minute

// uiLogin serves POST /v1/ui/login: a one-time login link to the
// dashboard on the TCP listener.
func (a *Server) uiLogin(w http.ResponseWriter, r *http.Request) {
	addr := a.tcpAddr.Load()
	if a.tcpDash == nil || addr == nil {
		writeJSON(w, http.StatusConflict, api.Error{Error: "the dashboard is served on the TCP listener, and hookd does not listen on TCP: " +
			"set listen: (e.g. 127.0.0.1:8787) and an API token in hookd.yaml"})
		return
	}
	u := "http://" + browsable(*addr) + "/login/once?code=" + a.tcpDash.NewLoginCode()
	writeJSON(w, http.StatusOK, api.UILogin{URL: u, Expires: a.clock.Now().Add(uiLoginTTL).UTC().Format(time.RFC3339)})
}

// browsable is a listen address a browser on this machine can open: an
// unspecified host (all interfaces) becomes the loopback address.
func browsable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port)
}
