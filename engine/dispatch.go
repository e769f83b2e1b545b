package engine

import (
	"context"
	"errors"
	"fmt"
)

// DispatchStore is implemented by stores that remember, per event, whether
// it was dispatched, and to which hooks. With one, an event is delivered
// once to each hook it matches across a crash (or a cluster's failover):
// the event is stored as pending and dispatched; the first record of each
// run it triggers (started, queued, pending or refused by a gate) and
// each merge of it into a pending run records, in its own transaction,
// that the event reached that hook (Run.EventSeq, Merged.EventSeq); the
// event is marked dispatched once those records are stored.
// DispatchPending, called when a daemon starts (and on a cluster's
// scheduler), dispatches what a crash left pending, to the hooks it had
// not reached.
type DispatchStore interface {
	// AppendPendingEvent stores ev, marked not yet dispatched, and sets its
	// Seq; an ID stored before gives ErrDuplicateEvent (and the stored Seq)
	// and changes nothing.
	AppendPendingEvent(ctx context.Context, ev *Event) error
	// MarkDispatched records that the event with this seq was dispatched,
	// and drops the records of the hooks it reached (DispatchedTo): they
	// are kept only while it is pending.
	MarkDispatched(ctx context.Context, seq int64) error
	// PendingEvents returns up to limit events not yet dispatched, oldest
	// first.
	PendingEvents(ctx context.Context, limit int) ([]*Event, error)
	// DispatchedTo returns the hooks the event with this seq reached while
	// it was pending, sorted: those a run record or a merge recorded it
	// for. A record is kept only for an event still pending.
	DispatchedTo(ctx context.Context, seq int64) ([]string, error)
}

// DispatchStarter is a DispatchStore that records a run's start and
// marks the event that started it dispatched in one transaction. With
// one, an event that starts exactly one run costs a write less, and its
// mark is never apart from the start.
type DispatchStarter interface {
	DispatchStore
	// StartRunDispatched is StartRun that also marks the event with this
	// seq dispatched, in the same transaction.
	StartRunDispatched(ctx context.Context, r *Run, seq int64) error
}

// EventStarter is a DispatchStarter that stores an event in the
// transaction of the run it starts. With one, an event that starts
// exactly one run at once, and whose ID the engine made (Emit without an
// ID: it cannot have been stored before), is stored with that run's start
// — one commit instead of two — and is never pending: it is acknowledged
// once both are stored, and neither is stored without the other.
type EventStarter interface {
	DispatchStarter
	// StartRunWithEvent stores ev, marked dispatched, setting ev.Seq, and
	// starts r as StartRun does, in one transaction: both or neither.
	StartRunWithEvent(ctx context.Context, r *Run, ev *Event) error
}

// dispatchDurable dispatches a stored pending event, waits until the runs
// it started have their start recorded, and marks it dispatched. An event
// that arrives while the engine stops stays pending for the next start.
// again says the event may have been dispatched before (DispatchPending:
// a crash or a failover came before its mark): it then skips the hooks the
// store recorded it reached, and so reaches each hook once.
func (e *Engine) dispatchDurable(ctx context.Context, ds DispatchStore, ev *Event, again bool) (*dispatched, error) {
	var reached []string
	if again {
		var err error
		if reached, err = ds.DispatchedTo(ctx, ev.Seq); err != nil {
			return nil, err
		}
	}
	out, err := e.dispatchOnLoop(ctx, ev, true, nil, reached)
	if err != nil {
		return nil, err
	}
	starts := out.starts
	if out.claimed {
		if err := ds.MarkDispatched(context.WithoutCancel(ctx), ev.Seq); err != nil {
			e.log.Error("mark claimed event dispatched", "event", ev.ID, "type", ev.Type, "err", err)
		}
		return nil, nil
	}
	if out.stopping {
		return nil, ErrStopped
	}
	marked := len(starts) > 0
	for _, act := range starts {
		select {
		case <-act.started:
			marked = marked && act.marked
		case <-ctx.Done():
			// The runs are decided and their goroutines record them; the
			// mark waits for the next start, which dispatches it again to
			// the hooks it did not reach.
			return out, ctx.Err()
		}
	}
	if marked {
		return out, nil // with the start of the one run it started
	}
	if err := ds.MarkDispatched(context.WithoutCancel(ctx), ev.Seq); err != nil {
		e.log.Error("mark event dispatched; it will be dispatched again at the next start, to the hooks it did not reach",
			"event", ev.ID, "type", ev.Type, "err", err)
	}
	return out, nil
}

// DispatchPending dispatches the stored events that were accepted but not
// dispatched before the previous process stopped (a crash between storing
// and dispatching, or a stop while dispatching), oldest first. A daemon
// calls it once after Start and before it accepts new events. It returns
// how many it dispatched; a store without dispatch state has none.
func (e *Engine) DispatchPending(ctx context.Context) (int, error) {
	ds, ok := e.cfg.Store.(DispatchStore)
	if !ok {
		return 0, nil
	}
	if e.cfg.Cluster != nil {
		// One dispatcher at a time on a cluster's scheduler, Emit included:
		// an event read pending here is not being dispatched by an Emit.
		e.dispatchMu.Lock()
		defer e.dispatchMu.Unlock()
	}
	n := 0
	done := map[int64]bool{}
	for {
		evs, err := ds.PendingEvents(ctx, 256)
		if err != nil {
			return n, fmt.Errorf("read pending events: %w", err)
		}
		if len(evs) == 0 {
			return n, nil
		}
		for _, ev := range evs {
			if done[ev.Seq] {
				// Dispatched in this call and pending still: its mark was
				// not stored. Reading it again would loop.
				return n, fmt.Errorf("dispatch pending event %s: it stays pending, its mark was not stored", ev.ID)
			}
			done[ev.Seq] = true
			out, err := e.dispatchDurable(ctx, ds, ev, true)
			if errors.Is(err, ErrNotScheduler) {
				return n, nil // another node schedules now, and dispatches them
			}
			if err != nil {
				return n, fmt.Errorf("dispatch pending event %s: %w", ev.ID, err)
			}
			if e.cfg.Cluster == nil { // a cluster's scheduler dispatches what every node stored this way
				e.log.Info("dispatched an event left pending by the previous stop",
					"event", ev.ID, "type", ev.Type, "seq", ev.Seq, "runs", len(out.fired))
			}
			n++
		}
	}
}
