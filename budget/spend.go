package budget

import (
	"fmt"
	"time"
)

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
// tokens (spent)", "1200 tokens", with the cost when priced. It leaves
// out the runs with unreported usage: SpendWindows.UnreportedText says
// them once for both windows.
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
	if w.Spent() {
		s += " (spent)"
	}
	return s
}

// UnreportedText says, once for both windows, how many runs of the last
// 24 hours made a model call whose server reported no usage ("2 run(s)
// with unreported usage in 24h"), or "" when none did. The last hour's
// runs are among the day's: said per window, it would only repeat.
func (ws SpendWindows) UnreportedText() string {
	if ws.Day.Unreported == 0 {
		return ""
	}
	return fmt.Sprintf("%d run(s) with unreported usage in 24h", ws.Day.Unreported)
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

// Report sums the ledger, in one pass, for the daemon d and for each
// hook with a budget or with usage in the last day; hooks holds the
// budget of each hook hookd runs. It drops the records older than a day.
func (l *Ledger) Report(now time.Time, d Daemon, hooks map[string]Hook) Spend {
	l.trim(now)
	sp := Spend{Hooks: map[string]SpendWindows{}, Priced: len(d.Prices) > 0}
	sp.Daemon.Hour.Limit, sp.Daemon.Day.Limit = d.PerHour, d.PerDay
	ws := map[string]*SpendWindows{}
	of := func(name string) *SpendWindows {
		w := ws[name]
		if w == nil {
			w = &SpendWindows{}
			if b, ok := hooks[name]; ok {
				w.Hour.Limit, w.Day.Limit, w.MaxTokensPerRun = b.PerHour, b.PerDay, b.MaxTokensPerRun
			}
			ws[name] = w
		}
		return w
	}
	for name, b := range hooks {
		if b != (Hook{}) {
			of(name)
		}
	}
	hourFrom, dayFrom := now.Add(-Hour), now.Add(-Day)
	for _, u := range l.recs {
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
	for name, w := range ws {
		sp.Hooks[name] = *w
	}
	return sp
}
