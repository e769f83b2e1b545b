package engine

import "time"

// Retention says how long the store keeps history. A zero duration keeps
// that kind of record forever.
type Retention struct {
	Runs     time.Duration // finished runs older than this are deleted...
	KeepLast int           // ...except each hook's newest KeepLast runs
	Events   time.Duration // dispatched events older than this are deleted (never a pending one)
	Skipped  time.Duration // skip and drop records older than this are deleted
}

// HookRetention is a hook's own retention of its runs; a nil field keeps
// the daemon's.
type HookRetention struct {
	Runs     *time.Duration
	KeepLast *int
}

// For returns r with h's overrides applied.
func (r Retention) For(h HookRetention) Retention {
	if h.Runs != nil {
		r.Runs = *h.Runs
	}
	if h.KeepLast != nil {
		r.KeepLast = *h.KeepLast
	}
	return r
}
