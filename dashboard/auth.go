package dashboard

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Limits of sessions and one-time login codes. Both live in memory: a
// restart of the daemon logs every browser out.
const (
	sessionTTL  = 24 * time.Hour
	maxSessions = 1000 // the oldest is forgotten when a login would exceed it
	codeTTL     = 5 * time.Minute
	maxCodes    = 100

	sessionCookie = "hookd_session" // and _PORT (sessionCookieName)
	csrfField     = "csrf"
)

// session is a logged-in browser.
type session struct {
	csrf    string
	expires time.Time
	seq     uint64        // the order of the logins
	ended   chan struct{} // closed when the session ends (sessions.end); nil for the local session, which never does
}

// sessions holds the logged-in browsers and the one-time login codes.
type sessions struct {
	now func() time.Time

	mu    sync.Mutex
	seq   uint64
	byID  map[string]*session
	codes map[string]time.Time // one-time login code -> expiry
}

func newSessions(now func() time.Time) *sessions {
	return &sessions{now: now, byID: map[string]*session{}, codes: map[string]time.Time{}}
}

// randomToken returns 32 random bytes, base64url.
func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("dashboard: read random bytes: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// open starts a session and returns its id.
func (s *sessions) open() (string, *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for id, ss := range s.byID {
		if now.After(ss.expires) {
			s.end(id, ss)
		}
	}
	for len(s.byID) >= maxSessions {
		var oldest string
		for id, ss := range s.byID {
			if oldest == "" || ss.seq < s.byID[oldest].seq {
				oldest = id
			}
		}
		s.end(oldest, s.byID[oldest])
	}
	id := randomToken()
	s.seq++
	ss := &session{csrf: randomToken(), expires: now.Add(sessionTTL), seq: s.seq, ended: make(chan struct{})}
	s.byID[id] = ss
	return id, ss
}

// get returns the live session of id, or nil.
func (s *sessions) get(id string) *session {
	if id == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.byID[id]
	if ss == nil {
		return nil
	}
	if s.now().After(ss.expires) {
		s.end(id, ss)
		return nil
	}
	return ss
}

// close ends the session id (a logout, or a new login of its browser).
func (s *sessions) close(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.byID[id]; ss != nil {
		s.end(id, ss)
	}
}

// end forgets the session id and closes its ended channel, ending the
// event streams it holds open. The caller holds s.mu. Every way a session
// ends comes here: logout, a new login replacing it, expiry (found by
// get or open), and eviction of the oldest.
func (s *sessions) end(id string, ss *session) {
	delete(s.byID, id)
	close(ss.ended)
}

// newCode returns a one-time login code, good for codeTTL.
func (s *sessions) newCode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for c, exp := range s.codes {
		if now.After(exp) {
			delete(s.codes, c)
		}
	}
	for len(s.codes) >= maxCodes {
		var oldest string
		for c, exp := range s.codes {
			if oldest == "" || exp.Before(s.codes[oldest]) {
				oldest = c
			}
		}
		delete(s.codes, oldest)
	}
	c := randomToken()
	s.codes[c] = now.Add(codeTTL)
	return c
}

// codeValid reports whether useCode would take c now, without using it.
func (s *sessions) codeValid(c string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.codes[c]
	return ok && !s.now().After(exp)
}

// useCode consumes a one-time login code: true once, for a code given out
// less than codeTTL ago.
func (s *sessions) useCode(c string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.codes[c]
	if !ok {
		return false
	}
	delete(s.codes, c)
	return !s.now().After(exp)
}

func (s *sessions) count() (sessions, codes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID), len(s.codes)
}

// equal compares secrets in constant time.
func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// hostAllowed reports whether a request's Host names this machine in a
// way no DNS answer controls: an IP address, localhost, or a name the
// daemon was told to accept. A page reached through any other name may be
// a DNS rebinding attack: a site whose name the attacker points at this
// machine, so that its scripts read the dashboard as same-origin.
func (s *Server) hostAllowed(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	h = strings.ToLower(h)
	if h == "" {
		return false
	}
	if net.ParseIP(h) != nil || h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	for _, a := range s.opts.Hosts {
		if strings.EqualFold(a, h) {
			return true
		}
	}
	return false
}

// sameOrigin reports whether an Origin or Referer value names the
// request's own origin (its scheme and Host).
func sameOrigin(r *http.Request, value string) bool {
	u, err := url.Parse(value)
	if err != nil || u.Host == "" {
		return false
	}
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return strings.EqualFold(u.Scheme, scheme) && strings.EqualFold(u.Host, r.Host)
}

// crossSite reports whether a request comes from another site: its
// Sec-Fetch-Site or its Origin says so. A state-changing request must
// also name its origin (Origin, else Referer), since browsers send one.
func crossSite(r *http.Request, changes bool) (bool, string) {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return true, "a request from another site"
	}
	if o := r.Header.Get("Origin"); o != "" {
		if o == "null" || !sameOrigin(r, o) {
			return true, "a request from another origin (" + o + ")"
		}
		return false, ""
	}
	if !changes {
		return false, ""
	}
	if ref := r.Header.Get("Referer"); ref != "" && sameOrigin(r, ref) {
		return false, ""
	}
	return true, "a state-changing request that names no origin of this dashboard (no Origin or Referer header)"
}

// localNext returns a path of this site to go to after the login, "/"
// when next is not one (an open redirect to another site).
func localNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return next
}

// sessionOf returns the request's session, or nil.
func (s *Server) sessionOf(r *http.Request) (string, *session) {
	if !s.opts.Login {
		return "local", s.local
	}
	c, err := r.Cookie(sessionCookieName(r))
	if err != nil {
		return "", nil
	}
	return c.Value, s.sessions.get(c.Value)
}

// StreamSession is the session a logged-in browser holds the event
// stream open with: the stream ends when the session does.
type StreamSession struct {
	s  *Server
	id string
	ss *session
}

// Ended is closed when the session ends by logout, by a new login of its
// browser, or by being forgotten; nil (never) for the unix socket's local
// session. Expiry is found by Live.
func (x *StreamSession) Ended() <-chan struct{} { return x.ss.ended }

// Live reports whether the session is still logged in: not ended, not
// expired (by the dashboard's clock, Options.Clock).
func (x *StreamSession) Live() bool {
	if !x.s.opts.Login {
		return true
	}
	return x.s.sessions.get(x.id) == x.ss
}

// StreamSession returns the session of r when r comes from a logged-in
// browser of this dashboard, from this site: the check the event stream
// makes of a request without the bearer token. It returns nil otherwise.
func (s *Server) StreamSession(r *http.Request) *StreamSession {
	if !s.hostAllowed(r.Host) {
		return nil
	}
	if bad, _ := crossSite(r, false); bad {
		return nil
	}
	id, ss := s.sessionOf(r)
	if ss == nil {
		return nil
	}
	return &StreamSession{s: s, id: id, ss: ss}
}

// sessionCookieName is the session cookie's name for the port r was
// sent to: hookd_session_8787. Browsers keep cookies per host name, not
// per port, and send them to every port of it; the port in the name keeps
// two daemons on one host (or a daemon and another app's cookie) from
// overwriting each other's sessions. It does not keep the cookie from
// other servers on the same host name (see docs/daemon.md, "Web
// dashboard").
func sessionCookieName(r *http.Request) string {
	if _, port, err := net.SplitHostPort(r.Host); err == nil && port != "" {
		return sessionCookie + "_" + port
	}
	return sessionCookie
}

// setSession gives the browser its session cookie.
func (s *Server) setSession(w http.ResponseWriter, r *http.Request, id string) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookieName(r), Value: id, Path: "/", MaxAge: int(sessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
}

// NewLoginCode returns a one-time code for /login/once?code=CODE: whoever
// opens that address within five minutes is logged in, once.
func (s *Server) NewLoginCode() string { return s.sessions.newCode() }
