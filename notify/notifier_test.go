package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// receiver is a local webhook endpoint that records what it is sent and
// answers each request with the next status of its script (200 after the
// script ends).
type receiver struct {
	mu     sync.Mutex
	script []int
	bodies [][]byte
	got    chan []byte
	srv    *httptest.Server
}

func newReceiver(t *testing.T, script ...int) *receiver {
	r := &receiver{script: script, got: make(chan []byte, 16)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		if ct := req.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		r.mu.Lock()
		code := http.StatusOK
		if len(r.script) > 0 {
			code, r.script = r.script[0], r.script[1:]
		}
		r.bodies = append(r.bodies, b)
		r.mu.Unlock()
		w.WriteHeader(code)
		if code < 300 {
			r.got <- b
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

// wait returns the next body the receiver accepted.
func (r *receiver) wait(t *testing.T) []byte {
	t.Helper()
	select {
	case b := <-r.got:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("no notification arrived")
		return nil
	}
}

// counter records the outcomes the notifier counts.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) count(o string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[o]++
}

func (c *counter) get(o string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[o]
}

// runEvent is the event the engine publishes for run, at a fixed time.
func runEvent(run *engine.Run) *engine.Event {
	ev := engine.RunEvent(run)
	ev.Time = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	return ev
}

func failedEvent(hook, run string) *engine.Event {
	start := time.Date(2025, 3, 1, 11, 59, 0, 0, time.UTC)
	return runEvent(&engine.Run{
		ID: run, Hook: hook, Status: engine.StatusFailed, Trigger: "schedule", EventType: "deploy.failed",
		Cause: engine.CauseModelError, Error: "step_0 failed: exit 3 [REDACTED:API_KEY]",
		Response: "The   tests fail\nbecause of X.", StartedAt: start, FinishedAt: start.Add(1500 * time.Millisecond),
		Tools: []engine.ToolUse{{Name: "read_file", Tool: "read_file", Outcome: engine.ToolOK},
			{Name: "http_get", Tool: "http_get", Outcome: engine.ToolError},
			{Name: "write_file", Tool: "write_file", Outcome: engine.ToolDenied, DeniedBy: "safety"}},
	})
}

func newTest(t *testing.T, o Options) (*Notifier, *counter, *logBuf) {
	t.Helper()
	c := &counter{}
	logs := &logBuf{}
	o.Count = c.count
	o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if o.Backoff == 0 {
		o.Backoff = time.Millisecond
	}
	n := New(o)
	n.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		n.Stop(ctx)
	})
	return n, c, logs
}

// logBuf is a log sink safe for concurrent use.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestFormats delivers one failure to a receiver in each format and checks
// what each body says.
func TestFormats(t *testing.T) {
	rec := newReceiver(t)
	var targets []engine.NotifyTarget
	for _, f := range engine.NotifyFormats {
		targets = append(targets, engine.NotifyTarget{Name: f, URL: rec.srv.URL, Format: f, On: []string{"failed"}})
	}
	n, c, _ := newTest(t, Options{Targets: targets})
	n.Observe(failedEvent("nightly", "r1"))

	got := map[string]map[string]any{}
	for range targets {
		var m map[string]any
		if err := json.Unmarshal(rec.wait(t), &m); err != nil {
			t.Fatal(err)
		}
		switch {
		case m["embeds"] != nil:
			got["discord"] = m
		case m["blocks"] != nil:
			got["slack"] = m
		default:
			got["generic"] = m
		}
	}
	g := got["generic"]
	if g == nil || g["hook"] != "nightly" || g["run_id"] != "r1" || g["outcome"] != "failed" || g["trigger"] != "schedule" ||
		g["duration_ms"] != float64(1500) || g["event_type"] != "deploy.failed" {
		t.Errorf("generic: %v", g)
	}
	if s, _ := g["summary"].(string); s != "step_0 failed: exit 3 [REDACTED:API_KEY]" {
		t.Errorf("generic summary %q: the error wins over the answer", s)
	}
	if tools, _ := g["tools"].([]any); len(tools) != 3 || g["cause"] != "model_error" || g["headline"] != "failed (model_error)" {
		t.Errorf("generic tools %v cause %v headline %v", g["tools"], g["cause"], g["headline"])
	}
	s := got["slack"]
	if text, _ := s["text"].(string); !strings.Contains(text, "hookd: nightly failed (model_error) (schedule, 1.5s)") ||
		!strings.Contains(text, "read_file → http_get (error) → write_file (denied)") || !strings.Contains(text, "exit 3") {
		t.Errorf("slack text: %q", text)
	}
	d := got["discord"]
	if content, _ := d["content"].(string); content != `hookd: nightly failed (model\_error) (schedule, 1.5s)` { // escaped markdown
		t.Errorf("discord content: %q", content)
	}
	embed := d["embeds"].([]any)[0].(map[string]any)
	if embed["color"] != float64(0xD0021B) || !strings.Contains(embed["description"].(string), "exit 3") {
		t.Errorf("discord embed: %v", embed)
	}
	waitCount(t, c, Delivered, 3)
}

// TestSummaryFromAnswer: a completed run's message summarises the model's
// answer, shortened and on one line.
func TestSummaryFromAnswer(t *testing.T) {
	rec := newReceiver(t)
	long := strings.Repeat("word ", 200)
	n, _, _ := newTest(t, Options{
		Targets: []engine.NotifyTarget{{URL: rec.srv.URL, Format: "generic", On: []string{"completed"}}}})
	n.Observe(runEvent(&engine.Run{ID: "r2", Hook: "h", Status: engine.StatusCompleted, Trigger: "manual",
		Response: "All good.\n" + long, Steps: []*engine.StepResult{{Index: 1, Error: "boom"}}}))
	var m Message
	if err := json.Unmarshal(rec.wait(t), &m); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.Summary, "All good. word word") || len(m.Summary) > summaryLen || !strings.HasSuffix(m.Summary, "…") {
		t.Errorf("summary %q", m.Summary)
	}
	if m.Tools == nil {
		t.Errorf("tools should be an empty list, not null")
	}
	if m.StepErrors != 1 || m.Headline != "completed, 1 step error" {
		t.Errorf("step errors %d, headline %q", m.StepErrors, m.Headline)
	}
}

// TestRetry: a receiver that first answers 500 gets the notification on
// the retry; one that answers 400 is not retried; one that keeps failing
// is given up after Attempts and counted undeliverable, without its URL
// in the log.
func TestRetry(t *testing.T) {
	flaky := newReceiver(t, 500, 503)
	n, c, logs := newTest(t, Options{Targets: []engine.NotifyTarget{{URL: flaky.srv.URL + "/secret-path", Format: "slack"}}})
	n.Observe(failedEvent("h", "r1"))
	flaky.wait(t)
	waitCount(t, c, Delivered, 1)
	if got := flaky.requests(); got != 3 {
		t.Errorf("%d requests, want 3 (two failures, then delivered)", got)
	}

	bad := newReceiver(t, 400)
	n2, c2, _ := newTest(t, Options{Targets: []engine.NotifyTarget{{URL: bad.srv.URL, Format: "generic"}}})
	n2.Observe(failedEvent("h", "r1"))
	waitCount(t, c2, Undeliverable, 1)
	if got := bad.requests(); got != 1 {
		t.Errorf("a 400 was retried: %d requests", got)
	}

	down := newReceiver(t, 500, 500, 500, 500, 500)
	n3, c3, logs3 := newTest(t, Options{Attempts: 3, Targets: []engine.NotifyTarget{{Name: "ops", URL: down.srv.URL + "/T000/B000/XXXX", Format: "discord"}}})
	n3.Observe(failedEvent("h", "r9"))
	waitCount(t, c3, Undeliverable, 1)
	if got := down.requests(); got != 3 {
		t.Errorf("%d requests, want 3 attempts", got)
	}
	for _, l := range []string{logs.String(), logs3.String()} {
		if strings.Contains(l, "secret-path") || strings.Contains(l, "XXXX") || strings.Contains(l, "127.0.0.1") {
			t.Errorf("the log shows the webhook URL:\n%s", l)
		}
	}
	if !strings.Contains(logs3.String(), "notification undeliverable") || !strings.Contains(logs3.String(), "target=ops") {
		t.Errorf("the give-up is not logged with the target's name:\n%s", logs3)
	}
}

// TestUnreachable: a network error is retried and its message carries no
// URL.
func TestUnreachable(t *testing.T) {
	rec := newReceiver(t)
	url := rec.srv.URL + "/hooks/s3cr3t"
	rec.srv.Close()
	n, c, logs := newTest(t, Options{Attempts: 2, Targets: []engine.NotifyTarget{{URL: url}}})
	n.Observe(failedEvent("h", "r1"))
	waitCount(t, c, Undeliverable, 1)
	if strings.Contains(logs.String(), "s3cr3t") {
		t.Errorf("the log shows the URL:\n%s", logs)
	}
}

// TestSelection: outcomes not asked for are not sent; a hook's own list
// replaces the daemon-wide one; url_env is read from the environment;
// non-engine events are ignored.
func TestSelection(t *testing.T) {
	daemonWide := newReceiver(t)
	own := newReceiver(t)
	n, c, _ := newTest(t, Options{
		Targets: []engine.NotifyTarget{{URL: daemonWide.srv.URL, On: []string{"failed", "skipped"}}},
		Getenv:  func(k string) string { return map[string]string{"OWN_URL": own.srv.URL}[k] },
	})
	n.SetHooks([]*engine.Hook{
		{Name: "loud", NotifySet: true, Notify: []engine.NotifyTarget{{URLEnv: "OWN_URL", On: []string{"completed"}}}},
		{Name: "quiet", NotifySet: true, Notify: []engine.NotifyTarget{}},
	})
	ev := func(status engine.Status, hook string) *engine.Event {
		return runEvent(&engine.Run{ID: "x", Hook: hook, Status: status})
	}
	n.Observe(ev(engine.StatusCompleted, "plain")) // not asked for
	n.Observe(ev(engine.StatusFailed, "quiet"))    // silenced
	n.Observe(ev(engine.StatusFailed, "loud"))     // its own list wants completed only
	n.Observe(&engine.Event{Type: engine.EventRunFailed, Source: "api", Data: map[string]any{"hook": "plain"}})
	n.Observe(ev(engine.StatusCompleted, "loud"))
	n.Observe(ev(engine.StatusSkipped, "plain"))
	var m Message
	json.Unmarshal(own.wait(t), &m)
	if m.Hook != "loud" || m.Outcome != "completed" {
		t.Errorf("own target got %+v", m)
	}
	json.Unmarshal(daemonWide.wait(t), &m)
	if m.Hook != "plain" || m.Outcome != "skipped" {
		t.Errorf("daemon-wide target got %+v", m)
	}
	waitCount(t, c, Delivered, 2)
	if daemonWide.requests() != 1 || own.requests() != 1 {
		t.Errorf("requests: daemon-wide %d, own %d; want 1 and 1", daemonWide.requests(), own.requests())
	}
}

// TestNeverBlocks: with no worker free and the queue full, Observe returns
// at once and counts the notification dropped.
func TestNeverBlocks(t *testing.T) {
	c := &counter{}
	n := New(Options{QueueSize: 1, Count: c.count, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Targets: []engine.NotifyTarget{{URL: "http://127.0.0.1:1/x"}}})
	done := make(chan struct{})
	go func() {
		for range 100 {
			n.Observe(failedEvent("h", "r"))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Observe blocked")
	}
	if got := c.get(Dropped); got != 99 {
		t.Errorf("dropped %d, want 99", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n.Stop(ctx) // never started: the queued one is abandoned
	n.Stop(ctx)
	if got := c.get(Undeliverable); got != 1 {
		t.Errorf("undeliverable %d, want 1", got)
	}
}

// TestStopDrains: Stop delivers what is queued before it returns.
func TestStopDrains(t *testing.T) {
	rec := newReceiver(t)
	c := &counter{}
	n := New(Options{Count: c.count, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Targets: []engine.NotifyTarget{{URL: rec.srv.URL}}})
	for i := range 5 {
		n.Observe(failedEvent("h", string(rune('a'+i))))
	}
	n.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n.Stop(ctx)
	if got := c.get(Delivered); got != 5 {
		t.Errorf("delivered %d before Stop returned, want 5", got)
	}
	n.Observe(failedEvent("h", "late")) // after Stop: ignored
	if got := rec.requests(); got != 5 {
		t.Errorf("%d requests", got)
	}
}

func waitCount(t *testing.T, c *counter, outcome string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c.get(outcome) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want %d", outcome, c.get(outcome), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := c.get(outcome); got != want {
		t.Errorf("%s: %d, want %d", outcome, got, want)
	}
}

// TestRetryAttempts: an attempt a retry follows (retry.notify: final) is
// not reported; the last attempt is, saying which attempt it was.
func TestRetryAttempts(t *testing.T) {
	rcv := newReceiver(t)
	n, c, _ := newTest(t, Options{Targets: []engine.NotifyTarget{{URL: rcv.srv.URL, On: []string{"failed", "completed"}}}})
	first := runEvent(&engine.Run{ID: "r1", Hook: "flaky", Status: engine.StatusFailed, Attempt: 1, Attempts: 2,
		Retry: &engine.RetryPlan{RunID: "r2", Attempt: 2}})
	first.Outcome.Intermediate = true
	n.Observe(first)
	n.Observe(runEvent(&engine.Run{ID: "r2", Hook: "flaky", Status: engine.StatusCompleted, Attempt: 2, Attempts: 2, RetryOf: "r1"}))
	var m Message
	if err := json.Unmarshal(rcv.wait(t), &m); err != nil {
		t.Fatal(err)
	}
	if m.RunID != "r2" || m.Attempt != 2 || m.Attempts != 2 || m.RetryOf != "r1" || m.Headline != "completed, attempt 2 of 2" {
		t.Errorf("message: %+v", m)
	}
	waitCount(t, c, Delivered, 1)
	if got := rcv.requests(); got != 1 {
		t.Errorf("%d notifications, want 1 (the intermediate attempt is not reported)", got)
	}
}

// TestTemplate: a target's template is the message's text, over the
// run's fields and its steps' results, with filters; a template that does
// not render leaves the default text.
func TestTemplate(t *testing.T) {
	rcv := newReceiver(t)
	n, c, logs := newTest(t, Options{Targets: []engine.NotifyTarget{{URL: rcv.srv.URL, On: []string{"failed"},
		Template: "{{hook | upper}} {{status}}: {{steps.health.output | tail 1 | trim | json}} ({{reason | default \"no reason\"}}; {{answer | truncate 5}})"}}})
	run := &engine.Run{ID: "r1", Hook: "deploy", Status: engine.StatusFailed, Response: "The deploy broke",
		Steps: []*engine.StepResult{{Index: 0, Name: "health", Type: "http", Output: "line 1\n\"down\" since 3\n"}}}
	n.Observe(runEvent(run))
	var body struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(rcv.wait(t), &body); err != nil {
		t.Fatal(err)
	}
	if want := `DEPLOY failed: "\"down\" since 3" (no reason; The d…)`; body.Text != want {
		t.Errorf("text %q\nwant %q", body.Text, want)
	}
	// A run without the step: the default text, and a warning.
	n.Observe(runEvent(&engine.Run{ID: "r2", Hook: "deploy", Status: engine.StatusFailed, Error: "boom"}))
	if err := json.Unmarshal(rcv.wait(t), &body); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(body.Text, "hookd: deploy failed") || !strings.Contains(logs.String(), "notification template did not render") {
		t.Errorf("fallback text %q; logs:\n%s", body.Text, logs)
	}
	waitCount(t, c, Delivered, 2)
}

// TestCountedAfterLogged: each outcome is counted only once its log line
// is written, so whoever waits on the count (a test, a metrics scrape)
// finds the line. Delivered, undeliverable, cancelled and dropped each
// check the log at the moment they are counted.
func TestCountedAfterLogged(t *testing.T) {
	ok, bad := newReceiver(t), newReceiver(t, 400)
	lc := engine.NewRegistry()
	lc.On(engine.PointNotifyBefore, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
		return engine.Decision{Cancel: p.NotifyTarget == "muted", Reason: "muted"}, nil
	}, engine.HandlerOptions{Label: "muter"})
	lines := map[string]string{Delivered: "notification delivered", Undeliverable: "notification undeliverable",
		Cancelled: "notification cancelled", Dropped: "notification dropped"}
	logs := &logBuf{}
	counted := make(chan string, 8)
	n := New(Options{
		Logger:    slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		QueueSize: 2, Backoff: time.Millisecond, Lifecycle: lc,
		Count: func(o string) {
			if !strings.Contains(logs.String(), lines[o]) {
				o += " (not logged yet)"
			}
			counted <- o
		},
		Targets: []engine.NotifyTarget{
			{Name: "ok", URL: ok.srv.URL}, {Name: "bad", URL: bad.srv.URL},
			{Name: "muted", URL: ok.srv.URL}, {Name: "extra", URL: ok.srv.URL}, // ok's queue holds 2
		},
	})
	n.Observe(failedEvent("h", "r1")) // before Start: the third to ok's URL finds its queue full
	n.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n.Stop(ctx)
	})
	var got []string
	for range 4 {
		select {
		case o := <-counted:
			got = append(got, o)
		case <-time.After(10 * time.Second):
			t.Fatalf("counted %q so far, want 4 outcomes", got)
		}
	}
	slices.Sort(got)
	if want := []string{Cancelled, Delivered, Dropped, Undeliverable}; !slices.Equal(got, want) {
		t.Errorf("counted %q, want %q each after its log line", got, want)
	}
}
