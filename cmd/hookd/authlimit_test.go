package main

import (
	"fmt"
	"net"
	"strings"
	"testing"
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
