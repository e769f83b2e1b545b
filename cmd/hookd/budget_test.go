package main

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestSpendLimitsEndToEnd: a hook with budget.per_hour runs until its
// runs used the hour's tokens (as the scripted server reported them);
// the next fire is refused (exit 75, skipped: budget), also after the
// daemon restarts and by an in-process fire with no daemon; status, the
// API, the metrics and the dashboard show the spend against the budget,
// with the cost at hookd.yaml's prices.
func TestSpendLimitsEndToEnd(t *testing.T) {
	model := llmtest.New(llmtest.Reply{Content: "looked", Usage: &llmtest.Usage{Prompt: 300, Completion: 100}, Repeat: true})
	defer model.Close()
	e := newEnv(t, `listen: 127.0.0.1:0
llm:
  model: test-model
  base_url: `+model.BaseURL()+`
budget:
  per_day: 100000
  prices:
    test-model: {input: 2.5, output: 10}
`, map[string]string{
		"ask.yaml": `steps:
  - name: mark
    type: shell
    command: echo ran >> steps.log
prompt: "Look. {{step_0}}"
budget: {max_tokens_per_run: 500, per_hour: 800}
`,
	})
	e.environ = []string{"HOOKD_TOKEN=" + testToken}
	d := e.serve()

	for range 2 {
		e.must(0, "fire", "ask", "--wait")
	}
	r := e.must(exitRefused, "fire", "ask")
	want := "budget: hook ask's runs used 800 tokens in the last 1h (budget.per_hour: 800 in "
	if !strings.Contains(r.stderr, want) {
		t.Fatalf("refusal does not say %q:\n%s", want, r)
	}
	runs := e.listRuns("ask")
	if len(runs) != 3 || runs[0].Status != engine.StatusSkipped || runs[0].Gate != engine.GateBudget {
		t.Fatalf("runs: %+v", runs)
	}
	if b, err := os.ReadFile(e.path("steps.log")); err != nil || strings.Count(string(b), "ran") != 2 {
		t.Errorf("steps ran %d times, want 2 (none for the refused fire): %v", strings.Count(string(b), "ran"), err)
	}

	out := e.must(0, "status").stdout
	for _, w := range []string{
		"spend (runs finished in the last 1h and 24h",
		"all hooks (hookd.yaml)  800 tokens, cost 0.0035",
		"800 of 100000 tokens, cost 0.0035",
		"ask", "800 of 800 tokens, cost 0.0035 (spent)", "500 tokens",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("status lacks %q:\n%s", w, out)
		}
	}
	var rep api.StatusReport
	c := e.socketClient()
	c.json("GET", "/v1/status", nil, 200, &rep)
	if h := rep.Spend.Hooks["ask"].Hour; h.Tokens != 800 || h.Limit != 800 || h.Prompt != 600 || h.Runs != 2 || rep.Spend.Daemon.Day.Limit != 100000 {
		t.Errorf("GET /v1/status spend: %+v", rep.Spend)
	}
	var hooks []engine.HookStatus
	c.json("GET", "/v1/hooks", nil, 200, &hooks)
	if len(hooks) != 1 || hooks[0].Budget == nil || hooks[0].Budget.Hour.Tokens != 800 || hooks[0].Budget.MaxTokensPerRun != 500 {
		t.Errorf("GET /v1/hooks: %+v", hooks)
	}
	fams := c.scrape()
	for _, m := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"hookd_budget_used_tokens", []string{"scope", "hook", "hook", "ask", "window", "1h"}, 800},
		{"hookd_budget_limit_tokens", []string{"scope", "hook", "hook", "ask", "window", "1h"}, 800},
		{"hookd_budget_used_tokens", []string{"scope", "daemon", "window", "24h"}, 800},
		{"hookd_budget_limit_tokens", []string{"scope", "daemon", "window", "24h"}, 100000},
		{"hookd_budget_used_cost", []string{"scope", "daemon", "window", "24h"}, 0.0035},
		{"hookd_budget_refusals_total", []string{"hook", "ask"}, 1},
	} {
		if got := metricValue(fams, m.name, m.labels...); got != m.want {
			t.Errorf("%s%v = %v, want %v", m.name, m.labels, got, m.want)
		}
	}
	b := newBrowser(t, d.tcpAddr())
	if p := b.login(testToken); p.code != 303 {
		t.Fatalf("login: %d", p.code)
	}
	if p := b.must(200, "/hooks"); !strings.Contains(p.body, `class="spend spent"`) || !strings.Contains(p.body, "1h: 800 of 800 tokens (spent)") {
		t.Errorf("the hooks page does not show the spent budget:\n%s", p.body)
	}
	if p := b.must(200, "/"); !strings.Contains(p.body, `id="spend"`) || !strings.Contains(p.body, "24h: 800 of 100000 tokens, cost 0.0035") {
		t.Errorf("the overview does not show the daemon's spend:\n%s", p.body)
	}

	// A restart reads the ledger back: still refused.
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("hookd serve exited %d:\n%s", code, d.log)
	}
	// No daemon: fire runs in-process, through the same gate.
	if r := e.must(exitRefused, "fire", "ask"); !strings.Contains(r.stderr, want) {
		t.Errorf("in-process fire:\n%s", r)
	}
	e.serve()
	if r := e.must(exitRefused, "fire", "ask"); !strings.Contains(r.stderr, want) {
		t.Errorf("after a restart:\n%s", r)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("the model was asked %d times, want 2", n)
	}
}

// TestSpendLimitsValidate: bad budgets are validate errors with file,
// line and field, in a hook file and in hookd.yaml.
func TestSpendLimitsValidate(t *testing.T) {
	e := newEnv(t, "", map[string]string{
		"ask.yaml": `skip_llm: true
budget:
  max_tokens_per_run: 600000
  per_day: 500000
  per_hour: -3
`,
	})
	r := e.must(1, "validate")
	for _, w := range []string{
		"ask.yaml:3: budget.max_tokens_per_run: must be <= budget.per_day (500000)",
		"ask.yaml:5: budget.per_hour: must be >= 0 (got -3)",
	} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("validate does not say %q:\n%s", w, r)
		}
	}
	e.write("hookd.yaml", "budget:\n  per_day: 10\n  prices:\n    gpt-4o: {input: -1, output: 10}\n")
	e.write("hooks.d/ask.yaml", "skip_llm: true\n")
	r = e.must(1, "validate")
	if w := "hookd.yaml:4: budget.prices.gpt-4o.input: must be >= 0 (got -1)"; !strings.Contains(r.stderr, w) {
		t.Errorf("validate does not say %q:\n%s", w, r)
	}
}

// TestStatusSpendUnreportedOnce: hookd status says the runs with
// unreported usage once, under the spend table, naming their hooks, not
// in each window of each row (issue 32: four times here before).
func TestStatusSpendUnreportedOnce(t *testing.T) {
	w := budget.SpendWindows{
		Hour: budget.SpendWindow{Tokens: 10, Runs: 1, Unreported: 1},
		Day:  budget.SpendWindow{Tokens: 30, Runs: 3, Unreported: 2},
	}
	sp := &budget.Spend{Daemon: w, Hooks: map[string]budget.SpendWindows{"ask": w, "quiet": {Day: budget.SpendWindow{Tokens: 5, Runs: 1}}}}
	var out bytes.Buffer
	writeSpend(&out, sp)
	s := out.String()
	if n := strings.Count(s, "unreported"); n != 1 {
		t.Errorf("status says the unreported usage %d times, want once:\n%s", n, s)
	}
	want := "  2 run(s) with unreported usage in 24h (their servers reported no tokens; those calls count 0): ask 2\n"
	if !strings.Contains(s, want) {
		t.Errorf("status lacks %q:\n%s", want, s)
	}
}
