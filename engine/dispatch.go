package engine

import (
	"context"
	"errors"
	"fmt"
)

// DispatchStore is implemented by stores that remember, per event, whether
// it was dispatched. With one, Emit is at least once across a crash: the
// event is stored as pending, dispatched, and marked dispatched once the
// records of what it triggered are stored; DispatchPending, called when a
// daemon starts, dispatches what a crash left pending.
type DispatchStore interface {
	// AppendPendingEvent stores ev, marked not yet dispatched, and sets its
	// Seq; an ID stored before gives ErrDuplicateEvent (and the stored Seq)
	// and changes nothing.
	AppendPendingEvent(ctx context.Context, ev *Event) error
	// MarkDispatched records that the event with this seq was dispatched.
	MarkDispatched(ctx context.Context, seq int64) error
	// PendingEvents returns up to limit events not yet dispatched, oldest
	// first.
	PendingEvents(ctx context.Context, limit int) ([]*Event, error)
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
func (e *Engine) dispatchDurable(ctx context.Context, ds DispatchStore, ev *Event) (*dispatched, error) {
	out, err := e.dispatchOnLoop(ctx, ev, true, nil)
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
			// mark waits for the next start, which dispatches it again.
			return out, ctx.Err()
		}
	}
	if marked {
		return out, nil // with the start of the one run it started
	}
	if err := ds.MarkDispatched(context.WithoutCancel(ctx), ev.Seq); err != nil {
		e.log.Error("mark event dispatched; it will be dispatched again at the next start",
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
	for {
		evs, err := ds.PendingEvents(ctx, 256)
		if err != nil {
			return n, fmt.Errorf("read pending events: %w", err)
		}
		if len(evs) == 0 {
			return n, nil
		}
		for _, ev := range evs {
			out, err := e.dispatchDurable(ctx, ds, ev)
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
