package store

import "github.com/hookd/hookd/clock"

// Option configures a store as it opens: SQLite's Open and PostgreSQL's
// (store/postgres) take the same options.
type Option func(*Options)

// Options are what the options set. Configure fills them in.
type Options struct {
	// Clock stamps what the store records itself (a watch snapshot's
	// time, a migration's) and times its waits and durations (the
	// checkpointer, the search indexer, a prune's duration): the engine's
	// clock. Default clock.System.
	Clock clock.Clock
}

// WithClock makes the store read c: the engine's clock.
func WithClock(c clock.Clock) Option { return func(o *Options) { o.Clock = c } }

// Configure applies opts to the defaults.
func Configure(opts []Option) Options {
	var o Options
	for _, f := range opts {
		f(&o)
	}
	if o.Clock == nil {
		o.Clock = clock.System{}
	}
	return o
}
