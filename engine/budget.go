package engine

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/hookd/hookd/internal/human"
)

// GateBudget refuses a trigger of a hook whose token budget (budget:
// per_hour, per_day), or the daemon's (budget: in hookd.yaml), is spent.
const GateBudget = "budget"

// The windows of the spend limits. They slide: per_hour is what runs that
// finished in the last 60 minutes used, per_day the last 24 hours.
const (
	BudgetHour = time.Hour
	BudgetDay  = 24 * time.Hour
)

// UsageKept is how long the store keeps usage records: AddUsage deletes
// older ones. It is longer than the longest window, so that status can
// always show a full day.
const UsageKept = 7 * 24 * time.Hour

// DaemonBudget is the daemon-wide budget: (hookd.yaml): the tokens all
// hooks together may use in any hour and any day (0: no cap), and the
// prices that turn tokens into cost for status.
type DaemonBudget struct {
	PerHour int64
	PerDay  int64
	Prices  map[string]Price // model name as the hook or hookd.yaml names it -> price
	File    string           // the settings file that sets it, for messages (default hookd.yaml)
}

// Price is what a model costs per 1,000,000 tokens, in the user's
// currency: Input for prompt tokens, Output for completion tokens.
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
}

// Usage is what one run's model stage spent, as the spend ledger keeps
// it: the tokens its server reported, summed over the stage's calls.
type Usage struct {
	RunID      string    `json:"run_id"`
	Hook       string    `json:"hook"`
	Model      string    `json:"model,omitempty"`
	At         time.Time `json:"at"` // when the run finished
	Prompt     int64     `json:"prompt"`
	Completion int64     `json:"completion"`
	// Unreported is set when a model call of the run reported no usage:
	// that call counts 0 tokens, the counts are those of the others.
	Unreported bool `json:"unreported,omitempty"`
	// Tag says what spent it when that was not a run: UsageReplay for a
	// replay of a recorded run (hookd replay), whose RunID names no run
	// record. The budgets count every record alike.
	Tag string `json:"tag,omitempty"`
}

// UsageReplay is the Tag of the usage of a replay.
const UsageReplay = "replay"

// Total is the tokens the budgets count: prompt plus completion.
func (u *Usage) Total() int64 { return u.Prompt + u.Completion }

// ledger is the usage of the last BudgetDay, oldest first; the loop owns
// it.
type ledger struct {
	recs []*Usage
}

// loadUsage fills the ledger from the store.
func (s *state) loadUsage(ctx context.Context, now time.Time) error {
	recs, err := s.cfg.Store.UsageSince(ctx, now.Add(-BudgetDay))
	if err != nil {
		return fmt.Errorf("load token usage: %w", err)
	}
	s.spend.recs = recs
	return nil
}

// add records u, keeping the ledger in time order.
func (l *ledger) add(u *Usage) {
	i := sort.Search(len(l.recs), func(i int) bool { return l.recs[i].At.After(u.At) })
	l.recs = append(l.recs, nil)
	copy(l.recs[i+1:], l.recs[i:])
	l.recs[i] = u
}

// trim drops the records older than a day before now.
func (l *ledger) trim(now time.Time) {
	from := now.Add(-BudgetDay)
	i := 0
	for i < len(l.recs) && l.recs[i].At.Before(from) {
		i++
	}
	if i > 0 {
		l.recs = append(l.recs[:0:0], l.recs[i:]...)
	}
}

// each calls fn for the records of hook ("": every hook) at or after
// from, oldest first.
func (l *ledger) each(hook string, from time.Time, fn func(*Usage)) {
	i := sort.Search(len(l.recs), func(i int) bool { return !l.recs[i].At.Before(from) })
	for _, u := range l.recs[i:] {
		if hook == "" || u.Hook == hook {
			fn(u)
		}
	}
}

// used is the tokens hook ("": every hook) used at or after from.
func (l *ledger) used(hook string, from time.Time) int64 {
	var n int64
	l.each(hook, from, func(u *Usage) { n += u.Total() })
	return n
}

// freeAt is when hook's usage in a window from..now falls below limit as
// its oldest records leave the window.
func (l *ledger) freeAt(hook string, from time.Time, window time.Duration, used, limit int64) time.Time {
	var at time.Time
	l.each(hook, from, func(u *Usage) {
		if used >= limit {
			used -= u.Total()
			at = u.At.Add(window)
		}
	})
	return at
}

// budgetLimit is one cap a trigger is held to.
type budgetLimit struct {
	hook   string // "": the daemon's
	window time.Duration
	limit  int64
	field  string // budget.per_hour, budget.per_day
	file   string // where it is set
}

// limits lists the caps a run of h is held to: the hook's, then the
// daemon's d.
func limits(h *Hook, d DaemonBudget) []budgetLimit {
	var out []budgetLimit
	add := func(hook string, window time.Duration, limit int64, field, file string) {
		if limit > 0 {
			out = append(out, budgetLimit{hook, window, limit, field, file})
		}
	}
	add(h.Name, BudgetHour, h.Budget.PerHour, "budget.per_hour", h.Source.File)
	add(h.Name, BudgetDay, h.Budget.PerDay, "budget.per_day", h.Source.File)
	file := d.File
	if file == "" {
		file = "hookd.yaml"
	}
	add("", BudgetHour, d.PerHour, "budget.per_hour", file)
	add("", BudgetDay, d.PerDay, "budget.per_day", file)
	return out
}

// budgetGate refuses a run of ent's hook when the hook's or the daemon's
// token budget is spent, or returns nil: triggers, and queued and
// pending runs about to start, ask it.
func (s *state) budgetGate(ent *entry, now time.Time) *GateError {
	return s.spend.gate(ent.hook, s.cfg.Budget, now)
}

// gate is the one place that decides whether h's budget, or the daemon's
// d, is spent at now: a *GateError saying which and until when, or nil.
// It drops the records older than a day.
func (l *ledger) gate(h *Hook, d DaemonBudget, now time.Time) *GateError {
	l.trim(now)
	for _, b := range limits(h, d) {
		from := now.Add(-b.window)
		used := l.used(b.hook, from)
		if used < b.limit {
			continue
		}
		whose := "hook " + b.hook + "'s runs"
		if b.hook == "" {
			whose = "the runs of all hooks"
		}
		g := &GateError{Gate: GateBudget, Hook: h.Name}
		if at := l.freeAt(b.hook, from, b.window, used, b.limit); at.After(now) {
			g.Remaining = at.Sub(now)
		}
		g.Detail = fmt.Sprintf("%s used %d tokens in the last %s (%s: %d in %s); the next run is allowed in %s",
			whose, used, human.Exact(b.window), b.field, b.limit, b.file, human.Exact(g.Remaining.Round(time.Second)))
		return g
	}
	return nil
}

// charge adds a finished run's usage to the ledger.
func (s *state) charge(u *Usage) {
	if u != nil {
		s.spend.add(u)
	}
}

// usageOf is the ledger record of run, whose model stage called model,
// or nil when it made no model call.
func usageOf(run *Run, model string) *Usage {
	if model == "" {
		return nil
	}
	return &Usage{RunID: run.ID, Hook: run.Hook, Model: model, At: run.FinishedAt,
		Prompt: run.Tokens.Prompt, Completion: run.Tokens.Completion, Unreported: !run.Tokens.Known}
}

// recordUsage stores u in the ledger's table.
func (e *Engine) recordUsage(ctx context.Context, u *Usage) {
	if u == nil {
		return
	}
	cp := *u
	if err := e.persist(ctx, "token usage", u.Hook, u.RunID, func(ctx context.Context) error { return e.cfg.Store.AddUsage(ctx, &cp) }); err != nil {
		e.log.Error("store token usage", "hook", u.Hook, "run", u.RunID, "err", err)
	}
}

// Spend is what hooks spent against their budgets, for status, the API
// and metrics.
type Spend struct {
	Daemon SpendWindows            `json:"daemon"`
	Hooks  map[string]SpendWindows `json:"hooks"` // hooks with a budget or with usage in the last day
	// Priced says prices are set (budget.prices in hookd.yaml): the
	// windows carry a cost.
	Priced bool `json:"priced"`
}

// Active reports whether there is anything to show: a budget is set, or
// a model was used in the last day.
func (sp Spend) Active() bool {
	d := sp.Daemon
	return len(sp.Hooks) > 0 || d.Hour.Limit > 0 || d.Day.Limit > 0 || d.Day.Runs > 0
}

// SpendWindows is one budget's usage in both windows.
type SpendWindows struct {
	Hour            SpendWindow `json:"hour"`
	Day             SpendWindow `json:"day"`
	MaxTokensPerRun int         `json:"max_tokens_per_run,omitempty"`
}

// SpendWindow is usage in one window against its cap.
type SpendWindow struct {
	Tokens     int64 `json:"tokens"` // prompt + completion: what the cap counts
	Prompt     int64 `json:"prompt"`
	Completion int64 `json:"completion"`
	Limit      int64 `json:"limit,omitempty"`   // 0: no cap
	Runs       int   `json:"runs"`              // runs whose model stage made a call
	Replays    int   `json:"replays,omitempty"` // replays of recorded runs (hookd replay), which are not runs
	// Unreported counts the runs with a model call whose server reported
	// no usage: those calls count 0 tokens.
	Unreported int `json:"unreported_runs,omitempty"`
	// Cost is the priced tokens' cost, when prices are set; Unpriced
	// counts the tokens of models that have no price.
	Cost     float64 `json:"cost,omitempty"`
	Unpriced int64   `json:"unpriced_tokens,omitempty"`
}

// Cost is what u cost at prices, and whether its model has a price.
func (u *Usage) Cost(prices map[string]Price) (float64, bool) {
	p, ok := prices[u.Model]
	if !ok {
		return 0, false
	}
	return (float64(u.Prompt)*p.Input + float64(u.Completion)*p.Output) / 1e6, true
}

// count adds u to w.
func (w *SpendWindow) count(u *Usage, prices map[string]Price) {
	if u.Tag == UsageReplay {
		w.Replays++
	} else {
		w.Runs++
	}
	w.Prompt += u.Prompt
	w.Completion += u.Completion
	w.Tokens += u.Total()
	if u.Unreported {
		w.Unreported++
	}
	if c, ok := u.Cost(prices); ok {
		w.Cost += c
	} else {
		w.Unpriced += u.Total()
	}
}

// Spent reports whether the window's cap is reached.
func (w SpendWindow) Spent() bool { return w.Limit > 0 && w.Tokens >= w.Limit }

// Text is the window's usage as a person reads it: "512034 of 500000
// tokens (spent)", "1200 tokens", with the cost when priced.
func (w SpendWindow) Text(priced bool) string {
	s := fmt.Sprintf("%d tokens", w.Tokens)
	if w.Limit > 0 {
		s = fmt.Sprintf("%d of %d tokens", w.Tokens, w.Limit)
	}
	if priced && w.Tokens > 0 {
		s += ", cost " + CostText(w.Cost)
		if w.Unpriced > 0 {
			s += fmt.Sprintf(" (%d tokens unpriced)", w.Unpriced)
		}
	}
	if w.Unreported > 0 {
		s += fmt.Sprintf(", %d run(s) with unreported usage", w.Unreported)
	}
	if w.Spent() {
		s += " (spent)"
	}
	return s
}

// CostText writes a cost with the digits that matter: 1234, 1.92,
// 0.0042.
func CostText(c float64) string {
	switch {
	case c >= 100:
		return fmt.Sprintf("%.0f", c)
	case c >= 1:
		return fmt.Sprintf("%.2f", c)
	}
	return fmt.Sprintf("%.4f", c)
}

// spendReport sums the ledger, in one pass, for the daemon and for each
// hook with a budget or with usage in the last day.
func (s *state) spendReport(now time.Time) Spend {
	s.spend.trim(now)
	d := s.cfg.Budget
	sp := Spend{Hooks: map[string]SpendWindows{}, Priced: len(d.Prices) > 0}
	sp.Daemon.Hour.Limit, sp.Daemon.Day.Limit = d.PerHour, d.PerDay
	hooks := map[string]*SpendWindows{}
	of := func(name string) *SpendWindows {
		w := hooks[name]
		if w == nil {
			w = &SpendWindows{}
			if ent := s.hooks[name]; ent != nil {
				b := ent.hook.Budget
				w.Hour.Limit, w.Day.Limit, w.MaxTokensPerRun = b.PerHour, b.PerDay, b.MaxTokensPerRun
			}
			hooks[name] = w
		}
		return w
	}
	for name, ent := range s.hooks {
		if ent.hook.Budget != (Budget{}) {
			of(name)
		}
	}
	hourFrom, dayFrom := now.Add(-BudgetHour), now.Add(-BudgetDay)
	for _, u := range s.spend.recs {
		if u.At.Before(dayFrom) {
			continue
		}
		w := of(u.Hook)
		w.Day.count(u, d.Prices)
		sp.Daemon.Day.count(u, d.Prices)
		if !u.At.Before(hourFrom) {
			w.Hour.count(u, d.Prices)
			sp.Daemon.Hour.count(u, d.Prices)
		}
	}
	for name, w := range hooks {
		sp.Hooks[name] = *w
	}
	return sp
}
