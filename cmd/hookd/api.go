package main

import (
	"bytes"
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
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookd/hookd/dashboard"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/authlimit"
	"github.com/hookd/hookd/metrics"
	"github.com/hookd/hookd/sandbox"
)

// The control API, served on the unix socket in the state directory and,
// when listen: is set, on TCP behind a bearer token (tcp.go). docs/api.md
// documents it:
//
//	GET  /healthz
//	GET  /metrics                   Prometheus text format
//	GET  /v1/hooks                  live state of every hook
//	POST /v1/hooks/{name}/fire      {"event":{...},"force":bool} -> {"run":{...}}; 409 + gate when refused
//	POST /v1/hooks/{name}/pause     and /resume
//	GET  /v1/runs?hook=&status=&limit=&before=
//	GET  /v1/runs/{id}
//	GET  /v1/runs/{id}/wait         blocks until the run is final
//	POST /v1/events                 {"type":"...","data":{...},"id":"optional"} -> {"event_id","seq","runs","duplicate"}
//	GET  /v1/events?after=&limit=&type=&hook=
//	GET  /v1/stream                 Server-Sent Events, resumable with Last-Event-ID
//	GET  /v1/search?q=WORDS           finished runs whose records best match (hook, limit, since)
//	GET  /v1/status                 runs in flight, queue, overdue hooks, counters, database size, last prune
//	GET  /v1/nodes                  the nodes sharing a PostgreSQL database, the scheduler, differing hook files
//	POST /v1/prune                  {"dry_run":bool} -> what retention deleted (or would)
//	POST /v1/ui/login               -> {"url"}: a one-time login link to the dashboard
//
// and the web dashboard's pages at / (dashboard.go).

// maxBody bounds request bodies.
const maxBody = 1 << 20

type apiServer struct {
	eng     *engine.Engine
	st      engine.Store
	evlog   eventLog
	feed    *eventFeed
	metrics *metrics.Metrics
	db      string // absolute path of the database, told by /healthz on the socket
	log     *slog.Logger
	grace   time.Duration // overdue grace, for /v1/status
	started time.Time
	pruner  *pruner      // retention; nil: no /v1/prune, no database in /v1/status
	cluster clusterNodes // the nodes of the cluster (nodes.go); nil on SQLite: no /v1/nodes

	dash    *dashboard.Server      // the dashboard of the unix socket (dashboard.go); nil: none
	tcpDash *dashboard.Server      // the dashboard of the TCP listener, behind its login; nil: none
	tcpAddr atomic.Pointer[string] // the TCP listener's address, once it listens
	// logins counts wrong API tokens per client, for the bearer token of
	// the TCP API and the dashboard's password login alike (tcp.go).
	logins *authlimit.Limiter

	closing   chan struct{} // closed when the API shuts down: streams end
	closeOnce sync.Once
}

// health is the answer of /healthz.
type health struct {
	Status string `json:"status"`
	DB     string `json:"db,omitempty"`
	PID    int    `json:"pid,omitempty"`
	Uptime string `json:"uptime,omitempty"`
}

// apiError is the body of every error answer.
type apiError struct {
	Error string `json:"error"`
	Gate  string `json:"gate,omitempty"`
	RunID string `json:"run_id,omitempty"`
}

// handler is the API, with the dashboard's pages when dash is not nil.
func (a *apiServer) handler(dash *dashboard.Server) http.Handler {
	mux := http.NewServeMux()
	if dash != nil {
		dash.Register(mux)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, health{Status: "ok", DB: a.db, PID: os.Getpid(),
			Uptime: engine.DurationText(time.Since(a.started).Round(time.Second))})
	})
	if a.metrics != nil {
		mux.Handle("GET /metrics", a.metrics.Handler())
	}
	mux.HandleFunc("GET /v1/events", a.events)
	mux.HandleFunc("GET /v1/stream", a.stream)
	mux.HandleFunc("GET /v1/hooks", a.hooks)
	mux.HandleFunc("POST /v1/hooks/{name}/fire", a.fire)
	mux.HandleFunc("POST /v1/hooks/{name}/pause", a.pause(true))
	mux.HandleFunc("POST /v1/hooks/{name}/resume", a.pause(false))
	mux.HandleFunc("GET /v1/runs", a.runs)
	mux.HandleFunc("GET /v1/runs/{id}", a.run)
	mux.HandleFunc("GET /v1/search", a.search)
	mux.HandleFunc("GET /v1/runs/{id}/wait", a.wait)
	mux.HandleFunc("GET /v1/runs/{id}/progress", a.progress)
	mux.HandleFunc("POST /v1/events", a.emit)
	mux.HandleFunc("GET /v1/status", a.status)
	mux.HandleFunc("GET /v1/nodes", a.nodes)
	if a.pruner != nil {
		mux.HandleFunc("POST /v1/prune", a.prune)
	}
	mux.HandleFunc("POST /v1/ui/login", a.uiLogin)
	return mux
}

// serveUnix listens on the socket path (replacing a stale socket: the
// caller holds the database lock, so no live daemon owns it).
func (a *apiServer) serveUnix(path string) (*http.Server, error) {
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
	srv.RegisterOnShutdown(a.close)
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

// close ends the streams, so a shutdown does not wait for them.
func (a *apiServer) close() {
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
		writeJSON(w, http.StatusConflict, apiError{Error: err.Error(), Gate: gate.Gate, RunID: gate.RunID})
	case errors.Is(err, engine.ErrNotFound):
		writeJSON(w, http.StatusNotFound, apiError{Error: err.Error()})
	case errors.Is(err, engine.ErrStopped):
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "hookd is shutting down"})
	case errors.Is(err, engine.ErrNotScheduler):
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: err.Error()})
	case errors.Is(err, engine.ErrDuplicateEvent):
		writeJSON(w, http.StatusConflict, apiError{Error: err.Error()})
	default:
		writeJSON(w, http.StatusInternalServerError, apiError{Error: err.Error()})
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
		writeJSON(w, http.StatusRequestEntityTooLarge, apiError{Error: fmt.Sprintf("request body is larger than %d bytes", maxBody)})
	default:
		writeJSON(w, http.StatusBadRequest, apiError{Error: "bad request body: " + err.Error()})
	}
	return false
}

func (a *apiServer) hooks(w http.ResponseWriter, r *http.Request) {
	hs, err := a.eng.Hooks(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	b, err := appendHooksJSON(make([]byte, 0, 256*len(hs)), hs)
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, '\n'))
}

type fireRequest struct {
	Event map[string]any `json:"event,omitempty"`
	Force bool           `json:"force,omitempty"`
}

type runAnswer struct {
	Run *engine.Run `json:"run"`
}

func (a *apiServer) fire(w http.ResponseWriter, r *http.Request) {
	var req fireRequest
	if !decodeBody(w, r, &req) {
		return
	}
	run, err := a.eng.Fire(r.Context(), r.PathValue("name"), engine.FireOptions{Event: req.Event, Force: req.Force})
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, runAnswer{run})
}

func (a *apiServer) pause(paused bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := a.eng.SetPaused(r.Context(), r.PathValue("name"), paused); err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"hook": r.PathValue("name"), "paused": paused})
	}
}

func (a *apiServer) runs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := engine.RunFilter{Hook: q.Get("hook"), Status: engine.Status(q.Get("status")), Before: q.Get("before")}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			writeJSON(w, http.StatusBadRequest, apiError{Error: "limit must be a positive integer"})
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

func (a *apiServer) run(w http.ResponseWriter, r *http.Request) {
	run, err := a.st.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}

// progress serves GET /v1/runs/{id}/progress: what a run in flight has
// done so far (404 when it is not in flight).
func (a *apiServer) progress(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p, ok, err := a.eng.Progress(r.Context(), id)
	if err != nil {
		writeErr(w, err)
		return
	}
	if !ok {
		writeJSON(w, http.StatusNotFound, apiError{Error: fmt.Sprintf("run %s is not in flight", id)})
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (a *apiServer) wait(w http.ResponseWriter, r *http.Request) {
	run, err := a.eng.Wait(r.Context(), r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}

type emitRequest struct {
	ID   string         `json:"id,omitempty"`
	Type string         `json:"type"`
	Data map[string]any `json:"data,omitempty"`
}

type emitAnswer struct {
	EventID string        `json:"event_id"`
	Seq     int64         `json:"seq"`
	Runs    []*engine.Run `json:"runs"`
	// Duplicate: an event with this id was published before; this one was
	// neither stored nor dispatched again (seq is the first one's).
	Duplicate bool `json:"duplicate,omitempty"`
	// Pending: hookd is stopping; the event is stored and is dispatched
	// when it starts again.
	Pending bool `json:"pending,omitempty"`
	// Refused: the matching hooks a gate refused, each with the record the
	// refusal left.
	Refused []emitRefusal `json:"refused,omitempty"`
	// Queued: stored for the cluster's scheduler, on another node, which
	// dispatches it; the runs it starts are not known here.
	Queued bool `json:"queued,omitempty"`
}

// emitRefusal is a matching hook whose trigger a gate refused.
type emitRefusal struct {
	Hook  string `json:"hook"`
	RunID string `json:"run_id"` // the skipped (or dropped) record
	Gate  string `json:"gate"`
	Error string `json:"error"` // as a refused fire says it
}

// newEmitAnswer is the answer to an emit of ev that did em.
func newEmitAnswer(ev *engine.Event, em *engine.Emitted) emitAnswer {
	ans := emitAnswer{EventID: ev.ID, Seq: ev.Seq, Runs: append([]*engine.Run{}, em.Runs...), Queued: em.Elsewhere}
	for _, r := range em.Refused {
		ans.Refused = append(ans.Refused, emitRefusal{Hook: r.Run.Hook, RunID: r.Run.ID, Gate: r.Gate.Gate, Error: r.Gate.Error()})
	}
	return ans
}

// Limits of a published event.
const (
	maxEventType = 200
	maxEventID   = 200
)

// checkEvent validates a published event: a type made of dot-separated
// segments of letters, digits, '_' and '-' (no wildcards), not in the
// engine's own hook.run namespace; an id of printable ASCII.
func checkEvent(req *emitRequest) error {
	switch {
	case req.Type == "":
		return errors.New("type is required")
	case len(req.Type) > maxEventType:
		return fmt.Errorf("type is longer than %d bytes", maxEventType)
	case engine.ReservedEventType(req.Type):
		return errors.New("type: hook.* and hookd.* events are published by hookd itself")
	}
	if err := engine.ValidateEventType(req.Type); err != nil {
		return fmt.Errorf("type: %w", err)
	}
	if len(req.ID) > maxEventID {
		return fmt.Errorf("id is longer than %d bytes", maxEventID)
	}
	for _, c := range req.ID {
		if c <= ' ' || c > '~' {
			return errors.New("id must be printable ASCII without spaces")
		}
	}
	return nil
}

func (a *apiServer) emit(w http.ResponseWriter, r *http.Request) {
	var req emitRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if err := checkEvent(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Error: err.Error()})
		return
	}
	ev := &engine.Event{ID: req.ID, Type: req.Type, Data: req.Data, Source: "api"}
	em, err := a.eng.EmitReport(r.Context(), ev)
	ans := newEmitAnswer(ev, em)
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

// client talks to a running daemon over its unix socket.
type client struct {
	http *http.Client
}

// dial returns a client for the daemon of the database db, or nil when
// none answers.
func dial(db string) *client {
	socket := socketPath(db)
	if _, err := os.Stat(socket); err != nil {
		return nil
	}
	c := &client{http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.do(ctx, "GET", "/healthz", nil, nil); err != nil {
		return nil
	}
	return c
}

// remoteError is an error answer from the daemon.
type remoteError struct {
	status int
	body   apiError
}

func (e *remoteError) Error() string { return e.body.Error }

func (c *client) do(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.send(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// get returns the body of a successful GET.
func (c *client) get(ctx context.Context, path string) ([]byte, error) {
	resp, err := c.send(ctx, "GET", path, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if resp.ContentLength > 0 && resp.ContentLength < 1<<30 {
		buf.Grow(int(resp.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, fmt.Errorf("read hookd's answer: %w", err)
	}
	return buf.Bytes(), nil
}

// send sends a request with in as its JSON body (when not nil) and
// returns the answer, or the error answered.
func (c *client) send(ctx context.Context, method, path string, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://hookd"+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask hookd: %w", err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		var ae apiError
		if err := json.NewDecoder(resp.Body).Decode(&ae); err != nil || ae.Error == "" {
			ae.Error = resp.Status
		}
		return nil, &remoteError{status: resp.StatusCode, body: ae}
	}
	return resp, nil
}
