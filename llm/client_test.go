package llm_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/clock/clocktest"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/internal/agenttest"
	"github.com/hookd/hookd/llm"
	"github.com/hookd/hookd/llm/llmtest"
)

func TestRetryAfter429(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(
		llmtest.Reply{Status: http.StatusTooManyRequests, Error: "slow down", Header: map[string]string{"Retry-After": "2"}},
		llmtest.Answer("fine"),
	)
	run, tr, f := agenttest.FireOne(t, srv)
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	if len(f.Waits) != 1 || f.Waits[0] != 2*time.Second {
		t.Errorf("waits %v, want [2s] (Retry-After)", f.Waits)
	}
	a := tr.Rounds[0].Call.Attempts
	if len(a) != 1 || a[0].Status != 429 || !a[0].RetryAfter || a[0].Wait != 2*time.Second || a[0].Error != "slow down" {
		t.Errorf("attempts %+v", a)
	}
	if len(srv.Requests()) != 2 {
		t.Errorf("%d requests", len(srv.Requests()))
	}
}

func TestRetry500Twice(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(
		llmtest.Fail(500, "oops"),
		llmtest.Reply{Status: 503, Body: "<html>upstream down</html>"},
		llmtest.Answer("back"),
	)
	run, tr, f := agenttest.FireOne(t, srv)
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	if run.Response != "back" {
		t.Errorf("response %q", run.Response)
	}
	// Exponential backoff with jitter: [250ms, 500ms], then [500ms, 1s].
	if len(f.Waits) != 2 || f.Waits[0] < 250*time.Millisecond || f.Waits[0] > 500*time.Millisecond ||
		f.Waits[1] < 500*time.Millisecond || f.Waits[1] > time.Second {
		t.Errorf("waits %v", f.Waits)
	}
	a := tr.Rounds[0].Call.Attempts
	if len(a) != 2 || a[0].Status != 500 || a[1].Status != 503 || !strings.Contains(a[1].Error, "upstream down") {
		t.Errorf("attempts %+v", a)
	}
}

func TestRetryGivesUp(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Reply{Status: 502, Error: "bad gateway", Repeat: true})
	f := agenttest.Start(t, srv, agenttest.NewHook(t, srv), func(o *llm.Options) { o.Retry.MaxAttempts = 3 })
	run, tr := f.Fire()
	agenttest.WantStatus(t, run, engine.StatusFailed, "model call 1: HTTP 502: bad gateway (gave up after 3 attempts)")
	if len(srv.Requests()) != 3 || len(tr.Rounds[0].Call.Attempts) != 3 || tr.Stop != "error" {
		t.Errorf("%d requests, transcript %+v", len(srv.Requests()), tr.Rounds[0].Call)
	}
}

func Test400NotRetried(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Fail(400, "model 'nope' not found"), llmtest.Answer("never"))
	run, tr, f := agenttest.FireOne(t, srv)
	agenttest.WantStatus(t, run, engine.StatusFailed, "model call 1: HTTP 400: model 'nope' not found")
	if len(srv.Requests()) != 1 || len(f.Waits) != 0 {
		t.Errorf("%d requests, waits %v: a 400 must not be retried", len(srv.Requests()), f.Waits)
	}
	if tr.Stop != "error" || tr.Rounds[0].Call.Error == "" {
		t.Errorf("transcript %+v", tr)
	}
	// A failed call spent nothing it could report: no tokens, and no
	// "unreported usage" either.
	if run.Tokens != (engine.Tokens{Known: true}) {
		t.Errorf("tokens %+v, want none, known", run.Tokens)
	}
}

func Test401SaysTheKeyIsMissing(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Fail(401, "Incorrect API key provided"))
	run, _, _ := agenttest.FireOne(t, srv)
	agenttest.WantStatus(t, run, engine.StatusFailed, "HTTP 401: Incorrect API key provided (no key: OPENAI_API_KEY is not set in hookd's environment)")
}

// The timeouts of the stall tests are the time the test waits, and must
// also be long enough for a loaded machine to send the request (the run
// timeout) or to answer the next attempt (the attempt timeout) in.
const stallTimeout = 2 * time.Second

func TestStallPastTheAttemptTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Reply{Stall: true}, llmtest.Answer("woke up"))
	f := agenttest.Start(t, srv, agenttest.NewHook(t, srv), func(o *llm.Options) { o.AttemptTimeout = stallTimeout })
	run, tr := f.Fire()
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	a := tr.Rounds[0].Call.Attempts
	if len(a) != 1 || a[0].Status != 0 || !strings.Contains(a[0].Error, "attempt timeout") {
		t.Errorf("attempts %+v", a)
	}
}

func TestUsageMissing(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(
		llmtest.Calls(llmtest.ToolCall{ID: "1", Name: "test_echo", Args: `{"text":"a"}`}),
		llmtest.Reply{Content: "no usage here", NoUsage: true},
	)
	run, tr, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Tools = []string{"test_echo"} })
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	if run.Tokens.Known {
		t.Errorf("tokens %+v: one call reported no usage, so the total is not known", run.Tokens)
	}
	if tr.Rounds[0].Call.Usage == nil || tr.Rounds[1].Call.Usage != nil {
		t.Errorf("usage per call: %+v, %+v (want reported, then null)", tr.Rounds[0].Call.Usage, tr.Rounds[1].Call.Usage)
	}
	if tr.Tokens.Known {
		t.Errorf("transcript tokens %+v", tr.Tokens)
	}
}

func TestUsageMissingEntirely(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Reply{Content: "x", NoUsage: true})
	run, _, _ := agenttest.FireOne(t, srv)
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	if run.Tokens != (engine.Tokens{}) {
		t.Errorf("tokens %+v, want unknown (zero value, Known false)", run.Tokens)
	}
}

func TestNoModel(t *testing.T) {
	t.Parallel()
	srv := llmtest.New()
	run, _, _ := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.LLM.Model = "" })
	agenttest.WantStatus(t, run, engine.StatusFailed, "no model: set llm.model in the hook or in hookd.yaml, or HOOKD_MODEL")
}

func TestResolveOrder(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOOKD_MODEL": "env-model", "OPENAI_BASE_URL": "http://env/v1", "OPENAI_API_KEY": "k1", "OTHER_KEY": "k2"}
	c := llm.New(llm.Options{
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Defaults:  engine.LLMConfig{BaseURL: "http://daemon/v1/", MaxRounds: 4},
	})
	s, err := c.Resolve(&engine.Hook{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Model != "env-model" || s.BaseURL != "http://daemon/v1" || s.APIKeyEnv != "OPENAI_API_KEY" || !s.KeySet {
		t.Errorf("defaults: %+v", s)
	}
	s, _ = c.Resolve(&engine.Hook{LLM: engine.LLMConfig{Model: "4", BaseURL: "http://hook/v1", APIKeyEnv: "OTHER_KEY", MaxRounds: 2}})
	if s.Model != "4" || s.BaseURL != "http://hook/v1" || s.APIKeyEnv != "OTHER_KEY" || !s.KeySet {
		t.Errorf("hook: %+v", s)
	}
	c = llm.New(llm.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	s, err = c.Resolve(&engine.Hook{LLM: engine.LLMConfig{Model: "m"}})
	if err != nil || s.BaseURL != llm.DefaultBaseURL || s.KeySet {
		t.Errorf("nothing set: %+v, %v", s, err)
	}
	// The loop's settings: the hook's, then hookd.yaml's, then the defaults.
	a := agent.New(agent.Options{Chat: c, Defaults: engine.LLMConfig{MaxRounds: 4}})
	if got := a.Resolve(&engine.Hook{}).MaxRounds; got != 4 {
		t.Errorf("max_rounds from hookd.yaml: %d", got)
	}
	if got := a.Resolve(&engine.Hook{LLM: engine.LLMConfig{MaxRounds: 2}}).MaxRounds; got != 2 {
		t.Errorf("max_rounds from the hook: %d", got)
	}
	if got := agent.New(agent.Options{Chat: c}).Resolve(&engine.Hook{}).MaxRounds; got != agent.DefaultMaxRounds {
		t.Errorf("max_rounds by default: %d", got)
	}
}

func TestConnectionDroppedIsRetried(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Reply{Hangup: true}, llmtest.Answer("reconnected"))
	run, tr, f := agenttest.FireOne(t, srv)
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	a := tr.Rounds[0].Call.Attempts
	if len(a) != 1 || a[0].Status != 0 || len(f.Waits) != 1 {
		t.Errorf("attempts %+v, waits %v", a, f.Waits)
	}
}

func TestRetryAfterPastTheDeadlineFailsAtOnce(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Reply{Status: 429, Error: "quota", Header: map[string]string{"Retry-After": "60"}})
	run, _, f := agenttest.FireOne(t, srv, func(h *engine.Hook) { h.Timeout = 5 * time.Second })
	agenttest.WantStatus(t, run, engine.StatusFailed, "HTTP 429: quota (a retry in 1m0s would be past the run's timeout)")
	if len(f.Waits) != 0 {
		t.Errorf("waited %v", f.Waits)
	}
}

// jumpBack is a transport that steps the clock's wall time back an hour
// as each request goes out, and then sends it.
type jumpBack struct{ clock *clocktest.Clock }

func (j jumpBack) RoundTrip(r *http.Request) (*http.Response, error) {
	j.clock.Jump(-time.Hour)
	return http.DefaultTransport.RoundTrip(r)
}

// TestLatencyOnTheMonotonicClock: a model call's latency and duration are
// measured on the clock's monotonic reading: the wall clock stepped back
// an hour during the call leaves them the call's time, not minus an hour,
// and the call's start is the wall time it began at.
func TestLatencyOnTheMonotonicClock(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Answer("fine"))
	clk := &clocktest.Clock{}
	f := agenttest.Start(t, srv, agenttest.NewHook(t, srv), func(o *llm.Options) {
		o.Clock, o.HTTPClient = clk, &http.Client{Transport: jumpBack{clk}}
	})
	before := clk.Now()
	run, tr := f.Fire()
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	c := tr.Rounds[0].Call
	if c.Latency <= 0 || c.Latency >= time.Hour || c.Duration < c.Latency || c.Duration >= time.Hour {
		t.Errorf("latency %v, duration %v; want both above zero and under the hour the wall clock stepped back", c.Latency, c.Duration)
	}
	if c.Started.Before(before) {
		t.Errorf("started %v, before the fire at %v", c.Started, before)
	}
}
