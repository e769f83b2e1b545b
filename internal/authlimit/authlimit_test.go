package authlimit

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// clock is a test's clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func wrong() bool { return false }
func right() bool { return true }

// TestLimiter: a client may get the token wrong 5 times; then every try
// waits 30 s, the right token too, and is not compared; the wait doubles
// with each further failure up to 15 min. Out of its lockout a client's
// right token is accepted, but does not clear its count; an hour after
// its last failure the count is forgotten. Other clients are not held,
// and the memory is bounded.
func TestLimiter(t *testing.T) {
	c := &clock{t0}
	l := New(c.now)
	for i := range FreeFailures - 1 {
		if ok, w := l.Attempt("10.0.0.1", wrong); ok || w != 0 {
			t.Fatalf("wrong token %d: ok %v wait %s", i, ok, w)
		}
	}
	if ok, _ := l.Attempt("10.0.0.1", right); !ok {
		t.Fatalf("the right token after %d failures is refused", FreeFailures-1)
	}
	l.Attempt("10.0.0.1", wrong) // the 5th: a right token did not clear the count
	compared := false
	ok, w := l.Attempt("10.0.0.1", func() bool { compared = true; return true })
	if ok || w != Lockout || compared {
		t.Fatalf("the right token after %d failures: ok %v wait %s compared %v; want refused, %s, not compared", FreeFailures, ok, w, compared, Lockout)
	}
	if w := l.Wait("10.0.0.1"); w != Lockout {
		t.Errorf("Wait: %s", w)
	}
	if ok, _ := l.Attempt("10.0.0.2", right); !ok {
		t.Errorf("another client is held")
	}
	c.t = c.t.Add(Lockout)
	if ok, w := l.Attempt("10.0.0.1", right); !ok {
		t.Fatalf("the right token after the lockout: wait %s", w)
	}
	for i := 1; i <= 8; i++ {
		l.Attempt("10.0.0.1", wrong)
		want := min(Lockout<<i, MaxLockout)
		if _, w := l.Attempt("10.0.0.1", right); w != want {
			t.Fatalf("failure %d past the free ones: wait %s; want %s", i, w, want)
		}
		c.t = c.t.Add(want)
	}
	c.t = c.t.Add(Forget)
	for range FreeFailures - 1 {
		l.Attempt("10.0.0.1", wrong)
	}
	if w := l.Wait("10.0.0.1"); w != 0 {
		t.Errorf("the failures of an hour ago still count: locked %s after %d new ones", w, FreeFailures-1)
	}
	for i := range MaxClients + 50 {
		l.Attempt(fmt.Sprintf("client-%d", i), wrong)
	}
	if n := l.Size(); n > MaxClients {
		t.Errorf("%d clients kept; at most %d", n, MaxClients)
	}
	c.t = c.t.Add(Forget + MaxLockout) // the flood is forgotten
	// A flood of new clients does not free a locked-out one.
	for range FreeFailures {
		l.Attempt("2001:db8:9::/64", wrong)
	}
	for i := range MaxClients + 50 {
		l.Attempt(fmt.Sprintf("flood-%d", i), wrong)
	}
	if w := l.Wait("2001:db8:9::/64"); w != Lockout {
		t.Errorf("a flood of %d new clients freed a locked-out one: wait %s", MaxClients+50, w)
	}
	if RetryAfter(1500*time.Millisecond) != 2 || RetryAfter(30*time.Second) != 30 {
		t.Errorf("RetryAfter: %d %d", RetryAfter(1500*time.Millisecond), RetryAfter(30*time.Second))
	}
}

// TestLimiterFloodOfKeys is the attack of a client holding more keys
// than the table counts (the 65,536 /64s of an IPv6 /48): flooding the
// table must not give a counted client fresh tries, whether locked out
// or not, and the tries compared stay bounded by the table however many
// keys the attacker has; the table's memory is bounded. It pins down the
// price (documented): while the table is full, the clients not in it
// share one count, the right token of a new client included. Once the
// flood's counts are forgotten, a new client is served again.
func TestLimiterFloodOfKeys(t *testing.T) {
	c := &clock{t0}
	l := New(c.now)
	key := func(i int) string { // a client in its own /64, as authlimit.Client keys it
		return Client(fmt.Sprintf("[2001:db8:%x:%x::7]:40000", i>>16, i&0xffff))
	}
	compared := 0
	guess := func(client string) (bool, time.Duration) {
		return l.Attempt(client, func() bool { compared++; return false })
	}
	near, locked := Client("[2001:db8:ffff:1::1]:1"), Client("[2001:db8:ffff:2::1]:1")
	for range FreeFailures - 1 {
		guess(near) // one try short of its lockout
	}
	for range FreeFailures {
		guess(locked)
	}
	const keys = 3 * MaxClients
	for i := range keys {
		for range 2 * FreeFailures {
			guess(key(i))
		}
	}
	if _, w := guess(near); w == 0 && l.Wait(near) == 0 {
		t.Errorf("a flood of %d keys gave a client %d wrong tokens short of its lockout fresh tries: its next wrong one did not lock it out",
			keys, FreeFailures-1)
	}
	if w := l.Wait(locked); w <= 0 {
		t.Errorf("a flood of %d keys freed a locked-out client", keys)
	}
	// Each key the table counts gets FreeFailures tries, and so do all
	// the others together; the two clients above had 2*FreeFailures.
	if limit := MaxClients*FreeFailures + 2*FreeFailures; compared > limit {
		t.Errorf("%d keys with %d wrong tokens each had %d compared; at most %d", keys, 2*FreeFailures, compared, limit)
	}
	if n := l.Size(); n > MaxClients {
		t.Errorf("%d clients kept; at most %d", n, MaxClients)
	}
	fresh := Client("198.51.100.7:1")
	if ok, w := l.Attempt(fresh, right); ok || w <= 0 {
		t.Errorf("a new client while the table is full of counts: ok %v wait %s; want it to share the locked-out count of the rest", ok, w)
	}
	c.t = c.t.Add(Forget + MaxLockout)
	if ok, w := l.Attempt(fresh, right); !ok {
		t.Errorf("a new client once the flood is forgotten: refused, wait %s", w)
	}
	if _, w := guess(fresh); w != 0 || l.Wait(fresh) != 0 {
		t.Errorf("a new client's first wrong token once the flood is forgotten locked it out (%s): it shares a count still", l.Wait(fresh))
	}
}

// TestLimiterBurst sends 200 wrong tokens from one client at once: no
// more than FreeFailures of them are compared, whatever the interleaving.
func TestLimiterBurst(t *testing.T) {
	l := New(nil)
	var compared atomic.Int32
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			l.Attempt("2001:db8::/64", func() bool { compared.Add(1); return false })
		})
	}
	wg.Wait()
	if n := compared.Load(); n != FreeFailures {
		t.Errorf("%d of 200 simultaneous guesses were compared; want %d", n, FreeFailures)
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
