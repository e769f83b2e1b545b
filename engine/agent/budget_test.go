package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/agenttest"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestSpendFromReportedUsage: the usage the server reports is what the
// hook's budget counts: each run is charged its prompt + completion
// tokens with the model it asked for, stored in the ledger; once the
// day's budget is spent the next trigger is refused (budget) and the
// server is not asked again.
func TestSpendFromReportedUsage(t *testing.T) {
	srv := llmtest.New(
		llmtest.Calls(llmtest.ToolCall{ID: "1", Name: "test_echo", Args: `{"text":"x"}`}),
		llmtest.Reply{Content: "done", Usage: &llmtest.Usage{Prompt: 500, Completion: 150}, Repeat: true},
	)
	h := agenttest.NewHook(t, srv, func(h *engine.Hook) {
		h.Tools = []string{"test_echo"}
		h.Budget = budget.Hook{MaxTokensPerRun: 900, PerDay: 1300}
	})
	f := agenttest.Start(t, srv, h)
	first, _ := f.Fire()
	agenttest.WantStatus(t, first, engine.StatusCompleted, "")
	// The first run: a tool call (default usage 10 + 5), then the answer.
	if want := (engine.Tokens{Prompt: 510, Completion: 155, Known: true}); first.Tokens != want {
		t.Fatalf("first run's tokens %+v, want %+v", first.Tokens, want)
	}
	second, _ := f.Fire()
	agenttest.WantStatus(t, second, engine.StatusCompleted, "")

	ctx := context.Background()
	recs, err := f.DB.UsageSince(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].RunID != first.ID || recs[0].Model != "test-model" || recs[0].Prompt != 510 ||
		recs[0].Completion != 155 || recs[0].Unreported || recs[1].Total() != 650 {
		t.Fatalf("ledger: %+v", recs)
	}
	asked := len(srv.Requests())
	_, err = f.Eng.Fire(ctx, "ask", engine.FireOptions{})
	var g *engine.GateError
	if !errors.As(err, &g) || g.Gate != engine.GateBudget ||
		!strings.Contains(err.Error(), "hook ask's runs used 1315 tokens in the last 24h (budget.per_day: 1300") {
		t.Fatalf("third fire: %v, want the budget gate", err)
	}
	if n := len(srv.Requests()); n != asked {
		t.Errorf("the server was asked %d more time(s) after the budget was spent", n-asked)
	}
	sum, err := f.Eng.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := sum.Spend.Hooks["ask"].Day; d.Tokens != 1315 || d.Limit != 1300 || !d.Spent() || d.Runs != 2 {
		t.Errorf("spend: %+v", d)
	}
}

// TestSpendUnreportedUsage: a model call whose server sends no usage
// counts 0 tokens; the calls that reported are counted, and the run is
// marked so that status can say the budget did not see all of it.
func TestSpendUnreportedUsage(t *testing.T) {
	srv := llmtest.New(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "1", Name: "test_echo", Args: `{"text":"x"}`}},
			Usage: &llmtest.Usage{Prompt: 300, Completion: 100}},
		llmtest.Reply{Content: "done", NoUsage: true},
	)
	run, _, f := agenttest.FireOne(t, srv, func(h *engine.Hook) {
		h.Tools = []string{"test_echo"}
		h.Budget = budget.Hook{PerDay: 100000}
	})
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")
	recs, err := f.DB.UsageSince(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Prompt != 300 || recs[0].Completion != 100 || !recs[0].Unreported {
		t.Fatalf("ledger: %+v", recs)
	}
	sum, err := f.Eng.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d := sum.Spend.Hooks["ask"].Day
	if d.Tokens != 400 || d.Unreported != 1 {
		t.Errorf("spend: %+v", d)
	}
	if got := d.Text(false); got != "400 of 100000 tokens" {
		t.Errorf("text: %q", got)
	}
	if got := sum.Spend.Hooks["ask"].UnreportedText(); got != "1 run(s) with unreported usage in 24h" {
		t.Errorf("unreported: %q", got)
	}
}

// TestSpendFailedCallNotUnreported: a model call that failed (a 401, a
// server that is down) spent nothing it could report: the run is not
// counted among those with unreported usage, which would only be noise
// on the dashboard and in status.
func TestSpendFailedCallNotUnreported(t *testing.T) {
	srv := llmtest.New(llmtest.Fail(401, "invalid api key"))
	run, _, f := agenttest.FireOne(t, srv, func(h *engine.Hook) {
		h.Budget = budget.Hook{PerDay: 100000}
	})
	agenttest.WantStatus(t, run, engine.StatusFailed, "HTTP 401")
	if !run.Tokens.Known {
		t.Errorf("a run whose one model call failed has unknown usage: %+v", run.Tokens)
	}
	sum, err := f.Eng.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := sum.Spend.Hooks["ask"].Day; d.Unreported != 0 {
		t.Errorf("spend counts %d run(s) with unreported usage: %q", d.Unreported, sum.Spend.Hooks["ask"].UnreportedText())
	}
}
