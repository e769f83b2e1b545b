package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// headerLog is a loopback HTTP server that logs the Authorization and
// Referer headers of each request it hears.
type headerLog struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string
}

func newHeaderLog(t *testing.T, h http.Handler) *headerLog {
	l := &headerLog{}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Method+" "+r.URL.Path+" Authorization="+r.Header.Get("Authorization")+" Referer="+r.Header.Get("Referer"))
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(l.srv.Close)
	return l
}

func (l *headerLog) heard() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// TestRedirectToAnotherOrigin: an MCP server over HTTP that redirects to a
// second loopback server on another port (another origin) does not get
// hookd's configured Authorization header (or its URL as Referer) sent
// there; the start fails naming both origins.
func TestRedirectToAnotherOrigin(t *testing.T) {
	collector := newHeaderLog(t, http.NotFoundHandler())
	hostile := newHeaderLog(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, collector.srv.URL+"/collect", http.StatusTemporaryRedirect)
	}))
	m := newManager(t, []string{"MCP_KEY=k-s3cr3t"}, mcp.ServerConfig{Name: "web", URL: hostile.srv.URL + "/mcp",
		Headers: map[string]string{"Authorization": "Bearer ${MCP_KEY}"}, StartTimeout: 10 * time.Second})
	_, err := m.Tools(context.Background(), "web")
	if heard := collector.heard(); len(heard) != 0 {
		t.Fatalf("the other origin heard %q", heard)
	}
	if err == nil {
		t.Fatal("the server started")
	}
	for _, want := range []string{"refused a redirect", hostile.srv.URL, collector.srv.URL} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
}

// TestRedirectWithinOrigin: a redirect to the server's own origin is
// followed with the configured headers, and without a Referer.
func TestRedirectWithinOrigin(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "moved", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "hello", Description: "Say hello."},
		func(_ context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hello"}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	srv := newHeaderLog(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/old":
			http.Redirect(w, r, "/mcp", http.StatusPermanentRedirect)
		case r.Header.Get("Authorization") != "Bearer k-1" || r.Header.Get("Referer") != "":
			http.Error(w, "unauthorized, or a Referer", http.StatusUnauthorized)
		default:
			h.ServeHTTP(w, r)
		}
	}))
	m := newManager(t, []string{"MCP_KEY=k-1"}, mcp.ServerConfig{Name: "web", URL: srv.srv.URL + "/old",
		Headers: map[string]string{"Authorization": "Bearer ${MCP_KEY}"}})
	tools := resolve(t, m, "web.hello")
	if out, err := call(t, tools["web.hello"], `{}`); err != nil || out != "hello" {
		t.Errorf("hello: %q %v (the server heard %q)", out, err, srv.heard())
	}
}
