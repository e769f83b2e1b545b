// Package server is hookd's control API server: the HTTP API, served on the unix socket in the state directory and,
// when listen: is set, on TCP behind a bearer token (tcp.go), with the
// live event stream (stream.go),. docs/api.md
// documents it:
//
//	GET  /healthz
//	GET  /metrics                   Prometheus text format
//	GET  /v1/hooks                  live state of every hook
//	POST /v1/hooks/{name}/fire      {"event":{...},"force":bool,"ignore_where":bool} -> {"run":{...}}; 409 + gate when refused
//	POST /v1/hooks/{name}/pause     and /resume
//	GET  /v1/runs?hook=&status=&limit=&before=
//	GET  /v1/runs/{id}
//	GET  /v1/runs/{id}/wait         blocks until the run is final
//	GET  /v1/runs/{id}/output       Server-Sent Events: the run's live step output, until it ends (output.go)
//	GET  /v1/output?hook=           Server-Sent Events: every run's (or a hook's) live step output
//	POST /v1/events                 {"type":"...","data":{...},"id":"optional"} -> {"event_id","seq","runs","duplicate"}
//	GET  /v1/events?after=&limit=&type=&hook=
//	GET  /v1/stream                 Server-Sent Events, resumable with Last-Event-ID
//	GET  /v1/search?q=WORDS           finished runs whose records best match (hook, limit, since)
//	GET  /v1/status                 runs in flight, queue, overdue hooks, counters, database size, last prune
//	GET  /v1/nodes                  the nodes sharing a PostgreSQL database, the scheduler, differing hook files
//	GET  /v1/env                    the names (never the values) of the variables set in the daemon's environment
//	POST /v1/prune                  {"dry_run":bool} -> what retention deleted (or would)
//	POST /v1/ui/login               -> {"url"}: a one-time login link to the dashboard
//
// and the web dashboard's pages at / (dashboard.go). The daemon (package daemon) builds one with New and
// serves it; package client is its client; package api holds the types
// both ends share.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/dashboard"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/authlimit"
	"github.com/hookd/hookd/internal/human"
	"github.com/hookd/hookd/metrics"
	"github.com/hookd/hookd/sandbox"
	"github.com/hookd/hookd/store"
)

// maxBody bounds request bodies.
const maxBody = 1 << 20

// Server is the control API of one daemon, on its unix socket and, with
// a token, on TCP (ServeUnix, ServeTCP), with the dashboard's pages.
type Server struct {
	eng     *engine.Engine
	st      engine.Store
	evlog   eventLog
	feed    *Feed
	metrics *metrics.Metrics
	db      string // absolute path of the database, told by /healthz on the socket
	log     *slog.Logger
	grace   time.Duration // overdue grace, for /v1/status
	clock   clock.Clock
	started clock.Mono   // on clock, for the uptime
	pruner  Pruner       // retention; nil: no /v1/prune, no database in /v1/status
	cluster ClusterNodes // the nodes of the cluster (nodes.go); nil on SQLite: no /v1/nodes

	dash    *dashboard.Server      // the dashboard of the unix socket (dashboard.go); nil: none
	tcpDash *dashboard.Server      // the dashboard of the TCP listener, behind its login; nil: none
	tcpAddr atomic.Pointer[string] // the TCP listener's address, once it listens
	// logins counts wrong API tokens per client, for the bearer token of
	// the TCP API and the dashboard's password login alike (tcp.go).
	logins *authlimit.Limiter

	closing   chan struct{} // closed when the API shuts down: streams end
	closeOnce sync.Once
}

// Options are what a Server serves.
type Options struct {
	Engine  *engine.Engine
	Store   engine.Store
	Feed    *Feed            // wakes the live streams when events are stored
	Metrics *metrics.Metrics // nil: no /metrics, no counters in /v1/status
	DB      string           // the database's absolute path, told by /healthz on the socket
	Log     *slog.Logger
	Grace   time.Duration // the overdue grace, for /v1/status and the dashboard
	Pruner  Pruner        // retention; nil: no /v1/prune, no database in /v1/status
	Cluster ClusterNodes  // the nodes sharing the database; nil on SQLite: no /v1/nodes

	// Token is the TCP API's bearer token: with one, the TCP listener
	// also serves the dashboard, behind its login, for DashboardHosts.
	Token          string
	DashboardHosts []string
	// Clock is the daemon's clock: the dashboard's sessions and the UI
	// login links expire by it, the uptime is counted on it (default
	// clock.System).
	Clock clock.Clock
}

// Pruner is the retention the API reports and runs (POST /v1/prune).
type Pruner interface {
	// Prune deletes what retention lets go now (dryRun: counts it).
	Prune(ctx context.Context, dryRun bool) *api.PruneReport
	// Last is the latest prune that was not a dry run; nil before one.
	Last() *api.PruneReport
	// Size is the database's size.
	Size(ctx context.Context) (store.Size, error)
	// Where says which database it is.
	Where() api.DBWhere
}

// New returns the API server of o, with its dashboards; it serves
// nothing until ServeUnix or ServeTCP.
func New(o Options) (*Server, error) {
	clk := o.Clock
	if clk == nil {
		clk = clock.System{}
	}
	a := &Server{
		eng: o.Engine, st: o.Store, evlog: o.Store, feed: o.Feed, metrics: o.Metrics, db: o.DB, log: o.Log,
		grace: o.Grace, started: clk.Mono(), clock: clk, pruner: o.Pruner, cluster: o.Cluster, closing: make(chan struct{}),
	}
	src := dashSource{eng: o.Engine, db: o.Store, grace: o.Grace, nodes: o.Cluster}
	if err := newDashboards(src, o.Token, o.DashboardHosts, clk, a); err != nil {
		return nil, err
	}
	return a, nil
}

// handler is the API, with the dashboard's pages when dash is not nil.
func (a *Server) handler(dash *dashboard.Server) http.Handler {
	mux := http.NewServeMux()
	if dash != nil {
		dash.Register(mux)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, api.Health{Status: "ok", DB: a.db, PID: os.Getpid(),
			Uptime: human.Exact(clock.Since(a.clock, a.started).Round(time.Second))})
	})
	if a.metrics != nil {
		mux.Handle("GET /metrics", a.metrics.Handler())
	}
	mux.HandleFunc("GET /v1/events", a.events)
	mux.HandleFunc("GET /v1/stream", func(w http.ResponseWriter, r *http.Request) { a.stream(w, r, nil) })
	mux.HandleFunc("GET /v1/hooks", a.hooks)
	mux.HandleFunc("POST /v1/hooks/{name}/fire", a.fire)
	mux.HandleFunc("POST /v1/hooks/{name}/pause", a.pause(true))
	mux.HandleFunc("POST /v1/hooks/{name}/resume", a.pause(false))
	mux.HandleFunc("GET /v1/runs", a.runs)
	mux.HandleFunc("GET /v1/runs/{id}", a.run)
	mux.HandleFunc("GET /v1/search", a.search)
	mux.HandleFunc("GET /v1/runs/{id}/wait", a.wait)
	mux.HandleFunc("GET /v1/runs/{id}/progress", a.progress)
	mux.HandleFunc("GET /v1/runs/{id}/output", func(w http.ResponseWriter, r *http.Request) { a.output(w, r, nil) })
	mux.HandleFunc("GET /v1/output", func(w http.ResponseWriter, r *http.Request) { a.output(w, r, nil) })
	mux.HandleFunc("POST /v1/events", a.emit)
	mux.HandleFunc("GET /v1/status", a.status)
	mux.HandleFunc("GET /v1/nodes", a.nodes)
	mux.HandleFunc("GET /v1/env", a.env)
	if a.pruner != nil {
		mux.HandleFunc("POST /v1/prune", a.prune)
	}
	mux.HandleFunc("POST /v1/ui/login", a.uiLogin)
	mux.HandleFunc("POST /v1/usage", a.usage)
	return mux
}

// usage records what a replay spent (hookd replay, engine.Replay) in the
// spend ledger, where the budgets count it. Only a replay's usage is
// taken: a run's is recorded by the run.
func (a *Server) usage(w http.ResponseWriter, r *http.Request) {
	var u budget.Usage
	if !decodeBody(w, r, &u) {
		return
	}
	if err := engine.CheckReplayUsage(&u); err != nil {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: err.Error()})
		return
	}
	if err := a.eng.AddUsage(r.Context(), &u); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"run_id": u.RunID, "recorded": true})
}

// ServeUnix listens on the socket path (replacing a stale socket: the
// caller holds the database lock, so no live daemon owns it).
func (a *Server) ServeUnix(path string) (*http.Server, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restrict socket: %w", err)
	}
	ln = sandboxedPeerListener{Listener: ln, sb: sandbox.Default(), log: a.log}
	srv := newHTTPServer(a.handler(a.dash))
	srv.RegisterOnShutdown(a.Close)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("control API stopped", "err", err)
		}
	}()
	return srv, nil
}

// Connection limits of the API servers. There is no write timeout: the
// event stream and /wait answer for as long as they need.
const (
	// apiReadHeaderTimeout bounds how long a client may take to send a
	// request's headers, the first request of a connection included.
	apiReadHeaderTimeout = 10 * time.Second
	// apiIdleTimeout closes a keep-alive connection that sends no next
	// request in time.
	apiIdleTimeout = 60 * time.Second
)

// newHTTPServer returns the server of the unix and TCP APIs, with the
// connection limits above, so neither a silent client nor an idle
// keep-alive connection holds a connection open.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: apiReadHeaderTimeout, IdleTimeout: apiIdleTimeout}
}

// Close ends the streams, so a shutdown does not wait for them.
func (a *Server) Close() {
	a.closeOnce.Do(func() { close(a.closing) })
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, err error) {
	var gate *engine.GateError
	switch {
	case errors.As(err, &gate):
		writeJSON(w, http.StatusConflict, api.Error{Error: err.Error(), Gate: gate.Gate, RunID: gate.RunID})
	case errors.Is(err, engine.ErrNotFound):
		writeJSON(w, http.StatusNotFound, api.Error{Error: err.Error()})
	case errors.Is(err, engine.ErrStopped):
		writeJSON(w, http.StatusServiceUnavailable, api.Error{Error: "hookd is shutting down"})
	case errors.Is(err, engine.ErrNotScheduler):
		writeJSON(w, http.StatusServiceUnavailable, api.Error{Error: err.Error()})
	case errors.Is(err, engine.ErrDuplicateEvent):
		writeJSON(w, http.StatusConflict, api.Error{Error: err.Error()})
	default:
		writeJSON(w, http.StatusInternalServerError, api.Error{Error: err.Error()})
	}
}

// decodeBody decodes a JSON request body into v strictly: unknown fields,
// a value of the wrong type or anything after the object is a 400, a body
// over maxBody a 413. An empty body leaves v as it is.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// One JSON value: anything after it is an error.
		var extra json.RawMessage
		if err2 := dec.Decode(&extra); !errors.Is(err2, io.EOF) {
			err = errors.New("unexpected data after the JSON object")
			if err2 != nil && !errors.As(err2, new(*json.SyntaxError)) {
				err = err2
			}
		}
	}
	var tooBig *http.MaxBytesError
	switch {
	case err == nil, errors.Is(err, io.EOF):
		return true
	case errors.As(err, &tooBig):
		writeJSON(w, http.StatusRequestEntityTooLarge, api.Error{Error: fmt.Sprintf("request body is larger than %d bytes", maxBody)})
	default:
		writeJSON(w, http.StatusBadRequest, api.Error{Error: "bad request body: " + err.Error()})
	}
	return false
}

func (a *Server) hooks(w http.ResponseWriter, r *http.Request) {
	hs, err := a.eng.Hooks(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	b, err := api.AppendHooks(make([]byte, 0, 256*len(hs)), hs)
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, '\n'))
}

func (a *Server) fire(w http.ResponseWriter, r *http.Request) {
	var req api.FireRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Depth < 0 {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: fmt.Sprintf("depth is %d; want 0 or more", req.Depth)})
		return
	}
	tp, ok := traceParent(w, r)
	if !ok {
		return
	}
	run, err := a.eng.Fire(r.Context(), r.PathValue("name"), engine.FireOptions{Event: req.Event, Force: req.Force, EvenDisabled: req.EvenDisabled,
		IgnoreWhere: req.IgnoreWhere, Depth: req.Depth, TraceParent: tp})
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.RunAnswer{Run: run})
}

// traceParent reads the request's W3C traceparent header: the trace the
// runs it starts continue. A malformed one is refused (400).
func traceParent(w http.ResponseWriter, r *http.Request) (engine.TraceParent, bool) {
	tp, err := engine.ParseTraceParent(r.Header.Get("traceparent"))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: err.Error()})
		return "", false
	}
	return tp, true
}

func (a *Server) pause(paused bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := a.eng.SetPaused(r.Context(), r.PathValue("name"), paused); err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"hook": r.PathValue("name"), "paused": paused})
	}
}

func (a *Server) runs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := engine.RunFilter{Hook: q.Get("hook"), Status: engine.Status(q.Get("status")), Before: q.Get("before")}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			writeJSON(w, http.StatusBadRequest, api.Error{Error: "limit must be a positive integer"})
			return
		}
		f.Limit = n
	}
	runs, err := a.st.ListRuns(r.Context(), f)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, runs)
}

func (a *Server) run(w http.ResponseWriter, r *http.Request) {
	run, err := a.st.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeRun(w, http.StatusOK, run)
}

// progress serves GET /v1/runs/{id}/progress: what a run in flight has
// done so far (404 when it is not in flight).
func (a *Server) progress(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p, ok, err := a.eng.Progress(r.Context(), id)
	if err != nil {
		writeErr(w, err)
		return
	}
	if !ok {
		writeJSON(w, http.StatusNotFound, api.Error{Error: fmt.Sprintf("run %s is not in flight", id)})
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (a *Server) wait(w http.ResponseWriter, r *http.Request) {
	run, err := a.eng.Wait(r.Context(), r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeRun(w, http.StatusOK, run)
}

func (a *Server) emit(w http.ResponseWriter, r *http.Request) {
	var req api.EmitRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if err := api.CheckEvent(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: err.Error()})
		return
	}
	tp, ok := traceParent(w, r)
	if !ok {
		return
	}
	ev := &engine.Event{ID: req.ID, Type: req.Type, Data: req.Data, Source: "api", Depth: req.Depth, TraceParent: tp}
	em, err := a.eng.EmitReport(r.Context(), ev)
	ans := api.NewEmitAnswer(ev, em)
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, ans)
	case errors.Is(err, engine.ErrDuplicateEvent):
		// Idempotent: a retry of a published event is answered like the
		// first, without dispatching it again.
		ans.Duplicate = true
		writeJSON(w, http.StatusOK, ans)
	case errors.Is(err, engine.ErrStopped) && ev.Seq > 0:
		ans.Pending = true
		writeJSON(w, http.StatusAccepted, ans)
	default:
		writeErr(w, err)
	}
}

func (a *Server) prune(w http.ResponseWriter, r *http.Request) {
	var req api.PruneRequest
	if !decodeBody(w, r, &req) {
		return
	}
	rep := a.pruner.Prune(r.Context(), req.DryRun)
	if rep.Error != "" {
		writeErr(w, errors.New(rep.Error))
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// search serves GET /v1/search?q=WORDS[&hook=H][&limit=N][&since=RFC3339].
func (a *Server) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sq := engine.SearchQuery{Text: q.Get("q"), Hook: q.Get("hook"), Limit: 10}
	if strings.TrimSpace(sq.Text) == "" {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: "q is required: the words to search for"})
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeJSON(w, http.StatusBadRequest, api.Error{Error: "limit must be from 1 to 100"})
			return
		}
		sq.Limit = n
	}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, api.Error{Error: "since must be an RFC 3339 time"})
			return
		}
		sq.Since = t
	}
	hits, err := a.st.SearchRuns(r.Context(), sq)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: err.Error()})
		return
	}
	if hits == nil {
		hits = []engine.SearchHit{}
	}
	writeJSON(w, http.StatusOK, hits)
}
