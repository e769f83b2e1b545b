package budget

import (
	"time"
)

// The windows of the spend limits. They slide: per_hour is what runs that
// finished in the last 60 minutes used, per_day the last 24 hours.
const (
	Hour = time.Hour
	Day  = 24 * time.Hour
)

// UsageKept is how long the store keeps usage records: AddUsage deletes
// older ones. It is longer than the longest window, so that status can
// always show a full day.
const UsageKept = 7 * 24 * time.Hour

// Hook bounds what a hook's model stage may spend, in tokens as the
// servers report them (prompt + completion): one run (the model stage
// stops), and all its runs in any hour and day (further triggers are
// refused); 0: no cap.
type Hook struct {
	MaxTokensPerRun int
	PerHour         int64 `json:",omitempty"`
	PerDay          int64 `json:",omitempty"`
}

// Daemon is the daemon-wide budget (hookd.yaml): the tokens all hooks
// together may use in any hour and any day (0: no cap), and the prices
// that turn tokens into cost for status.
type Daemon struct {
	PerHour int64
	PerDay  int64
	Prices  map[string]Price // model name as the hook or hookd.yaml names it -> price
	File    string           // the settings file that sets it, for messages (default hookd.yaml)
}

// Limit is one cap a trigger is held to.
type Limit struct {
	Hook   string // "": the daemon's
	Window time.Duration
	Tokens int64
	Field  string // budget.per_hour, budget.per_day
	File   string // where it is set
}

// Limits lists the caps a run of the hook name (its file file, its
// budget h) is held to: the hook's, then the daemon's d.
func Limits(name, file string, h Hook, d Daemon) []Limit {
	var out []Limit
	add := func(hook string, window time.Duration, tokens int64, field, file string) {
		if tokens > 0 {
			out = append(out, Limit{hook, window, tokens, field, file})
		}
	}
	add(name, Hour, h.PerHour, "budget.per_hour", file)
	add(name, Day, h.PerDay, "budget.per_day", file)
	dfile := d.File
	if dfile == "" {
		dfile = "hookd.yaml"
	}
	add("", Hour, d.PerHour, "budget.per_hour", dfile)
	add("", Day, d.PerDay, "budget.per_day", dfile)
	return out
}

// Refusal says which budget is spent and when the next run is allowed.
type Refusal struct {
	Detail    string
	Remaining time.Duration // 0: unknown
}
