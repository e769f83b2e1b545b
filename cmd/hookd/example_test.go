package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/hookd/hookd/engine"
)

// TestDeployFailedExample runs the shipped hooks.d/deploy-failed.yaml (its
// receiver's address changed to a loopback test server) through the
// daemon: an event whose fields hold quotes, a newline, a backslash and
// `"},"x":{"` is posted as valid JSON with the values intact, and the
// next event's post carries what memory_search found of the first run.
// A 503 answer fails the run and plans its retry.
func TestDeployFailedExample(t *testing.T) {
	src, err := os.ReadFile("../../hooks.d/deploy-failed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		bodies []string
		status = http.StatusOK
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("Content-Type %q", r.Header.Get("Content-Type"))
		}
		bodies = append(bodies, string(b))
		w.WriteHeader(status)
	}))
	defer srv.Close()
	const addr = "http://127.0.0.1:8089"
	if !strings.Contains(string(src), addr) {
		t.Fatalf("the example no longer posts to %s", addr)
	}
	e := newEnv(t, "", map[string]string{"deploy-failed.yaml": strings.Replace(string(src), addr, srv.URL, 1)})
	e.serve()

	post := func(i int) map[string]string {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) <= i {
			t.Fatalf("%d posts, want at least %d", len(bodies), i+1)
		}
		var m map[string]string
		if err := json.Unmarshal([]byte(bodies[i]), &m); err != nil {
			t.Fatalf("post %d is not a JSON object of strings: %v\n%s", i, err, bodies[i])
		}
		return m
	}
	service, why := `api"},"x":{"`, "two\nlines \"quoted\" \\ back"
	e.must(0, "emit", "deploy.failed", "--data", mustJSON(t, map[string]string{"service": service, "error": why}), "--wait")
	if got := post(0); got["text"] != "deploy of "+service+" failed: "+why || got["earlier"] != "none" || len(got) != 2 {
		t.Errorf("first post: %#v", got)
	}
	e.must(0, "emit", "deploy.failed", "service=api", "error=disk full", "--wait")
	if got := post(1); got["text"] != "deploy of api failed: disk full" || !strings.Contains(got["earlier"], "1. run ") {
		t.Errorf("second post does not carry the first run memory_search found: %#v", got)
	}

	mu.Lock()
	status = http.StatusServiceUnavailable
	mu.Unlock()
	out := e.must(1, "emit", "deploy.failed", "service=db", "--wait", "--json")
	var ans struct{ Runs []*engine.Run }
	if err := json.Unmarshal([]byte(out.stdout), &ans); err != nil || len(ans.Runs) != 1 {
		t.Fatalf("emit --json: %v\n%s", err, out)
	}
	if r := ans.Runs[0]; r.Status != engine.StatusFailed || r.Reason != "step_1 (post): status 503" || r.Retry == nil || r.Retry.Attempt != 2 {
		t.Errorf("a 503 answer: %s %q, retry %+v; want failed with a retry planned", r.Status, r.Reason, r.Retry)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
