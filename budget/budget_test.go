package budget_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/budget"
)

// TestLedgerCheck: a hook's per_hour and the daemon's per_day refuse
// once reached, name the cap and its file, and say when the oldest
// record in the window leaves it; records older than the window do not
// count.
func TestLedgerCheck(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	use := func(hook string, ago time.Duration, tokens int64) *budget.Usage {
		return &budget.Usage{RunID: hook + ago.String(), Hook: hook, At: now.Add(-ago), Prompt: tokens / 2, Completion: tokens - tokens/2}
	}
	l := budget.NewLedger(nil)
	l.Add(use("a", 50*time.Minute, 300))
	l.Add(use("a", 90*time.Minute, 900)) // out of the hour, in the day
	l.Add(use("a", 10*time.Minute, 200))
	l.Add(use("b", 25*time.Hour, 5000)) // out of the day
	cases := []struct {
		name      string
		hook      budget.Hook
		daemon    budget.Daemon
		detail    string // "": allowed
		remaining time.Duration
	}{
		{"no budget", budget.Hook{}, budget.Daemon{}, "", 0},
		{"hour not reached", budget.Hook{PerHour: 501}, budget.Daemon{}, "", 0},
		{"hour reached", budget.Hook{PerHour: 500}, budget.Daemon{},
			"hook a's runs used 500 tokens in the last 1h (budget.per_hour: 500 in hooks.d/a.yaml); the next run is allowed in 10m", 10 * time.Minute},
		{"hour past the oldest", budget.Hook{PerHour: 400}, budget.Daemon{},
			"hook a's runs used 500 tokens in the last 1h (budget.per_hour: 400 in hooks.d/a.yaml); the next run is allowed in 10m", 10 * time.Minute},
		{"daemon day", budget.Hook{}, budget.Daemon{PerDay: 1400},
			"the runs of all hooks used 1400 tokens in the last 24h (budget.per_day: 1400 in hookd.yaml); the next run is allowed in 22h30m", 22*time.Hour + 30*time.Minute},
		{"daemon file", budget.Hook{}, budget.Daemon{PerHour: 100, File: "/etc/hookd.yaml"},
			"the runs of all hooks used 500 tokens in the last 1h (budget.per_hour: 100 in /etc/hookd.yaml); the next run is allowed in 50m", 50 * time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := l.Check("a", "hooks.d/a.yaml", c.hook, c.daemon, now)
			switch {
			case c.detail == "" && r != nil:
				t.Fatalf("refused: %+v", r)
			case c.detail == "":
			case r == nil:
				t.Fatalf("allowed, want %q", c.detail)
			case r.Detail != c.detail || r.Remaining != c.remaining:
				t.Errorf("got %q in %s\nwant %q in %s", r.Detail, r.Remaining, c.detail, c.remaining)
			}
		})
	}
}

// TestLedgerReport: the report counts each window's tokens, runs,
// replays and unreported runs, prices what has a price, and lists the
// hooks with a budget (with no usage) and those with usage (with no
// budget).
func TestLedgerReport(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	l := budget.NewLedger([]*budget.Usage{
		{Hook: "a", Model: "m", At: now.Add(-3 * time.Hour), Prompt: 1000, Completion: 500},
		{Hook: "a", Model: "free", At: now.Add(-30 * time.Minute), Prompt: 10, Completion: 5, Unreported: true},
		{Hook: "a", Model: "m", At: now.Add(-20 * time.Minute), Prompt: 100, Completion: 50, Tag: budget.UsageReplay},
	})
	d := budget.Daemon{PerDay: 10000, Prices: map[string]budget.Price{"m": {Input: 2, Output: 8}}}
	sp := l.Report(now, d, map[string]budget.Hook{"a": {}, "b": {PerHour: 7, MaxTokensPerRun: 3}})
	if !sp.Priced || !sp.Active() {
		t.Errorf("priced %v active %v", sp.Priced, sp.Active())
	}
	a, b := sp.Hooks["a"], sp.Hooks["b"]
	if len(sp.Hooks) != 2 || b.Hour.Limit != 7 || b.MaxTokensPerRun != 3 || b.Day.Tokens != 0 {
		t.Fatalf("hooks %+v", sp.Hooks)
	}
	if a.Day.Tokens != 1665 || a.Day.Runs != 2 || a.Day.Replays != 1 || a.Day.Unreported != 1 || a.Day.Unpriced != 15 || a.Hour.Tokens != 165 {
		t.Errorf("a %+v", a)
	}
	if sp.Daemon.Day.Tokens != 1665 || sp.Daemon.Day.Limit != 10000 || sp.Daemon.Hour.Tokens != 165 {
		t.Errorf("daemon %+v", sp.Daemon)
	}
	if got, want := sp.Daemon.Day.Text(true), "1665 of 10000 tokens, cost 0.0066 (15 tokens unpriced)"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if got, want := sp.Daemon.UnreportedText(), "1 run(s) with unreported usage in 24h"; got != want {
		t.Errorf("unreported %q, want %q", got, want)
	}
}

// TestSpendUnreportedOnce: a run with unreported usage in the last hour
// is in both windows, but is said once, for the windows together, not
// in the text of each window (issue 32: repeated per window, it was
// noise); with none, nothing is said.
func TestSpendUnreportedOnce(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	l := budget.NewLedger([]*budget.Usage{
		{Hook: "a", At: now.Add(-10 * time.Minute), Prompt: 10, Unreported: true},
		{Hook: "a", At: now.Add(-5 * time.Hour), Prompt: 20, Unreported: true},
		{Hook: "b", At: now.Add(-5 * time.Minute), Prompt: 30},
	})
	sp := l.Report(now, budget.Daemon{PerHour: 1000}, nil)
	for _, ws := range []budget.SpendWindows{sp.Daemon, sp.Hooks["a"]} {
		if ws.Hour.Unreported != 1 || ws.Day.Unreported != 2 {
			t.Fatalf("windows %+v", ws)
		}
		for _, text := range []string{ws.Hour.Text(false), ws.Day.Text(false), ws.Hour.Text(true), ws.Day.Text(true)} {
			if strings.Contains(text, "unreported") {
				t.Errorf("a window's text repeats the unreported usage: %q", text)
			}
		}
		if got, want := ws.UnreportedText(), "2 run(s) with unreported usage in 24h"; got != want {
			t.Errorf("unreported %q, want %q", got, want)
		}
	}
	if got := sp.Hooks["b"].UnreportedText(); got != "" {
		t.Errorf("a hook with no unreported usage says %q", got)
	}
}
