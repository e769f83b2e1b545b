package server

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/internal/authlimit"
)

// The TCP API serves the same handlers as the unix socket, behind a
// bearer token. The token comes from the environment variable named by
// token_env (default HOOKD_TOKEN) or from the file named by token_file,
// never from hookd.yaml itself. Without a token hookd does not listen on
// TCP at all — on any address — and refuses to start, since the API can
// fire hooks; GET /healthz is the one path answered without the token,
// and it tells nothing but "ok".

// minTokenLen is the shortest bearer token hookd accepts.
const minTokenLen = 16

// Token reads the TCP API's bearer token from token_file or token_env.
// It returns "" when neither holds one.
func Token(d *config.Daemon, getenv func(string) string) (string, error) {
	var tok, from string
	if d.TokenFile != "" {
		b, err := os.ReadFile(d.TokenFile)
		if err != nil {
			return "", fmt.Errorf("read token_file: %w", err)
		}
		tok, from = strings.TrimSpace(string(b)), "token_file "+d.TokenFile
	} else {
		env := d.TokenEnv
		if env == "" {
			env = config.DefaultTokenEnv
		}
		tok, from = strings.TrimSpace(getenv(env)), "$"+env
	}
	if tok != "" && len(tok) < minTokenLen {
		return "", fmt.Errorf("the API token in %s is shorter than %d characters", from, minTokenLen)
	}
	if strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("the API token in %s contains whitespace", from)
	}
	return tok, nil
}

// CheckListen refuses to serve the TCP API without a token.
func CheckListen(d *config.Daemon, token string) error {
	if token != "" {
		return nil
	}
	where := "loopback address"
	if !isLoopback(d.Listen) {
		where = "non-loopback address"
	}
	src := "$" + d.TokenEnv
	if d.TokenFile != "" {
		src = "token_file " + d.TokenFile
	} else if d.TokenEnv == "" {
		src = "$" + config.DefaultTokenEnv
	}
	return fmt.Errorf("listen %s: refusing to serve the API on a %s without a bearer token; "+
		"put a token of at least %d characters in %s (token_env or token_file in hookd.yaml), or remove listen",
		d.Listen, where, minTokenLen, src)
}

// isLoopback reports whether a host:port names only the loopback
// interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tokenLimiter is the count of wrong API tokens per client, made on first
// use: one for the TCP API and the dashboard's login.
func (a *Server) tokenLimiter() *authlimit.Limiter {
	if a.logins == nil {
		a.logins = authlimit.New(nil)
	}
	return a.logins
}

// requireToken wraps the API: every request needs "Authorization: Bearer
// TOKEN", except GET /healthz, which answers only its status. A refused
// request's connection is closed after the answer. Wrong tokens count
// per client in logins (authlimit): past authlimit.FreeFailures the
// client's requests are answered 429 with Retry-After, the token not
// compared, until its lockout ends. A request without a token is no
// guess: it is not counted, but a locked-out client gets 429 for it too.
func requireToken(token string, logins *authlimit.Limiter, log *slog.Logger, next http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/healthz" && r.Header.Get("Authorization") == "" {
			writeJSON(w, http.StatusOK, api.Health{Status: "ok"})
			return
		}
		client := authlimit.Client(r.RemoteAddr)
		got := []byte(r.Header.Get("Authorization"))
		var ok bool
		var wait time.Duration
		if len(got) == 0 {
			wait = logins.Wait(client)
		} else {
			ok, wait = logins.Attempt(client, func() bool { return subtle.ConstantTimeCompare(got, want) == 1 })
		}
		if ok {
			next.ServeHTTP(w, r)
			return
		}
		// A client without the token keeps no connection open.
		w.Header().Set("Connection", "close")
		if wait > 0 {
			secs := authlimit.RetryAfter(wait)
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			writeJSON(w, http.StatusTooManyRequests, api.Error{Error: fmt.Sprintf(
				"too many wrong bearer tokens from your address: try again in %d s", secs)})
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="hookd"`)
		msg := "missing bearer token: send Authorization: Bearer TOKEN"
		if len(got) > 0 {
			msg = "wrong bearer token"
			log.Warn("TCP API: request with a wrong bearer token", "remote", r.RemoteAddr, "path", r.URL.Path)
		}
		writeJSON(w, http.StatusUnauthorized, api.Error{Error: msg})
	})
}

// ServeTCP serves the API on addr behind the token and returns the
// server and the address it listens on (addr may use port 0).
func (a *Server) ServeTCP(addr, token string) (*http.Server, net.Addr, error) {
	if token == "" {
		return nil, nil, errors.New("serve TCP API: no token")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	s := ln.Addr().String()
	a.tcpAddr.Store(&s)
	srv := newHTTPServer(a.tcpHandler(token))
	srv.RegisterOnShutdown(a.Close)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("TCP API stopped", "err", err)
		}
	}()
	return srv, ln.Addr(), nil
}
