package dashboard

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/authlimit"
	"github.com/hookd/hookd/internal/textsafe"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Source is what the dashboard reads and does: the engine's live state
// and actions, and the store's history. cmd/hookd provides it.
type Source interface {
	Hooks(ctx context.Context) ([]engine.HookStatus, error)
	Summary(ctx context.Context) (engine.Summary, error)
	// Overdue lists the periodic hooks past due by more than the grace.
	Overdue(ctx context.Context) ([]string, error)
	Fire(ctx context.Context, hook string, opt engine.FireOptions) (*engine.Run, error)
	SetPaused(ctx context.Context, hook string, paused bool) error
	ListRuns(ctx context.Context, f engine.RunFilter) ([]*engine.Run, error)
	GetRun(ctx context.Context, id string) (*engine.Run, error)
	// Progress is what a run in flight has done so far (false: it is not
	// in flight).
	Progress(ctx context.Context, runID string) (engine.RunProgress, bool, error)
	LatestBriefs(ctx context.Context, hook string, n int) ([]engine.RunBrief, error)
	BriefsSince(ctx context.Context, since time.Time, limit int) ([]engine.RunBrief, error)
	// DatabaseBytes is the size of the database on disk.
	DatabaseBytes(ctx context.Context) (int64, error)
	// Nodes returns the nodes sharing the database (PostgreSQL), by name,
	// and the hooks whose files differ between live nodes; the overview
	// lists them. A daemon of one node (SQLite), or a cluster where no
	// node registered yet, answers none: no cluster to show.
	Nodes(ctx context.Context) ([]Node, []HookDrift, error)
}

// Node is one node of a cluster, as the overview shows it.
type Node struct {
	Name          string
	Alive         bool
	Scheduler     bool
	Running       int
	MaxConcurrent int
	HeartbeatAge  string // "3s"
}

// HookDrift is a hook whose file differs between live nodes: each node's
// version, "node version" ("node missing" when it lacks the hook).
type HookDrift struct {
	Hook     string
	Versions []string
}

// Options configure a Server.
type Options struct {
	Source Source
	// Login: browsers log in with Token and keep a session cookie.
	// Without it (the unix socket, whose permissions are the login)
	// every request is the one local session; the CSRF token, the Host
	// check (an address, localhost or one of Hosts) and the refusal of
	// requests from another site still hold.
	Login bool
	Token string
	Hosts []string // host names accepted besides IP addresses and localhost
	// Logins counts the login's wrong tokens per client; the TCP API
	// shares it (the same token, one count). nil: the dashboard's own.
	Logins *authlimit.Limiter
	Log    *slog.Logger
	Clock  clock.Clock // default clock.System
}

// Server serves the dashboard.
type Server struct {
	opts     Options
	pages    map[string]*template.Template
	static   http.Handler
	sessions *sessions
	logins   *authlimit.Limiter // wrong tokens of the password login, per client
	local    *session           // the session of every request when !opts.Login
}

// maxForm bounds a form's body.
const maxForm = 1 << 20

// New returns a dashboard server.
func New(opts Options) (*Server, error) {
	if opts.Source == nil {
		return nil, errors.New("dashboard: no source")
	}
	if opts.Login && opts.Token == "" {
		return nil, errors.New("dashboard: a login needs the API token")
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Logins == nil {
		opts.Logins = authlimit.New(opts.Clock.Now)
	}
	s := &Server{opts: opts, pages: map[string]*template.Template{}, sessions: newSessions(opts.Clock.Now), logins: opts.Logins}
	s.local = &session{csrf: randomToken()}
	base, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("parse dashboard layout: %w", err)
	}
	for _, page := range []string{"overview", "hooks", "runs", "run", "login", "error"} {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+page+".html")
		if err != nil {
			return nil, fmt.Errorf("parse dashboard page %s: %w", page, err)
		}
		s.pages[page] = t
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("open dashboard assets: %w", err)
	}
	s.static = http.StripPrefix("/static/", http.FileServerFS(sub))
	return s, nil
}

// Register adds the dashboard's routes to mux.
func (s *Server) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", s.guard(false, s.overview))
	mux.HandleFunc("GET /hooks", s.guard(false, s.hooks))
	mux.HandleFunc("POST /hooks/{name}/fire", s.guard(false, s.fire))
	mux.HandleFunc("POST /hooks/{name}/pause", s.guard(false, s.pause(true)))
	mux.HandleFunc("POST /hooks/{name}/resume", s.guard(false, s.pause(false)))
	mux.HandleFunc("GET /runs", s.guard(false, s.runs))
	mux.HandleFunc("GET /runs/{id}", s.guard(false, s.run))
	mux.HandleFunc("GET /login", s.guard(true, s.loginPage))
	mux.HandleFunc("POST /login", s.guard(true, s.login))
	mux.HandleFunc("GET /login/once", s.guard(true, s.loginOncePage))
	mux.HandleFunc("POST /login/once", s.guard(true, s.loginOnce))
	mux.HandleFunc("POST /logout", s.guard(false, s.logout))
	mux.HandleFunc("GET /static/", s.guard(true, func(w http.ResponseWriter, r *http.Request, _ *request) {
		w.Header().Set("Cache-Control", "no-cache")
		s.static.ServeHTTP(w, r)
	}))
}

// request is what the guard knows of a request it let through.
type request struct {
	start clock.Mono
	sid   string   // session id ("" when not logged in)
	sess  *session // nil when not logged in (public pages only)
}

type handler func(http.ResponseWriter, *http.Request, *request)

// contentSecurityPolicy allows scripts, styles and connections from the
// dashboard itself only: no inline script, event handler or style runs
// (the charts are styled by class, from app.css).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// guard checks every request before its handler: the Host (DNS
// rebinding), that it comes from this site, the session (unless public),
// and the CSRF token of a state-changing request.
func (s *Server) guard(public bool, h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req := &request{start: s.opts.Clock.Mono()}
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		hd.Set("Cross-Origin-Resource-Policy", "same-origin")
		changes := r.Method != http.MethodGet && r.Method != http.MethodHead
		// The Host and site checks hold on the unix socket too: a browser
		// reaches it through a forward (ssh -L PORT:SOCKET, socat), and
		// there a rebound name would read the pages and their CSRF token
		// with no login in the way. Only the demand that a state-changing
		// request name its origin is the TCP listener's: tools on the
		// socket send none.
		if !s.hostAllowed(r.Host) {
			s.fail(w, r, req, http.StatusMisdirectedRequest, fmt.Sprintf(
				"this dashboard does not answer to the host name %q: open it by IP address or localhost "+
					"(a name another site controls could point at this machine: DNS rebinding)", r.Host))
			return
		}
		if bad, why := crossSite(r, changes && s.opts.Login); bad {
			s.fail(w, r, req, http.StatusForbidden, "refused "+why)
			return
		}
		req.sid, req.sess = s.sessionOf(r)
		if req.sess == nil && !public {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			s.fail(w, r, req, http.StatusUnauthorized, "log in first")
			return
		}
		if changes {
			r.Body = http.MaxBytesReader(w, r.Body, maxForm)
			if err := r.ParseForm(); err != nil {
				s.fail(w, r, req, http.StatusBadRequest, "bad form: "+err.Error())
				return
			}
			if !public && !equal(r.PostForm.Get(csrfField), req.sess.csrf) {
				s.fail(w, r, req, http.StatusForbidden, "missing or wrong CSRF token: reload the page and try again")
				return
			}
		}
		h(w, r, req)
	}
}

// page is what every page's template gets.
type page struct {
	Title string
	Nav   string // which navigation entry is this page
	CSRF  string
	Login bool   // show the log out button
	Live  string // data-live of <main>: what events refresh it ("" for none)
	Data  any
}

// render executes a page into a buffer and sends it with the time it
// took (Server-Timing), or an error page if it fails.
func (s *Server) render(w http.ResponseWriter, r *http.Request, req *request, code int, name string, p page) {
	if req.sess != nil {
		p.CSRF = req.sess.csrf
	}
	p.Login = s.opts.Login && req.sess != nil
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		s.opts.Log.Error("dashboard: render page", "page", name, "err", err)
		http.Error(w, "render page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	// What a page shows comes in part from events, commands and models;
	// a bidirectional override in it would reorder what the reader sees
	// ("invoice\u202efdp.exe" shown as "invoiceexe.pdf"). Such characters
	// are shown escaped, as the CLI shows them (textsafe).
	body := buf.Bytes()
	if !textsafe.Clean(body) {
		body = textsafe.Append(nil, body)
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Server-Timing", serverTiming(clock.Since(s.opts.Clock, req.start)))
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// serverTiming is the Server-Timing header of a page that took d.
func serverTiming(d time.Duration) string {
	return fmt.Sprintf("render;dur=%.3f", float64(d)/float64(time.Millisecond))
}

// fail answers with an error page.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, req *request, code int, msg string) {
	if code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusMisdirectedRequest {
		// A refused client keeps no connection open.
		w.Header().Set("Connection", "close")
	}
	s.render(w, r, req, code, "error", page{Title: http.StatusText(code), Data: errorPage{Code: code, Message: msg}})
}

type errorPage struct {
	Code    int
	Message string
}

// failErr answers with the error page an engine or store error calls for.
func (s *Server) failErr(w http.ResponseWriter, r *http.Request, req *request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, engine.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, engine.ErrStopped):
		code = http.StatusServiceUnavailable
	}
	s.fail(w, r, req, code, err.Error())
}
