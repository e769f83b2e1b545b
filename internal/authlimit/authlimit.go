// Package authlimit limits how often a client may get hookd's API token
// wrong: the TCP API's bearer token and the dashboard's password login
// (the same token) count each client's wrong tokens in one Limiter, and
// past a few the client waits before its next try is looked at.
package authlimit

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// Limits: a client may get the token wrong FreeFailures times; each
// failure after that locks it out for Lockout, doubling up to MaxLockout.
// While it is locked out every try is refused and its token is not even
// compared — the right one too, or the answer would still tell a guess
// right from wrong. Out of its lockout, the right token is always
// accepted. A client's count is forgotten Forget after its last failure;
// a right token does not clear it, so an attacker sharing a key with a
// busy legitimate client gets no fresh tries from that client's
// requests, and a legitimate client recovers once its lockout ends (at
// most MaxLockout). Limit: the clients behind one key (a reverse proxy,
// every local user on 127.0.0.1, the hosts of one IPv6 /64) share one
// count, so one of them can lock the others out. At most MaxClients
// clients are counted; a count is dropped only once it is forgotten, so
// that a client holding more keys than that gets no fresh tries by
// flooding the table: while it is full, the clients not in it share one
// count (and can thus lock each other out).
const (
	FreeFailures = 5
	Lockout      = 30 * time.Second
	MaxLockout   = 15 * time.Minute
	Forget       = time.Hour
	MaxClients   = 10000 // counted at most; then the clients not counted share one count
)

type failures struct {
	n      int
	last   time.Time
	locked time.Time // until
}

// forgotten reports whether the count is dropped: its last failure is
// Forget old and its lockout is over.
func (f *failures) forgotten(now time.Time) bool {
	return now.Sub(f.last) >= Forget && !now.Before(f.locked)
}

// until is when the count is forgotten at the earliest.
func (f *failures) until() time.Time {
	if t := f.last.Add(Forget); t.After(f.locked) {
		return t
	}
	return f.locked
}

// Limiter counts the wrong tokens of each client. Its zero value is not
// ready: use New.
type Limiter struct {
	now     func() time.Time
	mu      sync.Mutex
	clients map[string]*failures
	// rest is the one count of the clients that found the table full;
	// sweepAt is when a count of the full table is forgotten at the
	// earliest (until then a new client is not worth a sweep).
	rest    failures
	sweepAt time.Time
}

// New returns a Limiter that counts no failure yet, on the clock now
// (nil: time.Now).
func New(now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{now: now, clients: map[string]*failures{}}
}

// Client is the key a request's failures count under, from its remote
// address (host:port, or a bare address): an IPv4 address as it is (an
// IPv4-mapped IPv6 address as the IPv4 one), and an IPv6 address as its
// /64, the block one subscriber is given, so that a client rotating its
// addresses through its /64 is still one client. What is not an address
// is its own key.
func Client(remoteAddr string) string {
	host := remoteAddr
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.WithZone("").Unmap()
	if ip.Is4() {
		return ip.String()
	}
	p, err := ip.Prefix(64)
	if err != nil {
		return ip.String()
	}
	return p.String()
}

// Attempt is the one decision on a try of client's: while client is
// locked out, it is refused (ok false) with the wait before the next
// try is looked at, and right is not called; otherwise right compares
// the token: a wrong one is counted (ok false, wait 0), a right one is
// accepted (ok true). right is called under the limiter's lock, so that
// tries sent at once are decided one after the other: no more than
// FreeFailures of them are compared before the lockout (right must be
// quick: a constant-time comparison).
func (l *Limiter) Attempt(client string, right func() bool) (ok bool, wait time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.entry(client, now)
	if f != nil && now.Before(f.locked) {
		return false, f.locked.Sub(now)
	}
	if right() {
		return true, 0
	}
	if f == nil {
		f = &failures{}
		l.clients[client] = f
	}
	f.fail(now)
	return false, 0
}

// Wait is how long client must wait before its next token is looked at
// (0: it is not locked out).
func (l *Limiter) Wait(client string) time.Duration {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.entry(client, now); f != nil && now.Before(f.locked) {
		return f.locked.Sub(now)
	}
	return 0
}

// entry returns the count client's tries are decided by: its own; nil
// when it has none yet and the table has a place for it; else, the table
// being full of counts not yet forgotten, the shared count of the rest.
func (l *Limiter) entry(client string, now time.Time) *failures {
	if f := l.clients[client]; f != nil {
		if !f.forgotten(now) {
			return f
		}
		delete(l.clients, client)
		return nil
	}
	if len(l.clients) < MaxClients || l.sweep(now) {
		return nil
	}
	if l.rest.forgotten(now) {
		l.rest = failures{}
	}
	return &l.rest
}

// sweep drops the forgotten counts of a full table, and reports whether
// that freed a place. A count still kept is never dropped: were the
// counts of clients not locked out dropped (or all of them), a client
// holding more keys than MaxClients would get fresh tries for each of
// them by flooding the table, without end. A sweep that freed nothing is
// not repeated before a count can be forgotten (counts are only ever
// forgotten later), so that a flood pays for one scan at most that often.
func (l *Limiter) sweep(now time.Time) bool {
	if now.Before(l.sweepAt) {
		return false
	}
	var next time.Time
	for c, f := range l.clients {
		if f.forgotten(now) {
			delete(l.clients, c)
		} else if u := f.until(); next.IsZero() || u.Before(next) {
			next = u
		}
	}
	if len(l.clients) < MaxClients {
		return true
	}
	l.sweepAt = next
	return false
}

// fail counts a wrong token at now.
func (f *failures) fail(now time.Time) {
	f.n++
	f.last = now
	if over := f.n - FreeFailures; over >= 0 {
		d := Lockout
		for i := 0; i < over && d < MaxLockout; i++ {
			d *= 2
		}
		f.locked = now.Add(min(d, MaxLockout))
	}
}

// Size is how many clients have failures counted.
func (l *Limiter) Size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}

// RetryAfter is a wait in whole seconds, rounded up, for a Retry-After
// header.
func RetryAfter(wait time.Duration) int { return int((wait + time.Second - 1) / time.Second) }
