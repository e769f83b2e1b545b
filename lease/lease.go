// Package lease keeps a cluster node's hold on the scheduler lease: it
// heartbeats, takes the lease when it is free, renews it while the node
// holds it, gives it up when the node stops, and tells its owner (the
// engine) when the node took the lease and when it lost it. What taking
// over or losing the lease means for scheduling is the owner's; the lease
// itself is a Member's (store/postgres: docs/cluster.md).
package lease

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hookd/hookd/clock"
)

// Member is the part of a cluster member (engine.Cluster) that holds
// the scheduler lease.
type Member interface {
	// Node names this node.
	Node() string
	// Interval is how often the node heartbeats and the scheduler renews
	// its lease; Timeout how long either lasts without renewal.
	Interval() time.Duration
	Timeout() time.Duration
	// Heartbeat tells the others this node is alive.
	Heartbeat(ctx context.Context) error
	// Lead takes the scheduler lease, or renews it when this node holds
	// it; ok is false while another node holds it. holder names the
	// holder either way.
	Lead(ctx context.Context) (holder string, ok bool, err error)
	// Resign gives the lease up, so another node takes it at once.
	Resign(ctx context.Context) error
	// Vacant reports whether Lead would take the lease now: it ran out,
	// or its holder's process is gone (false where that cannot be told
	// before the lease runs out, and while this node holds it).
	Vacant(ctx context.Context) (bool, error)
	// Remaining reads the lease without changing it: how long this
	// node's hold on it lasts from now (the hold its latest successful
	// Lead took or renewed, unchanged since: another node that took the
	// lease meanwhile ends it), or zero when it ran out or this node does
	// not hold it. A Lead that failed may have renewed the lease all the
	// same (its answer came too late, or not at all); Remaining tells.
	Remaining(ctx context.Context) (time.Duration, error)
}

// Config is what a Keeper holds the lease with and whom it tells.
type Config struct {
	Member Member
	Clock  clock.Clock
	Log    *slog.Logger
	// Stopping is closed when the node stops: the Keeper gives the lease
	// up at once, tries for it no more, and heartbeats on (the node's
	// runs finish meanwhile) until Run's context ends.
	Stopping <-chan struct{}
	// TakeOver prepares the node to schedule, once it took the lease; an
	// error gives the lease up again.
	TakeOver func(ctx context.Context) error
	// Took is told once the node holds the lease and schedules.
	Took func()
	// Held is told after each attempt to renew the lease while the node
	// holds it (a failed one included, until the lease is lost).
	Held func(ctx context.Context)
	// Lost is told when the node held the lease and lost it: another node
	// holds it, or it could not be renewed in time and, read again
	// (Member.Remaining), it is not the node's any more, or it could not
	// be read either. The node must stop scheduling; Leading stays true,
	// so it is told once.
	Lost func(reason error)
}

// Keeper holds a node's scheduler lease: Try once at start, then Run.
type Keeper struct {
	cfg     Config
	leading atomic.Bool            // this node holds the lease (and schedules)
	holder  atomic.Pointer[string] // the lease's holder, as last seen
	expires clock.Mono             // when the lease runs out, as this node knows (Try's)
	vacant  chan struct{}          // the lease is vacant: try it now (vacancyLoop)
}

// New returns a Keeper that does nothing until Try or Run.
func New(cfg Config) *Keeper {
	return &Keeper{cfg: cfg, vacant: make(chan struct{}, 1)}
}

// Leading reports whether this node holds the lease.
func (k *Keeper) Leading() bool { return k.leading.Load() }

// Holder returns the node that holds the lease, as last seen ("" before
// the first Lead answered).
func (k *Keeper) Holder() string {
	if p := k.holder.Load(); p != nil {
		return *p
	}
	return ""
}

// Run heartbeats and takes or renews the lease every Interval, and
// sooner when the lease falls vacant, until ctx ends. A stopping node
// gives the lease up at once but heartbeats on while its runs finish.
// Try and Run are not called at once.
func (k *Keeper) Run(ctx context.Context) {
	go k.vacancyLoop(ctx)
	k.leadLoop(ctx)
}

func (k *Keeper) leadLoop(ctx context.Context) {
	m := k.cfg.Member
	t := k.cfg.Clock.NewTicker(m.Interval())
	defer t.Stop()
	stopping, resigned := k.cfg.Stopping, false
	for {
		vacant := false
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-stopping:
			stopping = nil
		case <-k.vacant:
			vacant = true // heartbeats keep to the ticker
		}
		if !vacant {
			if err := bounded(ctx, m.Interval(), m.Heartbeat); err != nil && ctx.Err() == nil {
				k.cfg.Log.Warn("heartbeat failed", "err", err)
			}
		}
		select {
		case <-k.cfg.Stopping:
			if !resigned && k.leading.Load() {
				resigned = true
				if err := m.Resign(context.WithoutCancel(ctx)); err != nil {
					k.cfg.Log.Warn("give up the scheduler lease; another node takes it when it expires", "err", err)
				}
			}
			continue
		default:
		}
		k.Try(ctx)
		if k.leading.Load() {
			k.cfg.Held(ctx)
		}
	}
}

// vacancyPoll is how often a node that does not hold the lease asks
// whether its holder's process is gone (Member.Vacant), so that the
// lease moves within about this long of its death rather than when it
// runs out (heartbeat_timeout): one small query a node.
const vacancyPoll = 250 * time.Millisecond

// vacancyLoop wakes leadLoop when the lease is vacant while this node
// does not hold it.
func (k *Keeper) vacancyLoop(ctx context.Context) {
	t := k.cfg.Clock.NewTimer(vacancyPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.cfg.Stopping:
			return
		case <-t.C():
		}
		t.Reset(vacancyPoll)
		if k.leading.Load() {
			continue
		}
		if vacant, err := k.cfg.Member.Vacant(ctx); err == nil && vacant {
			select {
			case k.vacant <- struct{}{}:
			default:
			}
		}
	}
}

// bounded calls f with ctx bound by d: a renewal or a heartbeat that
// hangs (a lock on the lease's row, a database that stopped answering)
// fails in time, and a holder that cannot renew is told it lost the
// lease (Try) instead of waiting on, sure it still schedules.
func bounded(ctx context.Context, d time.Duration, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return f(ctx)
}

// Try takes or renews the lease once; a node that takes it over is
// prepared (TakeOver) before it leads (Took), and one that lost it is
// told (Lost).
func (k *Keeper) Try(ctx context.Context) {
	m, c := k.cfg.Member, k.cfg.Clock
	began := c.Mono()
	var (
		holder string
		ok     bool
	)
	// A renewal that hangs returns by when the lease would run out, as
	// this node knows (expires), and after Timeout less an Interval at
	// most; it has an Interval at least (a holder that stalled past that
	// time finds out from the database what became of the lease).
	bound := m.Timeout() - m.Interval()
	if k.leading.Load() {
		bound = min(bound, max(k.expires.Sub(began), m.Interval()))
	}
	err := bounded(ctx, bound, func(ctx context.Context) (err error) {
		holder, ok, err = m.Lead(ctx)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		if k.leading.Load() && k.expires.Sub(c.Mono()) <= m.Interval() {
			k.renewalFailed(ctx, err)
			return
		}
		k.cfg.Log.Warn("take or renew the scheduler lease", "err", err)
		return
	}
	k.holder.Store(&holder)
	switch {
	case ok && k.leading.Load():
		k.expires = began.Add(m.Timeout())
	case ok:
		k.expires = began.Add(m.Timeout())
		if err := k.cfg.TakeOver(ctx); err != nil {
			k.cfg.Log.Error("take over scheduling; giving the lease up", "err", err)
			if err := m.Resign(context.WithoutCancel(ctx)); err != nil {
				k.cfg.Log.Warn("give up the scheduler lease", "err", err)
			}
			return
		}
		k.leading.Store(true)
		k.cfg.Log.Info("this node schedules now", "node", m.Node(), "took", clock.Since(c, began).Round(time.Millisecond))
		k.cfg.Took()
	case k.leading.Load():
		k.cfg.Lost(fmt.Errorf("node %s holds it now", holder))
	}
}

// renewalFailed decides whether the holder lost the lease once its
// renewals failed until no more than an interval of it is left (failed:
// the latest one's error). A renewal the node took for failed may have
// renewed the lease all the same: the node gave up waiting for its answer
// (its deadline passed, its connection was lost), which says nothing of
// whether it reached the database and committed there. So the lease is
// read again (Member.Remaining), within an interval. While it is still
// this node's, with the token its writes are fenced by, and for more than
// an interval, the node leads on, and counts from now on when the
// database says the lease runs out. Otherwise the node is told it lost
// the lease, as before the read: one that cannot renew in time must stop
// before the lease runs out and another takes it over, and one that
// cannot read the lease either cannot tell it holds it.
func (k *Keeper) renewalFailed(ctx context.Context, failed error) {
	m, c := k.cfg.Member, k.cfg.Clock
	began := c.Mono()
	var left time.Duration
	err := bounded(ctx, m.Interval(), func(ctx context.Context) (err error) {
		left, err = m.Remaining(ctx)
		return err
	})
	switch {
	case ctx.Err() != nil:
	case err != nil:
		k.cfg.Lost(fmt.Errorf("it could not be renewed in time: %w; nor read: %w", failed, err))
	case left <= m.Interval():
		k.cfg.Lost(fmt.Errorf("it could not be renewed in time: %w", failed))
	default:
		k.expires = began.Add(left)
		k.cfg.Log.Warn("renew the scheduler lease: the renewal failed, yet the lease is still this node's",
			"left", left.Round(time.Millisecond), "err", failed)
	}
}
