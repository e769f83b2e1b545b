package main

import (
	"bufio"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// sessionStream is an event stream a browser opened with its session
// cookie, read line by line.
type sessionStream struct {
	t     *testing.T
	resp  *http.Response
	lines *bufio.Reader
}

// openSessionStream opens GET /v1/stream of the deploy.* events (those
// the test emits; not the runs they start, which come later) with b's
// session cookie and reads up to the comment that says where it starts.
func openSessionStream(t *testing.T, b *browser) *sessionStream {
	t.Helper()
	req, err := http.NewRequest("GET", b.base+"/v1/stream?type=deploy.*", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: b.cookieName(), Value: b.cookie})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/stream with the session: %d", resp.StatusCode)
	}
	s := &sessionStream{t: t, resp: resp, lines: bufio.NewReader(resp.Body)}
	for l := s.next(); !strings.HasPrefix(l, ": hookd event stream"); l = s.next() {
		if l == "" {
			t.Fatal("the stream ended before its first comment")
		}
	}
	return s
}

// next returns the stream's next line that is not empty, "" at its end.
func (s *sessionStream) next() string {
	for {
		l, err := s.lines.ReadString('\n')
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
		if err != nil {
			return ""
		}
	}
}

// event reads up to the next event's data.
func (s *sessionStream) event() string {
	s.t.Helper()
	for {
		l := s.next()
		if l == "" {
			s.t.Fatal("the stream ended; want an event")
		}
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			return d
		}
	}
}

// ended reads the stream to its end: it must deliver no event on the way
// and say that the session ended.
func (s *sessionStream) ended(why string) {
	s.t.Helper()
	var rest []string
	for l := s.next(); l != ""; l = s.next() {
		rest = append(rest, l)
		if strings.HasPrefix(l, "data: ") {
			s.t.Fatalf("after %s the open stream delivered an event: %q", why, rest)
		}
	}
	if len(rest) == 0 || rest[len(rest)-1] != ": the session ended" {
		s.t.Errorf("after %s the stream ended with %q, want the comment that the session ended", why, rest)
	}
}

// TestStreamEndsWithSession performs the attack on the live stream over
// real HTTP against a real daemon: a browser's stream, open with its
// session cookie, keeps delivering events after the session is gone.
// Logging out ends it at once (it delivers nothing more and closes), and
// so does a new login of the same browser, which replaces (rotates) its
// session id: the old cookie then opens nothing, the new one does.
func TestStreamEndsWithSession(t *testing.T) {
	e, _, addr := dashEnv(t)
	b := newBrowser(t, addr)
	if p := b.login(testToken); p.code != 303 {
		t.Fatalf("login: %d", p.code)
	}

	// Logout.
	s := openSessionStream(t, b)
	e.must(0, "emit", "deploy.finished", "who=before")
	if d := s.event(); !strings.Contains(d, "before") {
		t.Fatalf("the stream delivered %s, want the event emitted", d)
	}
	if p := b.do("POST", "/logout", url.Values{"csrf": {b.csrf()}}); p.code != 303 {
		t.Fatalf("logout: %d", p.code)
	}
	e.must(0, "emit", "deploy.finished", "who=after-logout")
	s.ended("logout")

	// A new login of the same browser rotates its session.
	b.cookie = ""
	if p := b.login(testToken); p.code != 303 {
		t.Fatalf("login: %d", p.code)
	}
	old := b.cookie
	s = openSessionStream(t, b)
	if p := b.login(testToken); p.code != 303 || b.cookie == old {
		t.Fatalf("second login: %d, cookie rotated: %v", p.code, b.cookie != old)
	}
	e.must(0, "emit", "deploy.finished", "who=after-rotation")
	s.ended("a new login")
	if code := streamStatus(t, &browser{t: t, base: b.base, cookie: old}, addr); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/stream with the replaced session's cookie: %d, want 401", code)
	}
	if code := streamStatus(t, b, addr); code != http.StatusOK {
		t.Errorf("GET /v1/stream with the new session's cookie: %d, want 200", code)
	}
}
