package client

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/api"
)

// TestClientReusesItsConnection checks that a client's requests share
// one connection to the socket (keep-alive): the answers it does not
// read (the health check of Dial, a Do without out) are read to their
// end before they are closed, so the connection stays open for the next
// request instead of every request after one of those dialling again.
func TestClientReusesItsConnection(t *testing.T) {
	db, ln := listenSocket(t)
	var conns atomic.Int64
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { answer(w, api.Health{Status: "ok", DB: db}) })
	mux.HandleFunc("POST /v1/hooks/{name}/pause", func(w http.ResponseWriter, r *http.Request) {
		answer(w, map[string]any{"hook": r.PathValue("name"), "paused": true})
	})
	mux.HandleFunc("GET /v1/env", func(w http.ResponseWriter, r *http.Request) { answer(w, []string{"HOME", "PATH"}) })
	srv := &http.Server{Handler: mux, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	c := Dial(db)
	if c == nil {
		t.Fatal("Dial: no daemon answered")
	}
	ctx := context.Background()
	for range 3 {
		if err := c.Do(ctx, "POST", "/v1/hooks/h/pause", nil, nil); err != nil {
			t.Fatal(err)
		}
		var names []string
		if err := c.Do(ctx, "GET", "/v1/env", nil, &names); err != nil || len(names) != 2 {
			t.Fatalf("GET /v1/env: %v %v", names, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("7 requests took %d connections; want 1 (keep-alive)", n)
	}
}

// TestDialWaitsForASlowDaemon checks that Dial takes a daemon that
// accepts the connection and answers its health check late (a busy
// daemon on a loaded machine) for one that answers, instead of for none:
// with none, a command takes the database's lock, finds the daemon
// holding it and exits 75 saying it is "still starting". With the
// health check's former 2 s, this daemon answering after 3 s was none.
func TestDialWaitsForASlowDaemon(t *testing.T) {
	t.Parallel()
	db, ln := listenSocket(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(3 * time.Second)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(api.Health{Status: "ok", DB: db})
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	// A command interrupted, or out of its --wait-lock, gives up with its
	// context: the daemon's late answer is not waited for.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if c := DialContext(ctx, db); c != nil {
		t.Fatal("DialContext: waited past its context's end for the health check")
	}
	if c := Dial(db); c == nil {
		t.Fatal("Dial: a daemon that answered its health check after 3 s was taken for none")
	}
	// No socket: no daemon.
	ln.Close()
	if c := Dial(filepath.Join(filepath.Dir(db), "other.db")); c != nil {
		t.Fatal("Dial: a client for a socket nothing listens on")
	}
}

// listenSocket listens on the API socket of a database in a new
// directory, removed when t ends, and returns the database's path.
func listenSocket(t *testing.T) (db string, ln net.Listener) {
	dir, err := os.MkdirTemp("", "hkc") // not t.TempDir: a socket path must stay short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	db = filepath.Join(dir, "hookd.db")
	ln, err = net.Listen("unix", api.SocketPath(db))
	if err != nil {
		t.Fatal(err)
	}
	return db, ln
}
