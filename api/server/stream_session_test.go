package server

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/clock/clocktest"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
)

// TestStreamEndsAtSessionExpiry: a browser's event stream, opened over
// real HTTP with the session cookie of a real login, delivers events while
// the session lives; once the session has expired (by the dashboard's
// clock, moved past its 24 hours) the stream sends nothing more, says the
// session ended and closes, and the cookie opens no new stream. Before,
// the open stream kept delivering.
func TestStreamEndsAtSessionExpiry(t *testing.T) {
	t.Parallel()
	const token = "test-token-0123456789abcdef"
	db, err := store.Open(filepath.Join(t.TempDir(), "hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clk := &clocktest.Clock{}
	feed := NewFeed()
	a, err := New(Options{Store: db, Feed: feed, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Token: token, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	srv, addr, err := a.ServeTCP("127.0.0.1:0", token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	base := "http://" + addr.String()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	// Log in with the token, as the login form does.
	req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(url.Values{"token": {token}, "next": {"/"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if strings.HasPrefix(c.Name, "hookd_session") && c.Value != "" {
			cookie = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || cookie == nil {
		t.Fatalf("login: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	openStream := func() *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/v1/stream", nil)
		req.AddCookie(&http.Cookie{Name: cookie.Name, Value: cookie.Value})
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	emit := func(id string) {
		t.Helper()
		if err := db.AppendEvent(context.Background(), &engine.Event{ID: id, Type: "deploy.finished", Source: "api", Time: clk.Now()}); err != nil {
			t.Fatal(err)
		}
		feed.Wake()
	}

	stream := openStream()
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/stream with the session: %d", stream.StatusCode)
	}
	lines := bufio.NewReader(stream.Body)
	// next reads the stream's next line that is not empty; "" at its end.
	next := func() string {
		t.Helper()
		for {
			l, err := lines.ReadString('\n')
			if l = strings.TrimSpace(l); l != "" {
				return l
			}
			if err != nil {
				return ""
			}
		}
	}
	for l := next(); !strings.HasPrefix(l, ": hookd event stream"); l = next() {
		if l == "" {
			t.Fatal("the stream ended before its first comment")
		}
	}
	emit("live")
	if l := next(); !strings.HasPrefix(l, "id: ") {
		t.Fatalf("the live session's stream sent %q, want the event", l)
	}
	if l := next(); !strings.Contains(l, `"id":"live"`) {
		t.Fatalf("the live session's stream sent %q, want the event's data", l)
	}

	clk.Jump(24*time.Hour + time.Second) // past the session's life
	emit("after-expiry")
	var rest []string
	for l := next(); l != ""; l = next() {
		rest = append(rest, l)
		if strings.Contains(l, "after-expiry") {
			t.Fatalf("the stream of an expired session delivered an event: %q", rest)
		}
	}
	if len(rest) != 1 || rest[0] != ": the session ended" {
		t.Errorf("the stream's end: %q, want the comment that the session ended", rest)
	}
	again := openStream()
	again.Body.Close()
	if again.StatusCode != http.StatusUnauthorized {
		t.Errorf("a new stream with the expired session's cookie: %d, want 401", again.StatusCode)
	}
}
