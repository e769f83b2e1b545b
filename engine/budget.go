package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/hookd/hookd/budget"
)

// GateBudget refuses a trigger of a hook whose token budget (budget:
// per_hour, per_day), or the daemon's (budget: in hookd.yaml), is spent.
const GateBudget = "budget"

// loadUsage fills the ledger from the store.
func (s *state) loadUsage(ctx context.Context, now time.Time) error {
	recs, err := s.cfg.Store.UsageSince(ctx, now.Add(-budget.Day))
	if err != nil {
		return fmt.Errorf("load token usage: %w", err)
	}
	s.spend = budget.NewLedger(recs)
	return nil
}

// budgetGate refuses a run of ent's hook when the hook's or the daemon's
// token budget is spent, or returns nil: triggers, and queued and
// pending runs about to start, ask it.
func (s *state) budgetGate(ent *entry, now time.Time) *GateError {
	return budgetGate(&s.spend, ent.hook, s.cfg.Budget, now)
}

// budgetGate is the budget gate's answer for a run of h at now from the
// usage in l, with d the daemon's budget: a *GateError naming the spent
// budget and when the next run is allowed, or nil. The ledger decides.
func budgetGate(l *budget.Ledger, h *Hook, d budget.Daemon, now time.Time) *GateError {
	r := l.Check(h.Name, h.Source.File, h.Budget, d, now)
	if r == nil {
		return nil
	}
	return &GateError{Gate: GateBudget, Hook: h.Name, Detail: r.Detail, Remaining: r.Remaining}
}

// usageOf is the ledger record of run, whose model stage called model,
// or nil when it made no model call.
func usageOf(run *Run, model string) *budget.Usage {
	if model == "" {
		return nil
	}
	return &budget.Usage{RunID: run.ID, Hook: run.Hook, Model: model, At: run.FinishedAt,
		Prompt: run.Tokens.Prompt, Completion: run.Tokens.Completion, Unreported: !run.Tokens.Known}
}

// recordUsage stores u in the ledger's table.
func (e *Engine) recordUsage(ctx context.Context, u *budget.Usage) {
	if u == nil {
		return
	}
	cp := *u
	if err := e.persist(ctx, "token usage", u.Hook, u.RunID, func(ctx context.Context) error { return e.cfg.Store.AddUsage(ctx, &cp) }); err != nil {
		e.log.Error("store token usage", "hook", u.Hook, "run", u.RunID, "err", err)
	}
}

// spendReport is the ledger's report for the daemon and the hooks hookd
// runs.
func (s *state) spendReport(now time.Time) budget.Spend {
	hooks := make(map[string]budget.Hook, len(s.hooks))
	for name, ent := range s.hooks {
		hooks[name] = ent.hook.Budget
	}
	return s.spend.Report(now, s.cfg.Budget, hooks)
}
