package metrics

import (
	"testing"
	"time"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/engine"
)

// TestBudgetMetrics: the spend gauges show each budget's usage against its
// limit per window (a limit only where one is set, a cost only when
// priced), and budget refusals are counted by hook.
func TestBudgetMetrics(t *testing.T) {
	src := &fakeSource{sum: engine.Summary{Spend: budget.Spend{
		Priced: true,
		Daemon: budget.SpendWindows{
			Hour: budget.SpendWindow{Tokens: 1200, Limit: 100000, Cost: 0.25},
			Day:  budget.SpendWindow{Tokens: 9000, Cost: 1.5},
		},
		Hooks: map[string]budget.SpendWindows{
			"triage": {Hour: budget.SpendWindow{Tokens: 1200}, Day: budget.SpendWindow{Tokens: 9000, Limit: 8000}},
		},
	}}}
	m := New(src, time.Minute, 0)
	refused := &engine.Run{Hook: "triage", Status: engine.StatusSkipped, Gate: engine.GateBudget, Reason: "budget: …"}
	m.Observe(runEv(refused))
	m.Observe(runEv(refused))
	m.Observe(runEv(&engine.Run{Hook: "triage", Status: engine.StatusSkipped, Gate: engine.GateRate, Reason: "rate: …"}))
	fams := scrape(t, m)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"hookd_budget_used_tokens", []string{"scope", "daemon", "hook", "", "window", "1h"}, 1200},
		{"hookd_budget_used_tokens", []string{"scope", "daemon", "window", "24h"}, 9000},
		{"hookd_budget_limit_tokens", []string{"scope", "daemon", "window", "1h"}, 100000},
		{"hookd_budget_used_cost", []string{"scope", "daemon", "window", "24h"}, 1.5},
		{"hookd_budget_used_tokens", []string{"scope", "hook", "hook", "triage", "window", "24h"}, 9000},
		{"hookd_budget_limit_tokens", []string{"scope", "hook", "hook", "triage", "window", "24h"}, 8000},
		{"hookd_budget_refusals_total", []string{"hook", "triage"}, 2},
		{"hookd_skips_total", []string{"hook", "triage", "reason", "budget"}, 2},
	} {
		if got := value(t, fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := len(fams["hookd_budget_limit_tokens"].GetMetric()); n != 2 {
		t.Errorf("%d limit series, want 2 (the daemon's hour, triage's day: the windows with a cap)", n)
	}
	if n := len(fams["hookd_budget_used_cost"].GetMetric()); n != 4 {
		t.Errorf("%d cost series, want 4 (daemon and triage, 1h and 24h)", n)
	}
}
