package steps

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// recorder is a loopback server that records what reaches it.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
	body []string
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, req)
		r.body = append(r.body, string(b))
		r.mu.Unlock()
		w.Write([]byte("ok"))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) requests() ([]*http.Request, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*http.Request(nil), r.reqs...), append([]string(nil), r.body...)
}

// TestHTTPHostInjection performs the attacks of an event value that
// stands in a URL's authority: it ends the host with "@", "/", "?" or
// "#", or adds a port, to send the request to another server (B, a real
// one on loopback) than the one the hook wrote (A). Each is refused
// before any request; B sees none. A value that stands for the whole
// host may still carry a port, and a value inside the host that keeps to
// it passes.
func TestHTTPHostInjection(t *testing.T) {
	a, b := newRecorder(t), newRecorder(t)
	bHost := strings.TrimPrefix(b.URL, "http://")
	_, bPort, _ := strings.Cut(bHost, ":")
	_, aPort, _ := strings.Cut(strings.TrimPrefix(a.URL, "http://"), ":")
	step := func(u string) string { return "url: '" + u + "'\nallow_private: true" }
	for _, at := range []struct {
		name, src, value string
	}{
		{"@ after the host", step(a.URL + "{{event.v}}"), "@" + bHost + "/"},
		{"@ in a path-less URL with a path value", step(a.URL + "{{event.v}}"), "@" + bHost},
		{"a port and a path after the last label", step("http://127.0.0.{{event.v}}/api"), "1:" + bPort + "/x?"},
		{"a port after the last label", step("http://127.0.0.{{event.v}}:" + aPort + "/api"), "1:" + bPort + "#"},
		{"a slash after a subdomain", step("http://{{event.v}}.localhost:" + aPort + "/api"), bHost + "/x"},
		{"a backslash", step("http://{{event.v}}.localhost:" + aPort + "/api"), bHost + `\x`},
		{"a question mark", step("http://{{event.v}}.localhost:" + aPort + "/api"), bHost + "?"},
		{"white space", step("http://{{event.v}}.localhost:" + aPort + "/api"), bHost + " x"},
	} {
		res, err := runStep(t, mustStep(t, "http", at.src, 0), stepEnv(t, map[string]any{"v": at.value}))
		if err == nil || !strings.Contains(err.Error(), "would end or move the host") {
			t.Errorf("%s: not refused: %v (output %q)", at.name, err, res.Output)
		}
	}
	if reqs, _ := b.requests(); len(reqs) > 0 {
		t.Errorf("an event value sent %d requests to another server: %s", len(reqs), reqs[0].URL)
	}
	// What a value in the host may do: be the whole host with its port,
	// or a label of it.
	for _, ok := range []struct{ src, value string }{
		{step("http://{{event.v}}/api"), "127.0.0.1:" + aPort},
		{step("http://127.0.0.{{event.v}}:" + aPort + "/api"), "1"},
	} {
		if res, err := runStep(t, mustStep(t, "http", ok.src, 0), stepEnv(t, map[string]any{"v": ok.value})); err != nil || res.Output != "ok" {
			t.Errorf("%s with %q: %v, output %q", ok.src, ok.value, err, res.Output)
		}
	}
	if reqs, _ := a.requests(); len(reqs) != 2 {
		t.Errorf("A got %d requests, want the 2 allowed ones", len(reqs))
	}
}

// TestHTTPURLPartsFromHookText performs a query injection through a URL
// whose placeholder's default text holds a "#" (or "?"): the parts of the
// URL are where the hook's own text puts them, so a value after the real
// "?" is query-encoded and adds no parameter, and one in the path is
// path-encoded.
func TestHTTPURLPartsFromHookText(t *testing.T) {
	srv := newRecorder(t)
	step := func(path string) string { return "url: '" + srv.URL + path + "'\nallow_private: true" }
	res, err := runStep(t, mustStep(t, "http", step(`/api/{{event.a | default "#"}}?q={{event.q}}`), 0),
		stepEnv(t, map[string]any{"a": "x", "q": "1&admin=true"}))
	if err != nil {
		t.Fatalf("%v (output %q)", err, res.Output)
	}
	res, err = runStep(t, mustStep(t, "http", step(`/api/{{event.a | default "?"}}/{{event.b}}`), 0),
		stepEnv(t, map[string]any{"a": "x", "b": "a b&c=d"}))
	if err != nil {
		t.Fatalf("%v (output %q)", err, res.Output)
	}
	reqs, _ := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if q := reqs[0].URL.Query(); len(q) != 1 || q.Get("q") != "1&admin=true" {
		t.Errorf("query %v: the value added a parameter", q)
	}
	if got := reqs[1].URL.EscapedPath(); got != "/api/x/a%20b&c=d" || reqs[1].URL.RawQuery != "" {
		t.Errorf("path %q query %q; want the value path-encoded in the path", got, reqs[1].URL.RawQuery)
	}
}

// TestHTTPFormBodyInjection performs a field injection in a form body
// (Content-Type application/x-www-form-urlencoded): a value with & and =
// stays the value of its field; a value whose last filter is urlquery is
// not encoded twice.
func TestHTTPFormBodyInjection(t *testing.T) {
	srv := newRecorder(t)
	src := "url: " + srv.URL + "/api\nmethod: POST\nallow_private: true\n" +
		"headers: {Content-Type: application/x-www-form-urlencoded}\n" +
		"body: 'text={{event.q}}&note={{event.n | urlquery}}&role=user'"
	if res, err := runStep(t, mustStep(t, "http", src, 0), stepEnv(t, map[string]any{"q": "hi&role=admin", "n": "a&b"})); err != nil {
		t.Fatalf("%v (output %q)", err, res.Output)
	}
	_, bodies := srv.requests()
	if len(bodies) != 1 {
		t.Fatalf("%d requests", len(bodies))
	}
	form, err := url.ParseQuery(bodies[0])
	if err != nil {
		t.Fatal(err)
	}
	if form.Get("text") != "hi&role=admin" || form.Get("note") != "a&b" || len(form["role"]) != 1 || form.Get("role") != "user" {
		t.Errorf("form %v from body %q: a value added a field", form, bodies[0])
	}
}
