package dashboard

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/internal/authlimit"
	"github.com/hookd/hookd/internal/human"
)

// Sizes of what the pages show.
const (
	stripRuns     = 50   // runs in a hook's strip
	pageRuns      = 50   // runs on a page of the run list
	timelineRuns  = 5000 // runs the 24-hour timeline draws at most
	timelineRange = 24 * time.Hour
	stripWorkers  = 4 // the hooks page's queries at once (the store reads on up to 4 connections)
)

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

// overviewData is the overview page.
type overviewData struct {
	Now      time.Time
	Hooks    int
	InFlight []inFlight
	Queued   []string
	Overdue  []string
	DBBytes  int64
	Timeline template.HTML
	Counts   []statusCount // runs of the last 24 hours by status
	// CheckFailed counts the runs of Counts whose check did not pass.
	CheckFailed int
	Truncated   bool          // the timeline shows only the newest timelineRuns
	Spend       budget.Spend  // token usage against the budgets
	Nodes       []Node        // the cluster's nodes (PostgreSQL), none on SQLite
	Drift       []HookDrift   // hooks whose files differ between live nodes
	Failures    []*engine.Run // the latest failed runs of the last 24 hours
}

// recentFailures is how many failed runs the overview lists.
const recentFailures = 5

type inFlight struct {
	Hook  string
	RunID string
}

type statusCount struct {
	Status engine.Status
	N      int
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request, req *request) {
	ctx := r.Context()
	src := s.opts.Source
	now := s.opts.Clock.Now()
	hooks, err := src.Hooks(ctx)
	if err != nil {
		s.failErr(w, r, req, err)
		return
	}
	sum, err := src.Summary(ctx)
	if err != nil {
		s.failErr(w, r, req, err)
		return
	}
	overdue, err := src.Overdue(ctx)
	if err != nil {
		s.failErr(w, r, req, err)
		return
	}
	size, err := src.DatabaseBytes(ctx)
	if err != nil {
		s.failErr(w, r, req, err)
		return
	}
	briefs, err := src.BriefsSince(ctx, now.Add(-timelineRange), timelineRuns)
	if err != nil {
		s.failErr(w, r, req, err)
		return
	}
	failures, err := src.ListRuns(ctx, engine.RunFilter{Status: engine.StatusFailed, Since: now.Add(-timelineRange), Limit: recentFailures})
	if err != nil {
		s.failErr(w, r, req, err)
		return
	}
	d := overviewData{Now: now, Hooks: len(hooks), Queued: sum.Queued, Overdue: overdue, DBBytes: size,
		Truncated: len(briefs) == timelineRuns, Spend: sum.Spend, Failures: failures}
	for _, h := range hooks {
		if h.InFlight != "" {
			d.InFlight = append(d.InFlight, inFlight{Hook: h.Name, RunID: h.InFlight})
		}
	}
	n := map[engine.Status]int{}
	for _, b := range briefs {
		n[b.Status]++
		if b.CheckFailed != "" {
			d.CheckFailed++
		}
	}
	for _, st := range statuses {
		if n[st] > 0 {
			d.Counts = append(d.Counts, statusCount{st, n[st]})
		}
	}
	if d.Nodes, d.Drift, err = src.Nodes(ctx); err != nil {
		s.failErr(w, r, req, err)
		return
	}
	d.Timeline = timeline(briefs, now, timelineRange)
	s.render(w, r, req, http.StatusOK, "overview", page{Title: "Overview", Nav: "overview", Live: "all", Data: d})
}

// statuses are the run statuses, in the order the pages list them.
var statuses = []engine.Status{
	engine.StatusQueued, engine.StatusRunning, engine.StatusCompleted, engine.StatusFailed,
	engine.StatusSkipped, engine.StatusDropped, engine.StatusCancelled, engine.StatusInterrupted,
}

// hooksData is the hooks page.
type hooksData struct {
	Now   time.Time
	Hooks []hookRow
	Flash string // what the last action did, or why it was refused
	Error bool
}

type hookRow struct {
	engine.HookStatus
	Strip template.HTML
}

func (s *Server) hooks(w http.ResponseWriter, r *http.Request, req *request) {
	s.hooksPage(w, r, req, http.StatusOK, "", false)
}

func (s *Server) hooksPage(w http.ResponseWriter, r *http.Request, req *request, code int, flash string, isErr bool) {
	ctx := r.Context()
	hooks, err := s.opts.Source.Hooks(ctx)
	if err != nil {
		s.failErr(w, r, req, err)
		return
	}
	d := hooksData{Now: s.opts.Clock.Now(), Flash: flash, Error: isErr, Hooks: make([]hookRow, len(hooks))}
	// One query a hook, each served by an index; a few at once.
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		errMu sync.Mutex
		first error
	)
	for range min(stripWorkers, len(hooks)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(hooks); i = int(next.Add(1) - 1) {
				briefs, err := s.opts.Source.LatestBriefs(ctx, hooks[i].Name, stripRuns)
				if err != nil {
					errMu.Lock()
					first = cmp.Or(first, err)
					errMu.Unlock()
					return
				}
				d.Hooks[i] = hookRow{HookStatus: hooks[i], Strip: strip(briefs, stripRuns)}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		s.failErr(w, r, req, first)
		return
	}
	s.render(w, r, req, code, "hooks", page{Title: "Hooks", Nav: "hooks", Live: "all", Data: d})
}

// fire fires a hook with the event given as a JSON object (optional).
func (s *Server) fire(w http.ResponseWriter, r *http.Request, req *request) {
	name := r.PathValue("name")
	opt := engine.FireOptions{Force: r.PostForm.Get("force") != ""}
	if ev := strings.TrimSpace(r.PostForm.Get("event")); ev != "" {
		if err := json.Unmarshal([]byte(ev), &opt.Event); err != nil || opt.Event == nil {
			msg := "the event must be a JSON object"
			if err != nil {
				msg += ": " + err.Error()
			}
			s.hooksPage(w, r, req, http.StatusBadRequest, fmt.Sprintf("%s not fired: %s", name, msg), true)
			return
		}
	}
	run, err := s.opts.Source.Fire(r.Context(), name, opt)
	var gate *engine.GateError
	switch {
	case errors.As(err, &gate):
		s.hooksPage(w, r, req, http.StatusConflict, fmt.Sprintf("%s not fired: %v", name, err), true)
		return
	case err != nil:
		s.failErr(w, r, req, err)
		return
	}
	http.Redirect(w, r, "/runs/"+url.PathEscape(run.ID), http.StatusSeeOther)
}

func (s *Server) pause(paused bool) handler {
	return func(w http.ResponseWriter, r *http.Request, req *request) {
		name := r.PathValue("name")
		if err := s.opts.Source.SetPaused(r.Context(), name, paused); err != nil {
			s.failErr(w, r, req, err)
			return
		}
		http.Redirect(w, r, "/hooks", http.StatusSeeOther)
	}
}

// runsData is the run list.
type runsData struct {
	Now      time.Time
	Runs     []*engine.Run
	Hooks    []string
	Statuses []engine.Status
	Spans    []span
	Hook     string
	Status   string
	Since    string
	Before   string
	Older    string // the address of the next page, "" when this is the last
}

// span is a choice of the time filter.
type span struct {
	Value string
	Label string
	D     time.Duration
}

var spans = []span{
	{"1h", "last hour", time.Hour},
	{"24h", "last 24 hours", 24 * time.Hour},
	{"7d", "last 7 days", 7 * 24 * time.Hour},
	{"30d", "last 30 days", 30 * 24 * time.Hour},
}

func (s *Server) runs(w http.ResponseWriter, r *http.Request, req *request) {
	ctx := r.Context()
	q := r.URL.Query()
	d := runsData{Now: s.opts.Clock.Now(), Statuses: statuses, Spans: spans,
		Hook: q.Get("hook"), Status: q.Get("status"), Since: q.Get("since"), Before: q.Get("before")}
	f := engine.RunFilter{Hook: d.Hook, Status: engine.Status(d.Status), Before: d.Before, Limit: pageRuns + 1}
	if d.Status != "" && !slices.Contains(statuses, f.Status) {
		s.fail(w, r, req, http.StatusBadRequest, fmt.Sprintf("status must be one of %v (got %q)", statuses, d.Status))
		return
	}
	if d.Since != "" {
		i := slices.IndexFunc(spans, func(sp span) bool { return sp.Value == d.Since })
		if i < 0 {
			s.fail(w, r, req, http.StatusBadRequest, fmt.Sprintf("since must be 1h, 24h, 7d or 30d (got %q)", d.Since))
			return
		}
		f.Since = d.Now.Add(-spans[i].D)
	}
	runs, err := s.opts.Source.ListRuns(ctx, f)
	if err != nil {
		s.failErr(w, r, req, err)
		return
	}
	if len(runs) > pageRuns {
		runs = runs[:pageRuns]
		next := url.Values{}
		for k, v := range map[string]string{"hook": d.Hook, "status": d.Status, "since": d.Since} {
			if v != "" {
				next.Set(k, v)
			}
		}
		next.Set("before", runs[len(runs)-1].ID)
		d.Older = "/runs?" + next.Encode()
	}
	d.Runs = runs
	hooks, err := s.opts.Source.Hooks(ctx)
	if err != nil {
		s.failErr(w, r, req, err)
		return
	}
	for _, h := range hooks {
		d.Hooks = append(d.Hooks, h.Name)
	}
	if d.Hook != "" && !slices.Contains(d.Hooks, d.Hook) {
		d.Hooks = append(d.Hooks, d.Hook) // a hook removed since, still in the history
	}
	sort.Strings(d.Hooks)
	live := ""
	if d.Before == "" { // only the first page takes new runs
		live = "all"
		if d.Hook != "" {
			live = "hook:" + d.Hook
		}
	}
	s.render(w, r, req, http.StatusOK, "runs", page{Title: "Runs", Nav: "runs", Live: live, Data: d})
}

// runData is the page of one run.
type runData struct {
	Now        time.Time
	Run        *engine.Run
	Event      string // the payload, indented
	Steps      []stepView
	Transcript *agent.Transcript
	TransErr   string
	Waterfall  template.HTML
	Progress   *engine.RunProgress // the run in flight's steps so far; nil when it is not in flight
}

// stepView is a step with its output split for the page.
type stepView struct {
	*engine.StepResult
	Stderr string
	Exit   string
	Long   bool // collapsed: the output is long
}

// longOutput: outputs over this many bytes or lines start collapsed.
const (
	longBytes = 2000
	longLines = 20
)

func isLong(s string) bool {
	return len(s) > longBytes || strings.Count(s, "\n") > longLines
}

func (s *Server) run(w http.ResponseWriter, r *http.Request, req *request) {
	run, err := s.opts.Source.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		s.failErr(w, r, req, err)
		return
	}
	d := runData{Now: s.opts.Clock.Now(), Run: run}
	if run.Status == engine.StatusRunning {
		p, ok, err := s.opts.Source.Progress(r.Context(), run.ID)
		if err != nil {
			s.failErr(w, r, req, err)
			return
		}
		if ok {
			d.Progress = &p
		}
	}
	if len(run.Event) > 0 && string(run.Event) != "{}" && string(run.Event) != "null" {
		var v any
		if json.Unmarshal(run.Event, &v) == nil {
			b, _ := json.MarshalIndent(v, "", "  ")
			d.Event = string(b)
		} else {
			d.Event = string(run.Event)
		}
	}
	for _, st := range run.Steps {
		v := stepView{StepResult: st}
		v.Stderr, _ = st.Fields["stderr"].(string)
		if st.ExitCode != nil {
			v.Exit = strconv.Itoa(*st.ExitCode)
		}
		v.Long = isLong(st.Output) || isLong(v.Stderr)
		d.Steps = append(d.Steps, v)
	}
	d.Transcript, err = agent.DecodeTranscript(run)
	if err != nil {
		d.TransErr = err.Error()
	}
	d.Waterfall = waterfall(run, d.Transcript, d.Now)
	live := ""
	if !run.Status.Final() {
		live = "run:" + run.ID
	}
	s.render(w, r, req, http.StatusOK, "run", page{Title: "Run " + run.ID, Nav: "runs", Live: live, Data: d})
}

// loginData is the login page; with Code, the page of a one-time login
// link.
type loginData struct {
	Next  string
	Error string
	Code  string
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request, req *request) {
	next := localNext(r.URL.Query().Get("next"))
	if req.sess != nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	s.render(w, r, req, http.StatusOK, "login", page{Title: "Log in", Data: loginData{Next: next}})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request, req *request) {
	next := localNext(r.PostForm.Get("next"))
	if !s.opts.Login {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	ok, wait := s.logins.Attempt(authlimit.Client(r.RemoteAddr), func() bool { return equal(token, s.opts.Token) })
	switch {
	case wait > 0:
		secs := authlimit.RetryAfter(wait)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		w.Header().Set("Connection", "close")
		s.render(w, r, req, http.StatusTooManyRequests, "login", page{Title: "Log in",
			Data: loginData{Next: next, Error: fmt.Sprintf("Too many wrong tokens from your address: try again in %d s, or run hookd ui for a login link.", secs)}})
		return
	case !ok:
		s.opts.Log.Warn("dashboard: login with a wrong token", "remote", r.RemoteAddr)
		w.Header().Set("Connection", "close")
		s.render(w, r, req, http.StatusUnauthorized, "login", page{Title: "Log in",
			Data: loginData{Next: next, Error: "That is not the API token."}})
		return
	}
	s.replaceSession(w, r, req)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// loginOncePage is the page of a one-time login link from `hookd ui`: a
// button that logs in. Opening it uses nothing up: link unfurlers, mail
// scanners and HEAD requests fetch links too, and would spend the code
// before its reader could; only the POST of the button does (loginOnce).
func (s *Server) loginOncePage(w http.ResponseWriter, r *http.Request, req *request) {
	if !s.opts.Login {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	code := r.URL.Query().Get("code")
	if !s.sessions.codeValid(code) {
		s.loginLinkSpent(w, r, req)
		return
	}
	s.render(w, r, req, http.StatusOK, "login", page{Title: "Log in", Data: loginData{Next: "/", Code: code}})
}

func (s *Server) loginLinkSpent(w http.ResponseWriter, r *http.Request, req *request) {
	w.Header().Set("Connection", "close")
	s.render(w, r, req, http.StatusUnauthorized, "login", page{Title: "Log in",
		Data: loginData{Next: "/", Error: "That login link was used already or has expired: run hookd ui again, or log in with the API token."}})
}

// loginOnce logs in with a one-time code from `hookd ui`, sent by the
// button of its page, and uses the code up.
func (s *Server) loginOnce(w http.ResponseWriter, r *http.Request, req *request) {
	if !s.opts.Login {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if !s.sessions.useCode(r.PostForm.Get("code")) {
		s.loginLinkSpent(w, r, req)
		return
	}
	s.replaceSession(w, r, req)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// replaceSession logs the browser in with a new session. The session its
// cookie held, if any, ends (its id is rotated): the old id, and the event
// streams open with it, stop working.
func (s *Server) replaceSession(w http.ResponseWriter, r *http.Request, req *request) {
	if req.sess != nil {
		s.sessions.close(req.sid)
	}
	id, _ := s.sessions.open()
	s.setSession(w, r, id)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, req *request) {
	if s.opts.Login {
		s.sessions.close(req.sid)
		http.SetCookie(w, &http.Cookie{Name: sessionCookieName(r), Value: "", Path: "/", MaxAge: -1,
			HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"when": func(t, now time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Local().Format("2006-01-02 15:04:05 MST") + " (" + human.Relative(t.Sub(now)) + ")"
	},
	// reltime is when, short for a table's cell: "3m ago" or "in 10m",
	// in a <time> that does not break, with the full time as its title.
	"reltime": func(t, now time.Time) template.HTML {
		if t.IsZero() {
			return "-"
		}
		return template.HTML(`<time class="rel" datetime="` + t.UTC().Format(time.RFC3339) + `" title="` +
			template.HTMLEscapeString(t.Local().Format("2006-01-02 15:04:05 MST")) + `">` +
			template.HTMLEscapeString(human.Relative(t.Sub(now))) + `</time>`)
	},
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Local().Format("01-02 15:04:05")
	},
	"iso":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"dur":   human.Duration,
	"since": func(t, now time.Time) string { return human.Duration(max(now.Sub(t), 0)) },
	"elapsed": func(r *engine.Run, now time.Time) string {
		switch {
		case r.Duration() > 0:
			return human.Duration(r.Duration())
		case r.Status == engine.StatusRunning && !r.StartedAt.IsZero():
			return human.Duration(max(now.Sub(r.StartedAt), 0)) + " so far"
		}
		return "-"
	},
	"bytes":    human.Size,
	"status":   func(s engine.Status) string { return "st-" + string(s) },
	"runclass": statusClass,
	"long":     isLong,
	"truncate": truncate,
	"plus1":    func(i int) int { return i + 1 },
	"str":      func(v any) string { return fmt.Sprint(v) },
}

// truncate cuts s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// statusClass is the CSS class of a run's status (st-STATUS, whose
// colour app.css gives): st-check-failed, red, for a run whose check did
// not pass (engine/check.go), which would otherwise look green.
func statusClass(s engine.Status, checkFailed string) string {
	if checkFailed != "" && s == engine.StatusCompleted {
		return "st-check-failed"
	}
	return "st-" + string(s)
}
