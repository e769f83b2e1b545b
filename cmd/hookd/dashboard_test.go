package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// dashHooks are the hooks of the dashboard's tests: one that runs a
// shell step, one with a secret it prints, and one fired by events.
var dashHooks = map[string]string{
	"hello.yaml": `description: say hello
steps:
  - name: greet
    type: shell
    command: printf 'hello from %s\n' {{event.who}}
skip_llm: true
`,
	"secretive.yaml": `secrets: [MY_SECRET]
steps:
  - name: read
    type: shell
    command: printf 'token=%s\n' "$MY_SECRET"
    secrets: [MY_SECRET]
skip_llm: true
`,
	"ondeploy.yaml": `trigger:
  event: deploy.finished
steps:
  - type: shell
    command: "true"
skip_llm: true
`,
}

// browser is an HTTP client that acts as a browser on the dashboard: it
// keeps its cookie, does not follow redirects, and sends the headers a
// browser sends (Origin on a POST) unless told otherwise.
type browser struct {
	t      *testing.T
	http   *http.Client
	base   string // http://ADDR
	cookie string // the session cookie's value
}

func newBrowser(t *testing.T, addr string) *browser {
	return &browser{t: t, base: "http://" + addr, http: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// page is an answer of the dashboard.
type page struct {
	code int
	body string
	hdr  http.Header
}

// do sends a request; hdr are header name/value pairs ("Host" sets the
// Host header; a value of "-" removes a header set by default).
func (b *browser) do(method, path string, form url.Values, hdr ...string) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", b.base)
	}
	if b.cookie != "" {
		req.AddCookie(&http.Cookie{Name: b.cookieName(), Value: b.cookie})
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		switch {
		case hdr[i] == "Host":
			req.Host = hdr[i+1]
		case hdr[i+1] == "-":
			req.Header.Del(hdr[i])
		default:
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := b.http.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatalf("%s %s: read: %v", method, path, err)
	}
	for _, c := range resp.Cookies() {
		if c.Name == b.cookieName() && c.MaxAge > 0 {
			b.cookie = c.Value
		}
	}
	return page{resp.StatusCode, string(out), resp.Header}
}

// cookieName is the session cookie's name: hookd_session_PORT.
func (b *browser) cookieName() string {
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(b.base, "http://"))
	return "hookd_session_" + port
}

func (b *browser) get(path string, hdr ...string) page { return b.do("GET", path, nil, hdr...) }

// must gets a page that must answer code.
func (b *browser) must(code int, path string) page {
	b.t.Helper()
	p := b.get(path)
	if p.code != code {
		b.t.Fatalf("GET %s: %d, want %d:\n%s", path, p.code, code, p.body)
	}
	return p
}

// login logs in with the token.
func (b *browser) login(token string) page {
	b.t.Helper()
	return b.do("POST", "/login", url.Values{"token": {token}, "next": {"/hooks"}})
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token of the hooks page.
func (b *browser) csrf() string {
	b.t.Helper()
	m := csrfRE.FindStringSubmatch(b.must(200, "/hooks").body)
	if m == nil {
		b.t.Fatal("the hooks page has no CSRF token")
	}
	return m[1]
}

// dashEnv starts a daemon with the TCP listener and the dashboard's hooks.
func dashEnv(t *testing.T) (*env, *served, string) {
	e := newEnv(t, "listen: 127.0.0.1:0\n", dashHooks)
	e.environ = []string{"HOOKD_TOKEN=" + testToken, "MY_SECRET=" + hookSecret}
	d := e.serve()
	return e, d, d.tcpAddr()
}

// inlineScript finds what the Content-Security-Policy forbids in a page:
// a script element with a body, or an inline event handler attribute.
var inlineScript = regexp.MustCompile(`(?i)<script(\s[^>]*)?>\s*[^<\s]|\son[a-z]+\s*=|javascript:|\sstyle\s*=|<style`)

// TestDashboard logs in with the token, looks at every page, fires a hook
// with an event, sees its run and its step's output (its secret
// redacted), pauses a hook and logs out, over real HTTP against a real
// daemon.
func TestDashboard(t *testing.T) {
	e, d, addr := dashEnv(t)
	b := newBrowser(t, addr)

	// Before the login: every page sends the browser to the login page.
	p := b.get("/runs?hook=hello")
	if p.code != 303 || p.hdr.Get("Location") != "/login?next=%2Fruns%3Fhook%3Dhello" {
		t.Fatalf("GET /runs without a session: %d %q", p.code, p.hdr.Get("Location"))
	}
	login := b.must(200, "/login")
	if !strings.Contains(login.body, `name="token"`) {
		t.Fatalf("login page:\n%s", login.body)
	}
	b.must(200, "/static/app.js")
	b.must(200, "/static/app.css")

	// A wrong token: 401, no session.
	if p := b.login(testToken + "x"); p.code != 401 || b.cookie != "" || !strings.Contains(p.body, "not the API token") {
		t.Fatalf("login with a wrong token: %d cookie %q", p.code, b.cookie)
	}
	p = b.login(testToken)
	if p.code != 303 || p.hdr.Get("Location") != "/hooks" || b.cookie == "" {
		t.Fatalf("login: %d %q cookie %q", p.code, p.hdr.Get("Location"), b.cookie)
	}
	sc := p.hdr.Get("Set-Cookie")
	if !strings.HasPrefix(sc, b.cookieName()+"=") || !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict") {
		t.Errorf("session cookie: %s", sc)
	}

	// Every page: the CSP holds, nothing inline runs.
	for _, path := range []string{"/", "/hooks", "/runs", "/login"} {
		p := b.get(path)
		if path == "/login" {
			if p.code != 303 { // logged in already
				t.Errorf("GET /login with a session: %d", p.code)
			}
			continue
		}
		if p.code != 200 {
			t.Fatalf("GET %s: %d\n%s", path, p.code, p.body)
		}
		csp := p.hdr.Get("Content-Security-Policy")
		if script, style := cspDirective(csp, "script-src"), cspDirective(csp, "style-src"); script != "script-src 'self'" || style != "style-src 'self'" {
			t.Errorf("GET %s: CSP %q", path, csp)
		}
		if m := inlineScript.FindString(p.body); m != "" {
			t.Errorf("GET %s: inline script or handler %q", path, m)
		}
		if !strings.HasPrefix(p.hdr.Get("Server-Timing"), "render;dur=") {
			t.Errorf("GET %s: no Server-Timing: %v", path, p.hdr)
		}
	}
	hooks := b.must(200, "/hooks").body
	for _, h := range []string{"hello", "secretive", "ondeploy", "event deploy.finished"} {
		if !strings.Contains(hooks, h) {
			t.Errorf("the hooks page does not show %q", h)
		}
	}

	// Fire with an event: to the run's page.
	csrf := b.csrf()
	p = b.do("POST", "/hooks/hello/fire", url.Values{"csrf": {csrf}, "event": {`{"who": "the dashboard"}`}})
	if p.code != 303 || !strings.HasPrefix(p.hdr.Get("Location"), "/runs/") {
		t.Fatalf("fire: %d %q\n%s", p.code, p.hdr.Get("Location"), p.body)
	}
	id := strings.TrimPrefix(p.hdr.Get("Location"), "/runs/")
	e.waitRun(id, engine.StatusCompleted)
	run := b.must(200, "/runs/"+id).body
	for _, want := range []string{"hello from the dashboard", `id="outcome"`, "completed", "step 0 greet", ", exit 0", `class="waterfall"`, "the dashboard"} {
		if !strings.Contains(run, want) {
			t.Errorf("the run page does not show %q:\n%s", want, run)
		}
	}
	// A bad event: 400 with the reason, nothing fired.
	if p := b.do("POST", "/hooks/hello/fire", url.Values{"csrf": {csrf}, "event": {`[1,2]`}}); p.code != 400 || !strings.Contains(p.body, "must be a JSON object") {
		t.Errorf("fire with a list as the event: %d", p.code)
	}
	if p := b.do("POST", "/hooks/nosuch/fire", url.Values{"csrf": {csrf}}); p.code != 404 {
		t.Errorf("fire of an unknown hook: %d", p.code)
	}

	// The secret a step printed is redacted on the page, as everywhere.
	p = b.do("POST", "/hooks/secretive/fire", url.Values{"csrf": {csrf}})
	sid := strings.TrimPrefix(p.hdr.Get("Location"), "/runs/")
	e.waitRun(sid, engine.StatusCompleted)
	if page := b.must(200, "/runs/"+sid).body; leaked(page) != "" || !strings.Contains(page, "token=") {
		t.Errorf("the run page of secretive leaks %s:\n%s", leaked(page), page)
	}

	// The run list: newest first, filters.
	runs := b.must(200, "/runs").body
	if i, j := strings.Index(runs, sid), strings.Index(runs, id); i < 0 || j < 0 || i > j {
		t.Errorf("runs page: secretive's run at %d, hello's at %d: want both, newest first", i, j)
	}
	if p := b.must(200, "/runs?hook=hello&status=completed&since=1h").body; !strings.Contains(p, id) || strings.Contains(p, sid) {
		t.Errorf("runs filtered by hook hello: want only hello's run")
	}
	if p := b.must(200, "/runs?status=failed").body; strings.Contains(p, id) {
		t.Errorf("runs filtered by status failed show a completed run")
	}
	b.must(400, "/runs?status=bogus")
	b.must(400, "/runs?since=1y")
	b.must(404, "/runs?before=nosuchrun")
	b.must(404, "/runs/nosuchrun")

	// The overview: a timeline with the runs, the database size.
	ov := b.must(200, "/").body
	for _, want := range []string{`<svg class="timeline"`, `href="/runs/` + id + `"`, `id="dbsize"`, "2 completed"} {
		if !strings.Contains(ov, want) {
			t.Errorf("the overview does not show %q:\n%s", want, ov)
		}
	}

	// Pause and resume.
	if p := b.do("POST", "/hooks/hello/pause", url.Values{"csrf": {csrf}}); p.code != 303 {
		t.Fatalf("pause: %d\n%s", p.code, p.body)
	}
	if l := e.must(0, "list"); !strings.Contains(l.stdout, "paused") {
		t.Errorf("hookd list after the pause:\n%s", l.stdout)
	}
	if !strings.Contains(b.must(200, "/hooks").body, `class="resume-button"`) {
		t.Errorf("the hooks page has no resume button after the pause")
	}
	if p := b.do("POST", "/hooks/hello/resume", url.Values{"csrf": {csrf}}); p.code != 303 {
		t.Fatalf("resume: %d", p.code)
	}
	if l := e.must(0, "list"); strings.Contains(l.stdout, "paused") {
		t.Errorf("hookd list after the resume:\n%s", l.stdout)
	}

	// The event stream answers the session (EventSource sends no token).
	if code := streamStatus(t, b, addr); code != 200 {
		t.Errorf("GET /v1/stream with the session: %d", code)
	}

	// Log out: the session is gone.
	old := b.cookie
	if p := b.do("POST", "/logout", url.Values{"csrf": {csrf}}); p.code != 303 {
		t.Fatalf("logout: %d", p.code)
	}
	b.cookie = old
	if p := b.get("/hooks"); p.code != 303 {
		t.Errorf("GET /hooks with the cookie of a closed session: %d", p.code)
	}
	if strings.Contains(d.log.String(), testToken) {
		t.Errorf("the token is in the log")
	}
}

// streamStatus opens the event stream with the browser's cookie and
// returns the status of the answer.
func streamStatus(t *testing.T, b *browser, addr string, hdr ...string) int {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+addr+"/v1/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.cookie != "" {
		req.AddCookie(&http.Cookie{Name: b.cookieName(), Value: b.cookie})
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestDashboardAttacks performs the attacks on the dashboard: requests
// without a session, with a missing or wrong CSRF token, from another
// origin or site, through a host name another site controls (DNS
// rebinding), and an open redirect after the login. Each is refused, and
// nothing was fired or paused.
func TestDashboardAttacks(t *testing.T) {
	e, _, addr := dashEnv(t)
	b := newBrowser(t, addr)
	if p := b.login(testToken); p.code != 303 {
		t.Fatalf("login: %d", p.code)
	}
	csrf := b.csrf()
	anon := newBrowser(t, addr)
	fire := url.Values{"csrf": {csrf}}
	rebind := "attacker.example:" + addr[strings.LastIndex(addr, ":")+1:]

	attacks := []struct {
		name string
		b    *browser
		form url.Values
		path string
		hdr  []string
		code int
		msg  string
	}{
		{"no session", anon, fire, "/hooks/hello/fire", nil, 401, "log in first"},
		{"no session, pause", anon, fire, "/hooks/hello/pause", nil, 401, "log in first"},
		{"no CSRF token", b, url.Values{}, "/hooks/hello/fire", nil, 403, "CSRF token"},
		{"wrong CSRF token", b, url.Values{"csrf": {csrf + "x"}}, "/hooks/hello/fire", nil, 403, "CSRF token"},
		{"another session's CSRF token", b, url.Values{"csrf": {"AAAA" + csrf[4:]}}, "/hooks/hello/pause", nil, 403, "CSRF token"},
		{"foreign Origin", b, fire, "/hooks/hello/fire", []string{"Origin", "http://attacker.example"}, 403, "another origin"},
		{"Origin null", b, fire, "/hooks/hello/fire", []string{"Origin", "null"}, 403, "another origin"},
		{"cross-site fetch", b, fire, "/hooks/hello/pause", []string{"Sec-Fetch-Site", "cross-site"}, 403, "another site"},
		{"no Origin, no Referer", b, fire, "/hooks/hello/fire", []string{"Origin", "-"}, 403, "names no origin"},
		{"foreign Referer", b, fire, "/hooks/hello/fire", []string{"Origin", "-", "Referer", "http://attacker.example/x"}, 403, "names no origin"},
		{"DNS rebinding", b, fire, "/hooks/hello/fire", []string{"Host", rebind, "Origin", "http://" + rebind}, 421, "DNS rebinding"},
		{"DNS rebinding, login", anon, url.Values{"token": {testToken}}, "/login", []string{"Host", rebind, "Origin", "http://" + rebind}, 421, "DNS rebinding"},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			a.b.t = t
			defer func() { a.b.t = e.t }()
			p := a.b.do("POST", a.path, a.form, a.hdr...)
			if p.code != a.code || !strings.Contains(p.body, a.msg) {
				t.Errorf("POST %s: %d, want %d with %q:\n%s", a.path, p.code, a.code, a.msg, p.body)
			}
		})
	}
	// Reading through a rebound name is refused as well, the stream too.
	if p := b.get("/runs", "Host", rebind); p.code != 421 {
		t.Errorf("GET /runs through %s: %d", rebind, p.code)
	}
	if code := streamStatus(t, b, addr, "Host", rebind); code != 401 {
		t.Errorf("GET /v1/stream through %s with the session: %d", rebind, code)
	}
	if code := streamStatus(t, anon, addr); code != 401 {
		t.Errorf("GET /v1/stream without a session: %d", code)
	}
	if code := streamStatus(t, b, addr, "Origin", "http://attacker.example"); code != 401 {
		t.Errorf("GET /v1/stream from another origin: %d", code)
	}
	// A session cookie is not the bearer token of the API.
	if p := b.get("/v1/hooks"); p.code != 401 {
		t.Errorf("GET /v1/hooks with only the session: %d", p.code)
	}
	// Nothing was fired, nothing paused.
	if runs := e.listRuns(); len(runs) != 0 {
		t.Errorf("the attacks made %d runs: %+v", len(runs), runs)
	}
	if l := e.must(0, "list"); strings.Contains(l.stdout, "paused") {
		t.Errorf("an attack paused a hook:\n%s", l.stdout)
	}
	// The same request with the token, the origin and the session works.
	if p := b.do("POST", "/hooks/hello/pause", fire); p.code != 303 {
		t.Errorf("the genuine pause: %d\n%s", p.code, p.body)
	}

	// No open redirect after the login.
	for _, next := range []string{"//attacker.example/", "https://attacker.example/", "/\\attacker.example"} {
		c := newBrowser(t, addr)
		p := c.do("POST", "/login", url.Values{"token": {testToken}, "next": {next}})
		if p.code != 303 || p.hdr.Get("Location") != "/" {
			t.Errorf("login with next=%s: %d to %q", next, p.code, p.hdr.Get("Location"))
		}
	}
}

// TestDashboardLoginLink: `hookd ui` prints a link that logs a browser in
// once. What fetches the link before its reader does (a HEAD, a link
// unfurler's GET) gets the page with its button and uses nothing up, nor
// does a POST from another site; the button's POST logs in, once.
func TestDashboardLoginLink(t *testing.T) {
	e, _, addr := dashEnv(t)
	r := e.must(0, "ui")
	link := strings.TrimSpace(r.stdout)
	u, err := url.Parse(link)
	if err != nil || u.Host != addr || u.Path != "/login/once" || len(u.Query().Get("code")) < 40 {
		t.Fatalf("hookd ui printed %q (listening on %s)", link, addr)
	}
	code := u.Query().Get("code")
	unfurler := newBrowser(t, addr)
	if p := unfurler.do("HEAD", u.RequestURI(), nil); p.code != 200 || unfurler.cookie != "" {
		t.Fatalf("HEAD the link: %d, cookie %q", p.code, unfurler.cookie)
	}
	for range 2 {
		p := unfurler.get(u.RequestURI())
		if p.code != 200 || unfurler.cookie != "" || !strings.Contains(p.body, `action="/login/once"`) ||
			!strings.Contains(p.body, `name="code" value="`+code+`"`) || !strings.Contains(p.body, `id="login-once"`) {
			t.Fatalf("GET the link: %d, cookie %q:\n%s", p.code, unfurler.cookie, p.body)
		}
	}
	b := newBrowser(t, addr)
	if p := b.do("POST", "/login/once", url.Values{"code": {code}}, "Origin", "http://attacker.example"); p.code != 403 || b.cookie != "" {
		t.Fatalf("POST the code from another site: %d, cookie %q", p.code, b.cookie)
	}
	if p := b.do("POST", "/login/once", url.Values{"code": {code}}); p.code != 303 || p.hdr.Get("Location") != "/" || b.cookie == "" {
		t.Fatalf("press the button: %d, cookie %q:\n%s", p.code, b.cookie, p.body)
	}
	b.must(200, "/hooks")
	// Once only.
	c := newBrowser(t, addr)
	if p := c.get(u.RequestURI()); p.code != 401 || c.cookie != "" || !strings.Contains(p.body, "used already or has expired") {
		t.Errorf("the link opened twice: %d, cookie %q", p.code, c.cookie)
	}
	if p := c.do("POST", "/login/once", url.Values{"code": {code}}); p.code != 401 || c.cookie != "" {
		t.Errorf("the code posted twice: %d, cookie %q", p.code, c.cookie)
	}
	// Without a TCP listener there is no dashboard to log in to.
	e2 := newEnv(t, "", dashHooks)
	e2.serve()
	if r := e2.must(1, "ui"); !strings.Contains(r.stderr, "set listen:") {
		t.Errorf("hookd ui without listen:\n%s", r)
	}
}

// TestDashboardSocket: the unix socket serves the same pages without a
// login (its permissions are the login), and still wants the CSRF token.
func TestDashboardSocket(t *testing.T) {
	e := newEnv(t, "", dashHooks)
	e.serve()
	c := e.socketClient()
	c.base = "http://localhost" // the Host check holds on the socket too
	code, body := c.call("GET", "/hooks", nil)
	if code != 200 || !strings.Contains(string(body), "hello") {
		t.Fatalf("GET /hooks on the socket: %d", code)
	}
	m := csrfRE.FindStringSubmatch(string(body))
	if m == nil {
		t.Fatal("no CSRF token on the socket's hooks page")
	}
	if code, _ := c.call("POST", "/hooks/hello/pause", "csrf=wrong", "Content-Type", "application/x-www-form-urlencoded"); code != 403 {
		t.Errorf("pause on the socket with a wrong CSRF token: %d", code)
	}
	c.http.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if code, _ := c.call("POST", "/hooks/hello/pause", "csrf="+url.QueryEscape(m[1]), "Content-Type", "application/x-www-form-urlencoded"); code != 303 {
		t.Errorf("pause on the socket: %d", code)
	}
	if l := e.must(0, "list"); !strings.Contains(l.stdout, "paused") {
		t.Errorf("hookd list after the pause:\n%s", l.stdout)
	}
}

// forwardSocket forwards a loopback TCP port to the daemon's unix
// socket, as `ssh -L PORT:SOCKET` or socat does, and returns its address.
func forwardSocket(t *testing.T, sock string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("unix", sock)
			if err != nil {
				in.Close()
				continue
			}
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return ln.Addr().String()
}

// TestDashboardSocketForwarded: a browser that reaches the socket's
// dashboard through a forward (no login there) gets the same Host and
// site checks as on TCP: a page on a rebound name (DNS rebinding) can
// neither read the pages and their CSRF token nor fire or pause a hook,
// and a cross-site request is refused even with the token.
func TestDashboardSocketForwarded(t *testing.T) {
	e := newEnv(t, "", dashHooks)
	e.serve()
	addr := forwardSocket(t, e.path(".hookd/hookd.sock"))
	rebind := "attacker.example:" + addr[strings.LastIndex(addr, ":")+1:]
	b := newBrowser(t, addr)

	// The rebound page reads nothing.
	if p := b.get("/hooks", "Host", rebind); p.code != 421 || csrfRE.MatchString(p.body) {
		t.Errorf("GET /hooks through %s: %d\n%s", rebind, p.code, p.body)
	}
	// Even with the token (read here through the genuine address), a
	// rebound or cross-site POST does nothing.
	csrf := b.csrf()
	attacks := []struct {
		name string
		path string
		hdr  []string
		code int
	}{
		{"DNS rebinding, fire", "/hooks/hello/fire", []string{"Host", rebind, "Origin", "http://" + rebind}, 421},
		{"DNS rebinding, pause", "/hooks/hello/pause", []string{"Host", rebind, "Origin", "http://" + rebind}, 421},
		{"cross-site fire", "/hooks/hello/fire", []string{"Origin", "http://attacker.example", "Sec-Fetch-Site", "cross-site"}, 403},
		{"foreign Origin, pause", "/hooks/hello/pause", []string{"Origin", "http://attacker.example"}, 403},
	}
	for _, a := range attacks {
		if p := b.do("POST", a.path, url.Values{"csrf": {csrf}}, a.hdr...); p.code != a.code {
			t.Errorf("%s: POST %s: %d, want %d\n%s", a.name, a.path, p.code, a.code, p.body)
		}
	}
	if runs := e.listRuns(); len(runs) != 0 {
		t.Errorf("the attacks made %d runs: %+v", len(runs), runs)
	}
	if l := e.must(0, "list"); strings.Contains(l.stdout, "paused") {
		t.Errorf("an attack paused a hook:\n%s", l.stdout)
	}
	// The genuine address works, a tool's POST without Origin too.
	if p := b.do("POST", "/hooks/hello/pause", url.Values{"csrf": {csrf}}, "Origin", "-"); p.code != 303 {
		t.Errorf("the genuine pause through the forward: %d\n%s", p.code, p.body)
	}
}

// cspDirective returns one directive of a Content-Security-Policy.
func cspDirective(csp, name string) string {
	for _, d := range strings.Split(csp, ";") {
		if d = strings.TrimSpace(d); strings.HasPrefix(d, name+" ") {
			return d
		}
	}
	return ""
}

// TestDashboardHosts: a name given in dashboard_hosts is answered; any
// other is still refused; a malformed entry is a settings error.
func TestDashboardHosts(t *testing.T) {
	e := newEnv(t, "listen: 127.0.0.1:0\ndashboard_hosts: [hookd.lan]\n", dashHooks)
	e.environ = []string{"HOOKD_TOKEN=" + testToken}
	d := e.serve()
	addr := d.tcpAddr()
	port := addr[strings.LastIndex(addr, ":")+1:]
	b := newBrowser(t, addr)
	if p := b.get("/login", "Host", "hookd.lan:"+port); p.code != 200 {
		t.Errorf("GET /login through hookd.lan: %d", p.code)
	}
	if p := b.get("/login", "Host", "other.lan:"+port); p.code != 421 {
		t.Errorf("GET /login through other.lan: %d", p.code)
	}
	bad := newEnv(t, "listen: 127.0.0.1:0\ndashboard_hosts: [\"hookd.lan:8787\"]\n", dashHooks)
	if r := bad.must(1, "validate"); !strings.Contains(r.stdout+r.stderr, "dashboard_hosts: want host names without port") {
		t.Errorf("a port in dashboard_hosts:\n%s", r)
	}
}

// TestDashboardLoginLimit guesses the token against the real daemon: after
// loginFreeFailures (5) wrong tokens, the client's next login is refused
// with 429 and Retry-After — even with the right token, which is not
// looked at — and no session is given; the one-time link of hookd ui still
// logs in.
func TestDashboardLoginLimit(t *testing.T) {
	e, _, addr := dashEnv(t)
	b := newBrowser(t, addr)
	for i := range 5 {
		if p := b.login(fmt.Sprintf("guess-%d", i)); p.code != 401 || b.cookie != "" {
			t.Fatalf("wrong token %d: %d cookie %q", i, p.code, b.cookie)
		}
	}
	p := b.login(testToken)
	if p.code != 429 || b.cookie != "" || p.hdr.Get("Retry-After") == "" || !strings.Contains(p.body, "Too many wrong tokens") {
		t.Fatalf("login after 5 wrong tokens: %d, Retry-After %q, cookie %q", p.code, p.hdr.Get("Retry-After"), b.cookie)
	}
	if p := b.get("/hooks"); p.code != 303 {
		t.Fatalf("GET /hooks after the refused login: %d", p.code)
	}
	link := strings.TrimSpace(e.must(0, "ui").stdout)
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	if p := b.get(u.RequestURI()); p.code != 200 {
		t.Fatalf("hookd ui's link during the lockout: %d", p.code)
	}
	if p := b.do("POST", "/login/once", url.Values{"code": {u.Query().Get("code")}}); p.code != 303 || b.cookie == "" {
		t.Fatalf("hookd ui's link's button during the lockout: %d cookie %q", p.code, b.cookie)
	}
}

// TestDashboardEscapesBidi: a step's output holding a right-to-left
// override (U+202E) would show "invoice\u202efdp.exe" as "invoiceexe.pdf";
// the run's page shows the character escaped, as `hookd run` does.
func TestDashboardEscapesBidi(t *testing.T) {
	e := newEnv(t, "listen: 127.0.0.1:0\n", map[string]string{
		"bidi.yaml": "steps:\n  - name: name\n    type: shell\n    command: printf 'invoice\\342\\200\\256fdp.exe \\342\\201\\246isolated\\342\\201\\251\\n'\nskip_llm: true\n",
	})
	e.environ = []string{"HOOKD_TOKEN=" + testToken}
	d := e.serve()
	id := runID(t, e.must(0, "fire", "bidi", "--wait"))
	if out := e.must(0, "run", id).stdout; !strings.Contains(out, `invoice\u202efdp.exe \u2066isolated\u2069`) {
		t.Fatalf("hookd run does not show the overrides escaped:\n%s", out)
	}
	b := newBrowser(t, d.tcpAddr())
	if p := b.login(testToken); p.code != 303 {
		t.Fatalf("login: %d", p.code)
	}
	p := b.must(200, "/runs/"+id)
	if !strings.Contains(p.body, `invoice\u202efdp.exe \u2066isolated\u2069`) {
		t.Errorf("the run's page does not show the overrides escaped:\n%s", p.body)
	}
	if strings.ContainsAny(p.body, "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069") {
		t.Errorf("the run's page holds a bidirectional override")
	}
	if got, _ := strconv.Atoi(p.hdr.Get("Content-Length")); got != len(p.body) {
		t.Errorf("Content-Length %d for a body of %d bytes", got, len(p.body))
	}
}
