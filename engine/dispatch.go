package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// dispatchDurable dispatches a stored pending event, waits until the runs
// it started have their start recorded and the loop's other records of
// it are written, and marks it dispatched (settle). An event
// that arrives while the engine stops stays pending for the next start.
// again says the event may have been dispatched before (DispatchPending:
// a crash or a failover came before its mark, or a run's start was not
// recorded): it then skips the hooks it reached before (reachedBefore),
// and so reaches each hook once.
func (e *Engine) dispatchDurable(ctx context.Context, ev *Event, again bool) (*dispatched, error) {
	var reached []string
	if again {
		var err error
		reached, err = e.reachedBefore(ctx, ev.Seq)
		if errors.Is(err, errInDoubt) {
			// Dispatched again now, it would be refused in_flight at the
			// hook behind the run in doubt, and marked dispatched: it waits
			// until the release is read back (releaseEnded wakes the sweep).
			return &dispatched{}, nil
		}
		if err != nil {
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
// once the starts it caused are recorded and so are the records of what
// it did to the other hooks (a run that waits, a merge into a pending
// run, a refusal: the writer's, out.records, each of them), and stays
// pending when one was not, or when the engine is stopping. It is the
// one place that decides it, for every event stored pending
// (emitWithStart's with several hooks too): a mark stored before such a
// record, and a crash between them, and the event would never reach that
// hook.
func (e *Engine) settle(ctx context.Context, ev *Event, out *dispatched) (*dispatched, error) {
	starts := out.starts
	if !out.stopping {
		e.storeFate(ctx, ev, out.fate())
	}
	if out.claim.Claimed {
		if err := e.markDispatched(ctx, ev.Seq); err != nil {
			e.log.Error("mark claimed event dispatched", "event", ev.ID, "type", ev.Type, "err", err)
		} else {
			e.decided.forget(ev.Seq)
		}
		return nil, nil
	}
	if out.stopping {
		return nil, ErrStopped
	}
	// Until its mark is stored, the event is dispatched again, and what
	// the loop decided now is what it did to each hook, whether its record
	// is stored yet or not.
	e.keepDecisions(ev.Seq, out.decided)
	marked := len(starts) > 0
	var notStarted []string
	for i, act := range starts {
		select {
		case <-act.started:
			marked = marked && act.marked
			if act.startErr != nil {
				notStarted = append(notStarted, out.startHooks[i])
			}
		case <-ctx.Done():
			// The runs are decided and their goroutines record them; the
			// mark waits for the next start, which dispatches it again to
			// the hooks it did not reach.
			return out, ctx.Err()
		}
	}
	if marked {
		e.decided.forget(ev.Seq)
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
	if wr, err := e.wr.unwritten(out.records); wr != nil {
		// A record of what it did to a hook is not stored: the store
		// refused it, or is slow or stalled. Each one counts, not only the
		// last: marked dispatched, a crash before that record lands (or
		// any crash, the record refused) and the event would never reach
		// that hook. It stays pending; a dispatch again passes by the
		// hooks whose record is stored (reachedBefore: a cluster
		// scheduler's decisions, elsewhere the store once the writer
		// wrote it), and reaches the others.
		e.log.Warn("event stays pending: the record of what it did to a hook is not stored; it is dispatched again to the hooks it did not reach",
			"event", ev.ID, "type", ev.Type, "hook", wr.hook, "run", wr.run, "err", err)
		return out, nil
	}
	if err := e.markDispatched(ctx, ev.Seq); err != nil {
		e.log.Error("mark event dispatched; it will be dispatched again at the next start, to the hooks it did not reach",
			"event", ev.ID, "type", ev.Type, "err", err)
		return out, nil
	}
	e.decided.forget(ev.Seq)
	return out, nil
}

// reachedBefore returns the hooks the stored pending event seq reached
// before: those the store recorded (Store.DispatchedTo: before a crash or
// a failover too), and those this engine's loop decided it for whose
// record may not be stored yet (decisions). It is where a dispatch again
// learns what the event did.
func (e *Engine) reachedBefore(ctx context.Context, seq int64) ([]string, error) {
	hooks, err := e.decided.reached(ctx, seq)
	if err != nil {
		return nil, err
	}
	if e.cfg.Cluster == nil {
		// No decisions kept (Engine.keepDecisions): the store is the whole
		// truth once the writer wrote what the loop decided before.
		if wr := e.wr.last(); wr != nil {
			e.wr.awaitWritten(wr)
		}
	}
	stored, err := e.cfg.Store.DispatchedTo(ctx, seq)
	if err != nil {
		return nil, err
	}
	return append(hooks, stored...), nil
}

// decision is what the loop decided for a stored event at one hook: a
// run it started now (start), or a record the writer stores (a run that
// waits, a refusal, a merge into a pending run; start nil).
type decision struct {
	hook  string
	start *active
}

// decisions are what this engine's loop decided for the stored events it
// dispatched that are still pending: by seq, by hook, the run it started
// there (nil: a record the writer stores). The loop decides, the writer
// persists (writer.go): a record of a run that waits, of a refusal or of
// a merge may wait in the writer (the store is slow or stalled) while the
// event stays pending — another hook's run was not released, or the mark
// was not stored — and a dispatch again that read only the store would
// give the event to that hook a second time (its pending run ran with
// the event, and then another one did). What the loop decided is the
// truth for as long as this engine schedules; the store's record is for a
// crash or a failover, when the loop's state is rebuilt from the store.
// A cluster node that loses the lease stops (Engine.fail), and its late
// writes are refused (Cluster.Fence), so these are never read against
// another scheduler's state. They hold at most one decision per hook
// per event: a hook is reached again only when its start failed, and
// such a start is dropped once read.
type decisions struct {
	mu    sync.Mutex
	bySeq map[int64]map[string]*active
}

// keepDecisions records what the loop decided for the stored event seq,
// where a dispatch again can read it: on a cluster's scheduler, which
// dispatches what stays pending every interval (DispatchPending).
// Elsewhere only a start dispatches again, a new process with none, and
// reachedBefore waits for the writer and reads the store.
func (e *Engine) keepDecisions(seq int64, ds []decision) {
	if e.cfg.Cluster != nil {
		e.decided.add(seq, ds)
	}
}

// add records what the loop decided for event seq: the latest decision
// at each hook.
func (d *decisions) add(seq int64, ds []decision) {
	if len(ds) == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bySeq == nil {
		d.bySeq = map[int64]map[string]*active{}
	}
	hooks := d.bySeq[seq]
	if hooks == nil {
		hooks = make(map[string]*active, len(ds))
		d.bySeq[seq] = hooks
	}
	for _, dc := range ds {
		hooks[dc.hook] = dc.start
	}
}

// forget drops what was decided for event seq: its mark is stored.
func (d *decisions) forget(seq int64) {
	d.mu.Lock()
	delete(d.bySeq, seq)
	d.mu.Unlock()
}

// errInDoubt says a stored event's run at a hook has a release in doubt
// (decisions.reached).
var errInDoubt = errors.New("the release of a run the event started is in doubt")

// reached returns the hooks event seq reached by the loop's decisions:
// each run it started once its start is recorded (waited for; one whose
// start was not recorded did not reach its hook, and is dropped), each
// other decision at once. A run whose release is in doubt (doubtError:
// it failed unanswered, and could not be read back) has neither reached
// its hook nor failed to: reached answers errInDoubt, and the event waits
// until the release is read back (active.doubtRead): made, the release
// recorded the event as reached at the hook (or marked it); not, the
// start failed, as any other.
func (d *decisions) reached(ctx context.Context, seq int64) ([]string, error) {
	d.mu.Lock()
	var ds []decision
	for hook, act := range d.bySeq[seq] {
		ds = append(ds, decision{hook: hook, start: act})
	}
	d.mu.Unlock()
	var hooks []string
	for _, dc := range ds {
		if act := dc.start; act != nil {
			select {
			case <-act.started:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if _, doubt := errors.AsType[*doubtError](act.startErr); doubt {
				switch act.doubtRead.Load() {
				case doubtMade:
					hooks = append(hooks, dc.hook)
					continue
				case 0:
					return nil, errInDoubt
				}
			}
			if act.startErr != nil {
				d.drop(seq, dc.hook, act)
				continue
			}
		}
		hooks = append(hooks, dc.hook)
	}
	slices.Sort(hooks)
	return hooks, nil
}

// drop drops the decision at hook for event seq when it is still the
// start act, which failed.
func (d *decisions) drop(seq int64, hook string, act *active) {
	d.mu.Lock()
	defer d.mu.Unlock()
	hooks := d.bySeq[seq]
	if cur, ok := hooks[hook]; ok && cur == act {
		delete(hooks, hook)
		if len(hooks) == 0 {
			delete(d.bySeq, seq)
		}
	}
}

// size is how many decisions are held, for every event.
func (d *decisions) size() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, hooks := range d.bySeq {
		n += len(hooks)
	}
	return n
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
