package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestNotifyFailedHandler: a notification the webhook refuses reaches the
// notify:failed handlers, whose command reads the message, its target and
// the error on stdin and gets HOOKD_DEPTH, one more than the run's chain
// depth. hookd fire run with that depth at the limit is refused by the
// event_depth gate, so a handler that fires a failing hook cannot loop.
func TestNotifyFailedHandler(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such channel", http.StatusBadRequest)
	}))
	defer srv.Close()
	e := newEnv(t, "notify:\n  - name: ops\n    url: "+srv.URL+"\n    on: [failed]\n", map[string]string{
		"job.yaml":   "steps:\n  - type: shell\n    command: exit 3\nskip_llm: true\n",
		"pager.yaml": "on: notify:failed\nlabel: pager\ncommand: [sh, -c, \"cat > failed.json; echo $HOOKD_DEPTH > failed.depth\"]\n",
	})
	e.serve()
	e.must(1, "fire", "job", "--wait")
	var depth string
	waitFor(t, "the notify:failed handler", func() bool {
		b, _ := os.ReadFile(e.path("failed.depth"))
		depth = string(b)
		return strings.HasSuffix(depth, "\n")
	}, nil)
	if depth != "1\n" {
		t.Errorf("HOOKD_DEPTH %q, want 1 (the run's depth 0, plus one)", depth)
	}
	b, err := os.ReadFile(e.path("failed.json"))
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		Point        string `json:"hook_event_name"`
		Hook         string `json:"hook"`
		Target       string `json:"notify_target"`
		Attempts     int    `json:"notify_attempts"`
		Error        string `json:"notify_error"`
		Notification struct {
			Outcome string `json:"outcome"`
		} `json:"notification"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatalf("handler stdin: %v\n%s", err, b)
	}
	if in.Point != "notify:failed" || in.Hook != "job" || in.Target != "ops" || in.Attempts != 1 ||
		in.Error != "webhook answered 400 Bad Request" || in.Notification.Outcome != "failed" {
		t.Errorf("handler stdin: %+v\n%s", in, b)
	}

	// What the handler's hookd fire does with HOOKD_DEPTH at the limit.
	h := e.host()
	h.getenv = func(k string) string {
		if k == "HOOKD_DEPTH" {
			return "8"
		}
		return os.Getenv(k)
	}
	r := runHost(h, "fire", "job")
	if r.code != 75 || !strings.Contains(r.stderr, "event_depth") {
		t.Errorf("hookd fire with HOOKD_DEPTH=8:\n%s", r)
	}
	h.getenv = func(k string) string {
		if k == "HOOKD_DEPTH" {
			return "deep"
		}
		return os.Getenv(k)
	}
	if r := runHost(h, "emit", "x.y"); r.code != 2 || !strings.Contains(r.stderr, `HOOKD_DEPTH is "deep"`) {
		t.Errorf("hookd emit with HOOKD_DEPTH=deep:\n%s", r)
	}
}
