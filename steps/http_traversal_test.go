package steps

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestHTTPPathTraversal performs a path traversal through a URL's path
// against a real server that cleans paths (net/http's ServeMux, which
// redirects /a/../b to /b, a redirect the step follows): a value that
// makes a "." or ".." segment — bare, behind an encoded slash or
// backslash, encoded twice, or split over two placeholders — fails the
// step, and the server sees no request outside the path the hook wrote.
func TestHTTPPathTraversal(t *testing.T) {
	var mu sync.Mutex
	var outside []string
	mux := http.NewServeMux()
	mux.HandleFunc("/api/users/{id}/profile", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("profile of " + r.PathValue("id")))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		outside = append(outside, r.URL.Path)
		mu.Unlock()
		w.Write([]byte("outside: " + r.URL.Path))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	step := func(path string) string {
		return "url: '" + srv.URL + path + "'\nallow_private: true"
	}
	one := step("/api/users/{{event.a}}/profile")
	two := step("/api/users/{{event.a}}{{event.b}}/profile")
	dot := step("/api/users/.{{event.a}}/profile")
	for _, a := range []struct {
		name, src string
		event     map[string]any
	}{
		{"..", one, map[string]any{"a": ".."}},
		{".", one, map[string]any{"a": "."}},
		{"../../admin", one, map[string]any{"a": "../../admin"}},
		{`..\admin`, one, map[string]any{"a": `..\..\admin`}},
		{"..%2F..%2Fadmin", one, map[string]any{"a": "..%2F..%2Fadmin"}},
		{"%2e%2e", one, map[string]any{"a": "%2e%2e"}},
		{"the urlquery filter", step("/api/users/{{event.a | urlquery}}/profile"), map[string]any{"a": ".."}},
		{"two placeholders", two, map[string]any{"a": ".", "b": "."}},
		{"after a literal dot", dot, map[string]any{"a": "."}},
	} {
		res, err := runStep(t, mustStep(t, "http", a.src, 0), stepEnv(t, a.event))
		if err == nil || !strings.Contains(err.Error(), "path traversal") {
			t.Errorf("%s: not refused: %v (output %q)", a.name, err, res.Output)
		}
	}
	mu.Lock()
	if len(outside) > 0 {
		t.Errorf("the server was reached outside /api/users/: %q", outside)
	}
	mu.Unlock()
	// Values with dots that make no dot segment pass, and a dot segment
	// the hook wrote itself stays its own.
	for _, v := range []string{"a.b", "...", "x..", "v1.2/..x"} {
		res, err := runStep(t, mustStep(t, "http", one, 0), stepEnv(t, map[string]any{"a": v}))
		if err != nil || res.Output != "profile of "+v {
			t.Errorf("%q: %v, output %q", v, err, res.Output)
		}
	}
	res, err := runStep(t, mustStep(t, "http", step("/api/x/../users/{{event.a}}/profile"), 0), stepEnv(t, map[string]any{"a": "bob"}))
	if err != nil || res.Output != "profile of bob" {
		t.Errorf("a dot segment of the hook's own: %v, output %q", err, res.Output)
	}
}
