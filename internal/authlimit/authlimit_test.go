package authlimit

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// TestLimiter: a client may get the token wrong 5 times; then it waits
// 30 s, doubling with each further failure up to 15 min; a correct token
// forgets its failures, other clients are not held, and the memory is
// bounded.
func TestLimiter(t *testing.T) {
	now := t0
	l := New()
	for range FreeFailures - 1 {
		l.Fail("10.0.0.1", now)
	}
	if w := l.Wait("10.0.0.1", now); w != 0 {
		t.Fatalf("locked after %d failures: %s", FreeFailures-1, w)
	}
	l.Fail("10.0.0.1", now)
	if w := l.Wait("10.0.0.1", now); w != Lockout {
		t.Fatalf("after %d failures: wait %s; want %s", FreeFailures, w, Lockout)
	}
	if w := l.Wait("10.0.0.2", now); w != 0 {
		t.Errorf("another client waits %s", w)
	}
	now = now.Add(Lockout)
	if w := l.Wait("10.0.0.1", now); w != 0 {
		t.Fatalf("still locked after the lockout: %s", w)
	}
	for i := 1; i <= 8; i++ {
		l.Fail("10.0.0.1", now)
		want := min(Lockout<<i, MaxLockout)
		if w := l.Wait("10.0.0.1", now); w != want {
			t.Fatalf("failure %d past the free ones: wait %s; want %s", i, w, want)
		}
		now = now.Add(want)
	}
	l.OK("10.0.0.1")
	if w := l.Wait("10.0.0.1", now); w != 0 {
		t.Errorf("locked after a correct token: %s", w)
	}
	for i := range MaxClients + 50 {
		l.Fail(fmt.Sprintf("client-%d", i), now)
	}
	if n := l.Size(); n > MaxClients {
		t.Errorf("%d clients kept; at most %d", n, MaxClients)
	}
	if RetryAfter(1500*time.Millisecond) != 2 || RetryAfter(30*time.Second) != 30 {
		t.Errorf("RetryAfter: %d %d", RetryAfter(1500*time.Millisecond), RetryAfter(30*time.Second))
	}
}

// TestClient: IPv4 clients count by address, IPv4-mapped IPv6 as the IPv4
// address, IPv6 clients by their /64 (zone and port dropped).
func TestClient(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:80":                   "127.0.0.1",
		"10.1.2.3":                       "10.1.2.3",
		"[::ffff:10.1.2.3]:443":          "10.1.2.3",
		"[::1]:5555":                     "::/64",
		"[2001:db8:1:2::1]:1":            "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff:ee:dd:cc]:2": "2001:db8:1:2::/64",
		"2001:db8:1:3::1":                "2001:db8:1:3::/64",
		"[fe80::1%eth0]:9":               "fe80::/64",
		"@":                              "@",
	} {
		if got := Client(in); got != want {
			t.Errorf("Client(%q) = %q; want %q", in, got, want)
		}
	}
}
