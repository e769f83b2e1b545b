package main

import (
	"net/url"
	"strings"
	"testing"
)

// TestTCPEveryRouteNeedsAuth performs every request of the TCP listener
// without credentials, and the API's with only a dashboard session (a
// browser logged in, whose cookie any page of the host could make it
// send): each API route answers 401, the POST /v1/ui/login that mints a
// dashboard login among them, and each dashboard page sends the browser
// to the login. Nothing ran, nothing was paused or pruned, and no login
// link was given out.
func TestTCPEveryRouteNeedsAuth(t *testing.T) {
	e, _, addr := dashEnv(t)
	anon := tcpClient(t, addr, "")
	b := newBrowser(t, addr)
	if p := b.login(testToken); p.code != 303 {
		t.Fatalf("login: %d", p.code)
	}
	api := []struct{ method, path string }{
		{"GET", "/v1/hooks"}, {"GET", "/v1/events"}, {"GET", "/v1/runs"}, {"GET", "/v1/runs/01JX"},
		{"GET", "/v1/runs/01JX/wait"}, {"GET", "/v1/runs/01JX/progress"}, {"GET", "/v1/search?q=hello"},
		{"GET", "/v1/status"}, {"GET", "/v1/nodes"}, {"GET", "/v1/env"}, {"GET", "/metrics"},
		{"POST", "/v1/hooks/hello/fire"}, {"POST", "/v1/hooks/hello/pause"}, {"POST", "/v1/hooks/hello/resume"},
		{"POST", "/v1/events"}, {"POST", "/v1/prune"}, {"POST", "/v1/ui/login"}, {"POST", "/v1/usage"},
		{"HEAD", "/v1/hooks"}, {"DELETE", "/v1/runs/01JX"}, {"GET", "/V1/hooks"},
	}
	for _, r := range api {
		var body any
		if r.method == "POST" {
			body = `{"type":"deploy.finished","data":{"env":"prod"}}`
		}
		if code, out := anon.call(r.method, r.path, body); code != 401 {
			t.Errorf("%s %s without the token: %d %.200s", r.method, r.path, code, out)
		}
		if r.method == "HEAD" || r.method == "DELETE" || strings.HasPrefix(r.path, "/V1") {
			continue
		}
		var form url.Values
		if r.method == "POST" {
			form = url.Values{"csrf": {b.csrf()}}
		}
		if p := b.do(r.method, r.path, form); p.code != 401 {
			t.Errorf("%s %s with a dashboard session only: %d %.200s", r.method, r.path, p.code, p.body)
		}
	}
	for _, path := range []string{"/", "/hooks", "/runs", "/runs/01JX", "/runs?hook=hello"} {
		p := newBrowser(t, addr).get(path)
		if p.code != 303 || !strings.HasPrefix(p.hdr.Get("Location"), "/login?next=") {
			t.Errorf("GET %s without a session: %d to %q", path, p.code, p.hdr.Get("Location"))
		}
	}
	if runs := e.listRuns(); len(runs) != 0 {
		t.Errorf("requests without credentials made %d runs: %+v", len(runs), runs)
	}
	if l := e.must(0, "list"); strings.Contains(l.stdout, "paused") {
		t.Errorf("a request without credentials paused a hook:\n%s", l.stdout)
	}
}
