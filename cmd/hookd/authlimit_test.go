package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/authlimit"
)

// ipv6Loopback skips the test when this machine has no IPv6 loopback.
func ipv6Loopback(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here (%v): the rotation within a /64 is tested in package dashboard", err)
	}
	ln.Close()
}

// TestDashboardLoginLimitIPv6 guesses the token over IPv6 against the real
// daemon listening on [::1]: every guess comes on a new connection (a new
// source port), and after five the right token is refused with 429 and
// Retry-After; the client is keyed by its /64 (::/64 for ::1).
func TestDashboardLoginLimitIPv6(t *testing.T) {
	ipv6Loopback(t)
	e := newEnv(t, "listen: \"[::1]:0\"\n", dashHooks)
	e.environ = []string{"HOOKD_TOKEN=" + testToken}
	d := e.serve()
	addr := d.tcpAddr()
	if !strings.HasPrefix(addr, "[::1]:") {
		t.Fatalf("listening on %s; want [::1]", addr)
	}
	b := newBrowser(t, addr)
	for i := range 5 {
		if p := b.login(fmt.Sprintf("guess-%d", i)); p.code != 401 || b.cookie != "" {
			t.Fatalf("wrong token %d: %d cookie %q", i, p.code, b.cookie)
		}
	}
	p := b.login(testToken)
	if p.code != 429 || b.cookie != "" || p.hdr.Get("Retry-After") == "" {
		t.Fatalf("login over IPv6 after 5 wrong tokens: %d, Retry-After %q, cookie %q", p.code, p.hdr.Get("Retry-After"), b.cookie)
	}
	if !strings.Contains(d.log.String(), "login with a wrong token") {
		t.Errorf("the wrong tokens were not logged:\n%s", d.log)
	}
}

// TestAPITokenLimit guesses the bearer token over real TCP against the
// real daemon. Four wrong tokens, then the right one: served (a client
// under the limit is not held, and its failures still count). One more
// wrong token and the client is locked out: the right token then gets 429
// with Retry-After and is not looked at — a fire sent with it starts
// nothing — and so does a guess sent to /healthz (no oracle there) and
// the dashboard's password login (one count for the one token). /healthz
// without a token, another client (127.0.0.2) and the unix socket still
// work.
func TestAPITokenLimit(t *testing.T) {
	e, d, addr := dashEnv(t)
	good, bad := tcpClient(t, addr, testToken), tcpClient(t, addr, "wrong-token-0123456789abcdef")
	for i := range authlimit.FreeFailures - 1 {
		if code, b := bad.call("GET", "/v1/hooks", nil); code != 401 || !strings.Contains(string(b), "wrong bearer token") {
			t.Fatalf("wrong token %d: %d %s", i, code, b)
		}
	}
	if code, b := good.call("GET", "/v1/hooks", nil); code != 200 {
		t.Fatalf("the right token after %d wrong ones: %d %s", authlimit.FreeFailures-1, code, b)
	}
	if code, _ := bad.call("GET", "/v1/status", nil); code != 401 {
		t.Fatalf("wrong token %d: %d", authlimit.FreeFailures, code)
	}

	code, b, hdr := good.callH("POST", "/v1/hooks/hello/fire", map[string]any{"event": map[string]any{"who": "locked"}})
	secs, _ := strconv.Atoi(hdr.Get("Retry-After"))
	if code != 429 || secs < 1 || secs > int(authlimit.Lockout/time.Second) || !strings.Contains(string(b), "too many wrong bearer tokens") {
		t.Fatalf("a fire with the right token during the lockout: %d Retry-After %q %s", code, hdr.Get("Retry-After"), b)
	}
	if code, b, hdr := bad.callH("GET", "/healthz", nil); code != 429 || hdr.Get("Retry-After") == "" {
		t.Errorf("a guess sent to /healthz during the lockout: %d %s", code, b)
	}
	if code, b := tcpClient(t, addr, "").call("GET", "/healthz", nil); code != 200 || string(b) != `{"status":"ok"}`+"\n" {
		t.Errorf("/healthz without a token during the lockout: %d %q", code, b)
	}
	if p := newBrowser(t, addr).login(testToken); p.code != 429 {
		t.Errorf("the dashboard's login with the right token during the API's lockout: %d", p.code)
	}

	// Another client is not held.
	other := tcpClient(t, addr, testToken)
	other.http = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		dl := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
		return dl.DialContext(ctx, network, a)
	}}}
	if c, err := net.DialTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, mustTCPAddr(t, addr)); err != nil {
		t.Logf("cannot connect from 127.0.0.2 (%v): another client is tested in TestAPITokenLockoutEnds", err)
	} else {
		c.Close()
		if code, b := other.call("GET", "/v1/hooks", nil); code != 200 {
			t.Errorf("another client (127.0.0.2) with the right token: %d %s", code, b)
		}
	}
	// The unix socket has no token: the lockout is the TCP listener's.
	e.must(0, "status")
	if runs := e.listRuns("hello"); len(runs) != 0 {
		t.Errorf("the fire refused with 429 started %d run(s)", len(runs))
	}
	if n := strings.Count(d.log.String(), "wrong bearer token"); n < 1 {
		t.Errorf("the wrong tokens were not logged:\n%s", d.log)
	}
}

func mustTCPAddr(t *testing.T, addr string) *net.TCPAddr {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
