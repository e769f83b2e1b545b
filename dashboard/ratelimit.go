package dashboard

import (
	"net"
	"sync"
	"time"
)

// Limits of password logins: a client (an IP address) may get the token
// wrong loginFreeFailures times; each failure after that locks its logins
// for loginLockout, doubling up to loginMaxLockout. A locked client's
// token is not even compared. A client's count is forgotten after a
// correct login, or loginForget after its last failure (when the table
// is full). Limit: the clients behind one address (a reverse proxy, every
// local user on 127.0.0.1) share one count, so a local process can lock
// the password login out; the one-time links of hookd ui are not limited
// (their codes are 256 random bits, good once).
const (
	loginFreeFailures = 5
	loginLockout      = 30 * time.Second
	loginMaxLockout   = 15 * time.Minute
	loginForget       = time.Hour
	maxLoginClients   = 10000 // beyond it, the counts start again
)

type loginFailures struct {
	n      int
	last   time.Time
	locked time.Time // until
}

// loginLimiter counts the failed logins of each client.
type loginLimiter struct {
	mu      sync.Mutex
	clients map[string]*loginFailures
}

func newLoginLimiter() *loginLimiter { return &loginLimiter{clients: map[string]*loginFailures{}} }

// clientOf is the key a request's failures count under: its IP address.
func clientOf(remoteAddr string) string {
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return h
	}
	return remoteAddr
}

// wait is how long client must wait before its next login is looked at.
func (l *loginLimiter) wait(client string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.clients[client]; f != nil && now.Before(f.locked) {
		return f.locked.Sub(now)
	}
	return 0
}

// fail counts a wrong token.
func (l *loginLimiter) fail(client string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.clients[client]
	if f == nil && len(l.clients) >= maxLoginClients {
		for c, f := range l.clients {
			if now.Sub(f.last) > loginForget && !now.Before(f.locked) {
				delete(l.clients, c)
			}
		}
		if len(l.clients) >= maxLoginClients {
			clear(l.clients) // so many clients failing at once: start counting again
		}
	}
	if f == nil {
		f = &loginFailures{}
		l.clients[client] = f
	}
	f.n++
	f.last = now
	if over := f.n - loginFreeFailures; over >= 0 {
		d := loginLockout
		for i := 0; i < over && d < loginMaxLockout; i++ {
			d *= 2
		}
		f.locked = now.Add(min(d, loginMaxLockout))
	}
}

// ok forgets client's failures after a correct login.
func (l *loginLimiter) ok(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.clients, client)
}

func (l *loginLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}
