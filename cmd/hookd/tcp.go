package main

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/hookd/hookd/config"
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

// apiToken reads the TCP API's bearer token from token_file or token_env.
// It returns "" when neither holds one.
func apiToken(d *config.Daemon, getenv func(string) string) (string, error) {
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

// checkListen refuses to serve the TCP API without a token.
func checkListen(d *config.Daemon, token string) error {
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

// requireToken wraps the API: every request needs "Authorization: Bearer
// TOKEN", except GET /healthz, which answers only its status. A refused
// request's connection is closed after the answer.
func requireToken(token string, next http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == "/healthz" {
			writeJSON(w, http.StatusOK, health{Status: "ok"})
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="hookd"`)
		// A client without the token keeps no connection open.
		w.Header().Set("Connection", "close")
		msg := "missing bearer token: send Authorization: Bearer TOKEN"
		if len(got) > 0 {
			msg = "wrong bearer token"
		}
		writeJSON(w, http.StatusUnauthorized, apiError{Error: msg})
	})
}

// serveTCP serves the API on addr behind the token and returns the
// server and the address it listens on (addr may use port 0).
func (a *apiServer) serveTCP(addr, token string) (*http.Server, net.Addr, error) {
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
	srv.RegisterOnShutdown(a.close)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("TCP API stopped", "err", err)
		}
	}()
	return srv, ln.Addr(), nil
}
