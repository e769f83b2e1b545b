// Package authlimit limits how often a client may get hookd's API token
// wrong: the dashboard's password login counts each client's wrong
// tokens here, and past a few it waits before its next try is looked at.
package authlimit

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// Limits: a client may get the token wrong FreeFailures times; each
// failure after that locks it out for Lockout, doubling up to MaxLockout.
// A locked-out client's token is not even compared. A client's count is
// forgotten after a correct token, or Forget after its last failure when
// the table is full. Limit: the clients behind one key (a reverse proxy,
// every local user on 127.0.0.1, the hosts of one IPv6 /64) share one
// count, so one of them can lock the others out.
const (
	FreeFailures = 5
	Lockout      = 30 * time.Second
	MaxLockout   = 15 * time.Minute
	Forget       = time.Hour
	MaxClients   = 10000 // beyond it, the counts start again
)

type failures struct {
	n      int
	last   time.Time
	locked time.Time // until
}

// Limiter counts the wrong tokens of each client. Its zero value is not
// ready: use New.
type Limiter struct {
	mu      sync.Mutex
	clients map[string]*failures
}

// New returns a Limiter that counts no failure yet.
func New() *Limiter { return &Limiter{clients: map[string]*failures{}} }

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

// Wait is how long client must wait before its next token is looked at.
func (l *Limiter) Wait(client string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.clients[client]; f != nil && now.Before(f.locked) {
		return f.locked.Sub(now)
	}
	return 0
}

// Fail counts a wrong token of client.
func (l *Limiter) Fail(client string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.clients[client]
	if f == nil && len(l.clients) >= MaxClients {
		for c, f := range l.clients {
			if now.Sub(f.last) > Forget && !now.Before(f.locked) {
				delete(l.clients, c)
			}
		}
		if len(l.clients) >= MaxClients {
			clear(l.clients) // so many clients failing at once: start counting again
		}
	}
	if f == nil {
		f = &failures{}
		l.clients[client] = f
	}
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

// OK forgets client's failures after a correct token.
func (l *Limiter) OK(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.clients, client)
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
