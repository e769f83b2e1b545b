package budget

import (
	"fmt"
	"sort"
	"time"

	"github.com/hookd/hookd/internal/human"
)

// Ledger is the usage of the last Day, oldest first. It is not safe for
// concurrent use: the engine's loop owns it.
type Ledger struct {
	recs []*Usage
}

// NewLedger is a ledger of recs, oldest first (as the store's
// UsageSince lists them).
func NewLedger(recs []*Usage) Ledger { return Ledger{recs: recs} }

// Add records u, keeping the ledger in time order; nil adds nothing.
func (l *Ledger) Add(u *Usage) {
	if u == nil {
		return
	}
	i := sort.Search(len(l.recs), func(i int) bool { return l.recs[i].At.After(u.At) })
	l.recs = append(l.recs, nil)
	copy(l.recs[i+1:], l.recs[i:])
	l.recs[i] = u
}

// trim drops the records older than a day before now.
func (l *Ledger) trim(now time.Time) {
	from := now.Add(-Day)
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
func (l *Ledger) each(hook string, from time.Time, fn func(*Usage)) {
	i := sort.Search(len(l.recs), func(i int) bool { return !l.recs[i].At.Before(from) })
	for _, u := range l.recs[i:] {
		if hook == "" || u.Hook == hook {
			fn(u)
		}
	}
}

// used is the tokens hook ("": every hook) used at or after from.
func (l *Ledger) used(hook string, from time.Time) int64 {
	var n int64
	l.each(hook, from, func(u *Usage) { n += u.Total() })
	return n
}

// freeAt is when hook's usage in a window from..now falls below limit as
// its oldest records leave the window.
func (l *Ledger) freeAt(hook string, from time.Time, window time.Duration, used, limit int64) time.Time {
	var at time.Time
	l.each(hook, from, func(u *Usage) {
		if used >= limit {
			used -= u.Total()
			at = u.At.Add(window)
		}
	})
	return at
}

// Check is the one place that decides whether the budget of the hook
// name (its file file, its budget h), or the daemon's d, is spent at now:
// a Refusal saying which and until when, or nil. It drops the records
// older than a day.
func (l *Ledger) Check(name, file string, h Hook, d Daemon, now time.Time) *Refusal {
	l.trim(now)
	for _, b := range Limits(name, file, h, d) {
		from := now.Add(-b.Window)
		used := l.used(b.Hook, from)
		if used < b.Tokens {
			continue
		}
		whose := "hook " + b.Hook + "'s runs"
		if b.Hook == "" {
			whose = "the runs of all hooks"
		}
		r := &Refusal{}
		if at := l.freeAt(b.Hook, from, b.Window, used, b.Tokens); at.After(now) {
			r.Remaining = at.Sub(now)
		}
		r.Detail = fmt.Sprintf("%s used %d tokens in the last %s (%s: %d in %s); the next run is allowed in %s",
			whose, used, human.Exact(b.Window), b.Field, b.Tokens, b.File, human.Exact(r.Remaining.Round(time.Second)))
		return r
	}
	return nil
}
