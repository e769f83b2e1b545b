package dashboard

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/hookd/hookd/clock/clocktest"
	"github.com/hookd/hookd/internal/authlimit"
)

// loginSource is the dashboard's source in a test of the login alone,
// which reads nothing from it: a call would panic on the nil interface.
type loginSource struct{ Source }

// TestLoginLimitIPv6Rotation performs the rotation attack on the password
// login: each wrong token comes from another address of one IPv6 /64 (as
// a client does that owns the /64), and the next try — from yet another
// address of it, with the right token — is refused with 429 and
// Retry-After, no session given. A client in another /64 logs in. An
// IPv4 client and its IPv4-mapped IPv6 form are one client. The request
// addresses are set on the requests: a test cannot own a /64.
func TestLoginLimitIPv6Rotation(t *testing.T) {
	const token = "s3cret-token-0123456789abcdef"
	s, err := New(Options{Source: loginSource{}, Login: true, Token: token, Clock: &clocktest.Clock{}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Register(mux)
	login := func(remote, tok string) *httptest.ResponseRecorder {
		t.Helper()
		form := url.Values{"token": {tok}, "next": {"/hooks"}}
		req := httptest.NewRequest("POST", "http://127.0.0.1:8787/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://127.0.0.1:8787")
		req.RemoteAddr = remote
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		return w
	}
	loggedIn := func(w *httptest.ResponseRecorder) bool {
		return w.Code == http.StatusSeeOther && strings.Contains(w.Header().Get("Set-Cookie"), "hookd_session")
	}
	for i := range authlimit.FreeFailures {
		remote := fmt.Sprintf("[2001:db8:1:2:%x:%x::1]:%d", i+1, 7*i+3, 40000+i)
		if w := login(remote, fmt.Sprintf("guess-%d", i)); w.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d from %s: %d", i, remote, w.Code)
		}
	}
	w := login("[2001:db8:1:2:ffff:ffff:ffff:fffe]:50000", token)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "30" || w.Header().Get("Set-Cookie") != "" {
		t.Fatalf("the right token from a new address of the same /64: %d, Retry-After %q, Set-Cookie %q",
			w.Code, w.Header().Get("Retry-After"), w.Header().Get("Set-Cookie"))
	}
	if w := login("[2001:db8:1:3::1]:50000", token); !loggedIn(w) {
		t.Errorf("a client of another /64 is held: %d", w.Code)
	}

	for i := range authlimit.FreeFailures {
		remote := "10.0.0.7:1234"
		if i%2 == 1 {
			remote = "[::ffff:10.0.0.7]:1234"
		}
		if w := login(remote, "guess"); w.Code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d from %s: %d", i, remote, w.Code)
		}
	}
	for _, remote := range []string{"10.0.0.7:999", "[::ffff:10.0.0.7]:999"} {
		if w := login(remote, token); w.Code != http.StatusTooManyRequests {
			t.Errorf("the right token from %s after five wrong ones from 10.0.0.7 in both forms: %d", remote, w.Code)
		}
	}
	if w := login("10.0.0.8:999", token); !loggedIn(w) {
		t.Errorf("10.0.0.8 is held: %d", w.Code)
	}
}
