package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// dispatchDurable dispatches a stored pending event, waits until the runs
// it started have their start recorded, and marks it dispatched. An event
// that arrives while the engine stops stays pending for the next start.
// again says the event may have been dispatched before (DispatchPending:
// a crash or a failover came before its mark): it then skips the hooks the
// store recorded it reached, and so reaches each hook once.
func (e *Engine) dispatchDurable(ctx context.Context, ev *Event, again bool) (*dispatched, error) {
	var reached []string
	if again {
		var err error
		if reached, err = e.cfg.Store.DispatchedTo(ctx, ev.Seq); err != nil {
			return nil, err
		}
	}
	out, err := e.dispatchOnLoop(ctx, ev, true, nil, reached)
	if err != nil {
		return nil, err
	}
	return e.settle(ctx, ev, out)
}

// settle decides what becomes of the stored pending event ev once the
// loop dispatched it (out): its fate is stored; it is marked dispatched
// once the starts it caused are recorded, and stays pending when one
// was not, or when the engine is stopping. It is the one place that
// decides it, for every event stored pending (emitWithStart's with
// several hooks too).
func (e *Engine) settle(ctx context.Context, ev *Event, out *dispatched) (*dispatched, error) {
	starts := out.starts
	if !out.stopping {
		e.storeFate(ctx, ev, out.fate())
	}
	if out.claim.Claimed {
		if err := e.markDispatched(ctx, ev.Seq); err != nil {
			e.log.Error("mark claimed event dispatched", "event", ev.ID, "type", ev.Type, "err", err)
		}
		return nil, nil
	}
	if out.stopping {
		return nil, ErrStopped
	}
	marked := len(starts) > 0
	var notStarted []string
	for _, act := range starts {
		select {
		case <-act.started:
			marked = marked && act.marked
			if act.startErr != nil {
				notStarted = append(notStarted, act.run.Hook)
			}
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
	if len(notStarted) > 0 {
		// A run it started could not be recorded (the store failed, or
		// a cluster's release did): marked dispatched, the event would
		// never reach that hook. It stays pending, and is dispatched
		// again to the hooks it did not reach: by a cluster's scheduler
		// within a heartbeat interval, or at the next start.
		e.log.Warn("event stays pending: the start of a run it triggered was not recorded; it is dispatched again to the hooks it did not reach",
			"event", ev.ID, "type", ev.Type, "hooks", strings.Join(notStarted, ","))
		return out, nil
	}
	if err := e.markDispatched(ctx, ev.Seq); err != nil {
		e.log.Error("mark event dispatched; it will be dispatched again at the next start, to the hooks it did not reach",
			"event", ev.ID, "type", ev.Type, "err", err)
	}
	return out, nil
}

// markDispatched marks the stored event seq dispatched, within
// StoreTimeout, whatever becomes of ctx. On a cluster only the scheduler
// dispatches, and its mark is fenced by the lease (Cluster.Fence): an
// event a scheduler dispatched after it lost the lease stays pending for
// the next one.
func (e *Engine) markDispatched(ctx context.Context, seq int64) error {
	ctx, cancel := e.storeCtx(ctx)
	defer cancel()
	if cl := e.cfg.Cluster; cl != nil {
		ctx = cl.Fence(ctx)
	}
	return e.cfg.Store.MarkDispatched(ctx, seq)
}

// storeFate records the fate of the stored event ev (Store.SetEventFate),
// within StoreTimeout, whatever becomes of ctx. It is told, not needed: a
// failure is logged, and the event's record says no fate.
func (e *Engine) storeFate(ctx context.Context, ev *Event, f *EventFate) {
	ev.Fate = f
	ctx, cancel := e.storeCtx(ctx)
	defer cancel()
	if err := e.cfg.Store.SetEventFate(ctx, ev.Seq, f); err != nil {
		e.log.Warn("store what became of an event", "event", ev.ID, "type", ev.Type, "err", err)
	}
}

// DispatchPending dispatches the stored events that were accepted but not
// dispatched before the previous process stopped (a crash between storing
// and dispatching, or a stop while dispatching), oldest first. A daemon
// calls it once after Start and before it accepts new events. It returns
// how many it dispatched.
func (e *Engine) DispatchPending(ctx context.Context) (int, error) {
	ds := e.cfg.Store
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
		fresh := 0
		for _, ev := range evs {
			if done[ev.Seq] {
				// Dispatched in this call and pending still: the start of
				// a run it triggered, or its mark, was not recorded. It
				// waits for the next call (the next start; a cluster's
				// scheduler's next interval): the events after it go on.
				continue
			}
			fresh++
			done[ev.Seq] = true
			out, err := e.dispatchDurable(ctx, ev, true)
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
		if fresh == 0 {
			// None left but those dispatchDurable left pending, and
			// logged so.
			return n, nil
		}
	}
}
