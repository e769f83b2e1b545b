package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/internal/authlimit"
)

const testToken = "s3cret-token-0123456789abcdef"

// get sends GET path to srv with token as the bearer token and returns
// the status and the Retry-After header.
func get(t *testing.T, srv *httptest.Server, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", srv.URL+"/v1/hooks", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// TestAPITokenLockoutEnds serves requireToken on loopback with a clock the
// test moves: a legitimate client that got the token wrong five times is
// served again with the right one once its Retry-After has passed, and
// its count stays: one more wrong token locks it out again, for twice as
// long. A client at another address is never held.
func TestAPITokenLockoutEnds(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	lim := authlimit.New(func() time.Time { return now })
	var served atomic.Int32
	srv := httptest.NewServer(requireToken(testToken, lim, slog.New(slog.DiscardHandler), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		writeJSON(w, http.StatusOK, api.Health{Status: "served"})
	})))
	defer srv.Close()
	const wrong = "wrong-token-0123456789abcdef"
	for range authlimit.FreeFailures {
		if code, _ := get(t, srv, wrong); code != 401 {
			t.Fatalf("wrong token: %d", code)
		}
	}
	if code, retry := get(t, srv, testToken); code != 429 || retry != "30" || served.Load() != 0 {
		t.Fatalf("the right token in the lockout: %d Retry-After %q, served %d", code, retry, served.Load())
	}
	now = now.Add(authlimit.Lockout)
	if code, _ := get(t, srv, testToken); code != 200 || served.Load() != 1 {
		t.Fatalf("the right token once Retry-After passed: %d", code)
	}
	get(t, srv, wrong)
	if code, retry := get(t, srv, testToken); code != 429 || retry != "60" {
		t.Errorf("after one more wrong token: %d Retry-After %q; want 429, 60", code, retry)
	}
	// The same limiter seen from another address.
	req := httptest.NewRequest("GET", "/v1/hooks", nil)
	req.RemoteAddr = "192.0.2.7:1234"
	req.Header.Set("Authorization", "Bearer "+testToken)
	w := httptest.NewRecorder()
	requireToken(testToken, lim, slog.New(slog.DiscardHandler), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})).ServeHTTP(w, req)
	if w.Code != http.StatusNoContent {
		t.Errorf("another client: %d", w.Code)
	}
}
