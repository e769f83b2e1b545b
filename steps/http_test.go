package steps

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/netguard"
)

func TestHTTPNewErrors(t *testing.T) {
	newErrTests(t, "http", []struct{ name, src, want string }{
		{"missing url", `method: GET`, "url: required"},
		{"ftp", `url: ftp://example.com/`, "url: must start with http:// or https://"},
		{"no scheme", `url: example.com/x`, "url: must start with http:// or https://"},
		{"scheme from a placeholder", `url: "{{event.url}}"`, "written out"},
		{"scheme glued to a placeholder", `url: "http{{event.s}}://x/"`, "written out"},
		{"no host", `url: "http:///x"`, "has no host"},
		{"bad method", "url: http://x/\nmethod: 'GE T'", "method"},
		{"bad header name", "url: http://x/\nheaders: {'a b': c}", "headers.a b"},
		{"bad placeholder", "url: http://x/\nbody: '{{'", "body: unclosed placeholder"},
		{"negative max_body", "url: http://x/\nmax_body: -1", "max_body: must be > 0"},
		{"negative redirects", "url: http://x/\nmax_redirects: -1", "max_redirects: must be >= 0"},
		{"unknown field", "url: http://x/\nallow_privat: true", "allow_privat"},
	})
}

func TestHTTPRun(t *testing.T) {
	var got struct {
		method, path, query, auth, ua, body string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.method, got.path, got.query, got.body = r.Method, r.URL.Path, r.URL.RawQuery, string(b)
		got.auth, got.ua = r.Header.Get("Authorization"), r.Header.Get("User-Agent")
		switch r.URL.Path {
		case "/missing":
			http.Error(w, "not here", http.StatusNotFound)
		case "/broken":
			http.Error(w, "boom", http.StatusInternalServerError)
		case "/big":
			fmt.Fprint(w, strings.Repeat("x", 1000))
		case "/moved":
			http.Redirect(w, r, "/ok", http.StatusFound)
		default:
			w.Header().Set("X-Answer", "42")
			fmt.Fprint(w, "hello")
		}
	}))
	defer srv.Close()
	event := map[string]any{"ref": "main", "token": "t0k", "msg": `{"a":"b"}`}

	tests := []struct {
		name       string
		src        string
		wantStatus int
		wantBody   string
		wantTrunc  bool
		check      func(t *testing.T, res *engine.StepResult)
	}{
		{name: "get", src: "url: '" + srv.URL + "/ok?ref={{event.ref}}'\nheaders: {Authorization: 'Bearer {{event.token}}'}",
			wantStatus: 200, wantBody: "hello", check: func(t *testing.T, res *engine.StepResult) {
				if got.method != "GET" || got.query != "ref=main" || got.auth != "Bearer t0k" || got.ua != "hookd" {
					t.Errorf("server saw %+v", got)
				}
				if h := res.Fields["headers"].(map[string]any); h["X-Answer"] != "42" {
					t.Errorf("headers %v", h)
				}
				if res.Fields["url"] != srv.URL+"/ok?ref=main" || res.Fields["status"] != "200 OK" {
					t.Errorf("url %v status %v", res.Fields["url"], res.Fields["status"])
				}
			}},
		{name: "post", src: "url: " + srv.URL + "/post\nmethod: post\nbody: '{{event.msg}}'", wantStatus: 200, wantBody: "hello",
			check: func(t *testing.T, res *engine.StepResult) {
				if got.method != "POST" || got.body != `{"a":"b"}` {
					t.Errorf("server saw %+v", got)
				}
			}},
		{name: "404 is a result", src: "url: " + srv.URL + "/missing", wantStatus: 404, wantBody: "not here\n"},
		{name: "500 is a result", src: "url: " + srv.URL + "/broken", wantStatus: 500, wantBody: "boom\n"},
		{name: "cap", src: "url: " + srv.URL + "/big\nmax_body: 100", wantStatus: 200,
			wantBody: strings.Repeat("x", 100) + "\n[hookd: body truncated after 100 of 1000 bytes]", wantTrunc: true},
		{name: "redirect followed", src: "url: " + srv.URL + "/moved", wantStatus: 200, wantBody: "hello",
			check: func(t *testing.T, res *engine.StepResult) {
				if res.Fields["url"] != srv.URL+"/ok" {
					t.Errorf("final url %v", res.Fields["url"])
				}
			}},
		{name: "redirect not followed", src: "url: " + srv.URL + "/moved\nmax_redirects: 0", wantStatus: 302,
			check: func(t *testing.T, res *engine.StepResult) {
				if h := res.Fields["headers"].(map[string]any); h["Location"] != "/ok" {
					t.Errorf("headers %v", h)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustStep(t, "http", tt.src+"\nallow_private: true", 0)
			res, err := runStep(t, s, stepEnv(t, event))
			if err != nil {
				t.Fatal(err)
			}
			if field(res, "status_code") != tt.wantStatus {
				t.Errorf("status_code %v; want %d", field(res, "status_code"), tt.wantStatus)
			}
			if tt.wantBody != "" && (res.Output != tt.wantBody || res.Fields["body"] != tt.wantBody) {
				t.Errorf("body %q; want %q", res.Output, tt.wantBody)
			}
			if field(res, "truncated") != tt.wantTrunc {
				t.Errorf("truncated %v", field(res, "truncated"))
			}
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}

func TestHTTPTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	s := mustStep(t, "http", "url: "+srv.URL+"\nallow_private: true", 200*time.Millisecond)
	start := time.Now()
	res, err := runStep(t, s, stepEnv(t, nil))
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("err = %v; want a timeout", err)
	}
	if d := time.Since(start); d > testtool.HangBound {
		t.Errorf("took %v", d)
	}
	if field(res, "status_code") != 0 {
		t.Errorf("status_code %v", field(res, "status_code"))
	}
}

// TestHTTPSSRF tries to reach internal addresses through the step, by
// configuration and through event data. Without allow_private each one
// is refused before a connection is made.
func TestHTTPSSRF(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("request reached the server: %s", r.URL)
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndexByte(port, ':')+1:]
	tests := []struct {
		name  string
		src   string
		event map[string]any
	}{
		{"loopback", "url: http://127.0.0.1:" + port + "/", nil},
		{"ipv6 loopback", "url: 'http://[::1]:" + port + "/'", nil},
		{"localhost", "url: http://localhost:" + port + "/", nil},
		{"metadata", "url: http://169.254.169.254/latest/meta-data/", nil},
		{"private 10.x", "url: http://10.0.0.1:9/", nil},
		{"host from event", "url: 'http://{{event.host}}/x'", map[string]any{"host": "169.254.169.254"}},
		{"host and port from event", "url: 'http://{{event.host}}/x'", map[string]any{"host": "127.0.0.1:" + port}},
		{"userinfo trick from event", "url: 'http://example.com@{{event.host}}/x'", map[string]any{"host": "10.0.0.1"}},
		{"metadata with allow_private", "url: http://169.254.169.254/\nallow_private: true", nil},
		{"ECS credentials with allow_private", "url: http://169.254.170.2/v2/credentials/x\nallow_private: true", nil},
		{"link-local from event with allow_private", "url: 'http://{{event.host}}/'\nallow_private: true", map[string]any{"host": "169.254.10.1"}},
		{"IPv6 link-local with allow_private", "url: 'http://[fe80::1]:" + port + "/'\nallow_private: true", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustStep(t, "http", tt.src, 5*time.Second)
			res, err := runStep(t, s, stepEnv(t, tt.event))
			if !errors.Is(err, netguard.ErrAddrRefused) || !strings.Contains(res.Error, "refused") {
				t.Errorf("err = %v; want a refusal", err)
			}
		})
	}
}

func TestHTTPHeaderInjection(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Evil") != "" {
			t.Error("an event value added a header")
		}
	}))
	defer srv.Close()
	s := mustStep(t, "http", "url: "+srv.URL+"\nallow_private: true\nheaders: {X-Note: '{{event.v}}'}", 0)
	_, err := runStep(t, s, stepEnv(t, map[string]any{"v": "a\r\nX-Evil: 1"}))
	if err == nil || !strings.Contains(err.Error(), "headers.X-Note") {
		t.Errorf("err = %v; want the header value refused", err)
	}
}
