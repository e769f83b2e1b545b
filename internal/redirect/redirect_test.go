package redirect

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

func TestSameOrigin(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/other?x=1", true},
		{"http://example.com/a", "http://EXAMPLE.com:80/b", true},
		{"https://example.com/a", "HTTPS://example.com:443/b", true},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8081/", false},
		{"http://127.0.0.1:8080/", "http://localhost:8080/", false},
		{"https://example.com/", "http://example.com/", false},
		{"https://example.com/", "https://example.com:8443/", false},
		{"https://hooks.example.com/", "https://example.com/", false},
		{"http://[::1]:8080/", "http://[::1]:8080/x", true},
	} {
		a, _ := url.Parse(c.a)
		b, _ := url.Parse(c.b)
		if got := SameOrigin(a, b); got != c.same {
			t.Errorf("SameOrigin(%s, %s) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

// peer is a loopback HTTP server that logs the headers of each request.
type peer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []http.Header
}

func newPeer(t *testing.T, h http.HandlerFunc) *peer {
	p := &peer{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.Header.Clone())
		p.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *peer) heard() []http.Header {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]http.Header(nil), p.seen...)
}

// TestClient sends a request with a credential to a server that
// redirects within its origin (followed, headers kept, no Referer) and to
// a second loopback server on another port (refused; it hears nothing).
func TestClient(t *testing.T) {
	other := newPeer(t, func(w http.ResponseWriter, r *http.Request) {})
	first := newPeer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/landing", http.StatusTemporaryRedirect)
		case "/away":
			http.Redirect(w, r, other.URL+"/collect", http.StatusTemporaryRedirect)
		}
	})
	c := Client(&http.Client{})
	get := func(path string) error {
		req, _ := http.NewRequest(http.MethodGet, first.URL+path+"?token=s3cr3t", nil)
		req.Header.Set("Authorization", "Bearer s3cr3t")
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}

	if err := get("/same"); err != nil {
		t.Fatalf("same-origin redirect: %v", err)
	}
	seen := first.heard()
	if len(seen) != 2 || seen[1].Get("Authorization") != "Bearer s3cr3t" || seen[1].Get("Referer") != "" {
		t.Errorf("same-origin redirect: the landing heard %v, want the Authorization header and no Referer", seen)
	}

	err := get("/away")
	var refused *RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("cross-origin redirect: got %v, want a RefusedError", err)
	}
	for _, want := range []string{first.URL, other.URL} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s: %v", want, err)
		}
	}
	if strings.Contains(refused.Error(), "s3cr3t") {
		t.Errorf("the error shows the query: %v", refused)
	}
	if h := other.heard(); len(h) != 0 {
		t.Errorf("the other origin heard %v", h)
	}
}

// TestClientKeepsOwnCheck: a base client's CheckRedirect still applies
// within the origin.
func TestClientKeepsOwnCheck(t *testing.T) {
	p := newPeer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			http.Redirect(w, r, "/next", http.StatusFound)
		}
	})
	c := Client(&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }})
	resp, err := c.Get(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || len(p.heard()) != 1 {
		t.Errorf("got %s after %d requests, want the 302 itself", resp.Status, len(p.heard()))
	}
}
