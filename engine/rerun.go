package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// TriggerRerun is the trigger of a run that re-runs one interrupted by a
// crash (on_interrupted: rerun).
const TriggerRerun = "rerun"

// PendingRerun is the rerun of a run a crash interrupted (on_interrupted:
// rerun), as the store keeps it until it starts: decided by the engine
// that recovered the crash, or a cluster's scheduler (followInterrupted),
// and stored with the run owed nothing more (Store.Follow,
// Cluster.Follow); a daemonless fire or emit, which recovers the crash
// too, leaves it for the next hookd that schedules. The rerun's run gets
// RunID, so that a hookd that stops after starting it does not start it
// again.
type PendingRerun struct {
	RunID       string // the id the rerun's run will have
	Hook        string
	Interrupted string // the id of the run it re-runs
	Event       json.RawMessage
	EventType   string
	Depth       int
	PlannedAt   time.Time   // when it was left for the daemon
	TraceParent TraceParent // the caller's trace the interrupted run continued: the rerun continues it too
	TraceLink   TraceParent // the span of the run that started the interrupted run (TraceLinks.StartedBy): the rerun links to it too
}

// newRerun is the rerun of the interrupted run r.
func newRerun(r *Run, now time.Time) PendingRerun {
	return PendingRerun{RunID: NewID(), Hook: r.Hook, Interrupted: r.ID, Event: r.Event, EventType: r.EventType,
		Depth: r.Depth, PlannedAt: now, TraceParent: r.TraceParent, TraceLink: r.TraceLinks.StartedBy}
}

// rerunsInterrupted reports whether the interrupted run r is re-run: its hook, still
// loaded, says on_interrupted: rerun, and r is no rerun itself (a rerun is
// run once: one interrupted in turn is left).
func (s *state) rerunsInterrupted(r *Run) bool {
	ent := s.hooks[r.Hook]
	return ent != nil && ent.hook.OnInterrupted == InterruptedRerun && r.Trigger != TriggerRerun
}

// followOwed decides, on an engine without a cluster, what follows each
// interrupted run owed its follow-up (Store.Owed): those
// RecoverInterrupted marked now, and those an earlier hookd marked and
// was killed, or its store failed, before it stored what follows them.
// Each is decided by followInterrupted, as a cluster's scheduler decides
// its own, and stored, with the run owed nothing more, in one transaction
// (Store.Follow) before anything follows from it: a rerun is stored
// pending and started by startReruns with the run id it was given, a
// retry stored pending and fired when due, each forgotten only once its
// run's start is recorded (storedFollow). So a rerun or retry whose start
// fails, or a hookd killed at any point in between, leaves it to the next
// hookd, which starts it once. A daemonless command's engine stores them
// as well, for the next hookd that schedules (it starts no rerun and
// fires no retry itself). A store that fails to answer stops a daemon's
// start (the runs stay owed to the next); a daemonless command leaves
// them owed to the next hookd.
func (s *state) followOwed(ctx context.Context) error {
	var owed []*Run
	var err error
	s.onStore(func() {
		sctx, cancel := s.e.storeCtx(ctx)
		defer cancel()
		owed, err = s.cfg.Store.Owed(sctx)
	})
	var b followBatch
	if err == nil {
		for _, r := range owed {
			s.followInterrupted(ctx, r, &b)
		}
		err = b.err
	}
	if err == nil {
		return nil
	}
	if !s.cfg.Manual {
		return fmt.Errorf("decide what follows the interrupted runs: %w", err)
	}
	s.e.log.Warn("what follows interrupted runs is left for hookd serve", "err", err)
	return nil
}

// restoreReruns loads the reruns an earlier hookd, a daemonless command
// or a cluster's scheduler decided and stored. One whose run exists
// already started (hookd stopped before forgetting it), unless its record
// is queued (storedWaits).
func (s *state) restoreReruns(ctx context.Context) error {
	stored, err := s.cfg.Store.PendingReruns(ctx)
	if err != nil {
		return fmt.Errorf("load pending reruns: %w", err)
	}
	for _, p := range stored {
		if r, err := s.cfg.Store.GetRun(ctx, p.RunID); err == nil {
			if !s.storedWaits(r, storedFollow{what: "pending rerun", hook: p.Hook, del: s.cfg.Store.DeleteRerun}, false) {
				s.forgetRerun(p.Hook, p.RunID)
			}
			continue
		}
		s.reruns = append(s.reruns, *p)
	}
	return nil
}

// startReruns fires, once, the runs of hooks with on_interrupted: rerun
// that a crash left interrupted, with the same event, through
// the gates (bar the cooldown). Each is stored (followInterrupted stores
// it before it is started), and forgotten once its run's start is
// recorded, or at once when a gate refused it (storedFollow); one the
// store_stalled gate refused is held, in reruns, until the store takes
// writes again (unhold).
func (s *state) startReruns() {
	var held []PendingRerun
	for _, p := range s.reruns {
		if s.held[p.RunID] { // until the stall ends (a cluster's poll calls again)
			held = append(held, p)
			continue
		}
		ent := s.hooks[p.Hook]
		if ent == nil {
			s.e.log.Info("rerun dropped: its hook no longer exists", "hook", p.Hook, "interrupted", p.Interrupted)
			s.forgetRerun(p.Hook, p.RunID)
			continue
		}
		t := trig{reason: TriggerRerun, id: p.RunID, raw: p.Event, eventType: p.EventType, depth: p.Depth, force: true,
			traceParent: p.TraceParent, traceLink: p.TraceLink, note: fmt.Sprintf("re-runs run %s, interrupted when hookd stopped (on_interrupted: rerun)", p.Interrupted)}
		res, kept := s.triggerStored(ent, t, p.RunID, storedFollow{what: "pending rerun", hook: p.Hook, del: s.cfg.Store.DeleteRerun})
		if kept {
			held = append(held, p)
			s.held[p.RunID] = true
			s.e.log.Warn("rerun held: the store is stalled; it starts once the store takes writes again", "hook", p.Hook, "interrupted", p.Interrupted, "rerun", p.RunID)
			continue
		}
		s.e.log.Info("re-running an interrupted run", "hook", p.Hook, "interrupted", p.Interrupted, "run", res.run.ID, "err", res.err)
	}
	s.reruns = held
}

// holds reports whether the loop holds stored reruns or retries the
// store_stalled gate refused, to start once the store takes writes
// again (unhold).
func (s *state) holds() bool {
	return len(s.held) > 0 && !s.cfg.Manual && !s.stopping() && s.schedules()
}

// unhold, once the store is no longer stalled, starts the reruns the
// store_stalled gate held and lets fireRetries fire the retries it held
// (they are due). The loop wakes for it when the stall ends
// (storeWriter.answering).
func (s *state) unhold() {
	if !s.holds() {
		return
	}
	if _, stalled := s.e.wr.stalled(); stalled {
		return
	}
	clear(s.held)
	s.startReruns()
}

func (s *state) forgetRerun(hook, runID string) {
	s.await(s.e.wr.submit("pending rerun's removal", hook, runID,
		func(ctx context.Context) error { return s.cfg.Store.DeleteRerun(ctx, runID) }))
}

// storedFollow is a stored pending rerun or retry (what) of hook whose
// run the loop triggered: del removes it from the store once that run's
// start is recorded (forgetStarted), and not before, so that a start
// that fails (a cluster's release the database refused, or did not
// answer within StoreTimeout) or a hookd killed in between leaves it
// stored: for the next poll of a cluster's scheduler (adoptStored), or
// the next start or takeover (restoreReruns, restoreRetries), each of
// which forgets, rather than starts, one whose run exists.
type storedFollow struct {
	what, hook string
	del        func(ctx context.Context, runID string) error
}

// triggerStored runs t, the trigger of the stored pending rerun or
// retry f whose run is runID. One a gate refused, or one merged into the
// hook's pending run (no run runID is made), is forgotten at once (its
// record says what became of it, after which it is forgotten: the writer
// keeps their order); one admitted is forgotten once its start is
// recorded (startRun hands f to the run). One the store_stalled gate
// refused is kept (held): that gate says nothing of its hook, only that
// hookd cannot record a start now, so the caller holds it and tries it
// again once the store takes writes (unhold); its record, under an id of
// its own, says so, and a hookd that stops meanwhile leaves it stored
// for the next start.
func (s *state) triggerStored(ent *entry, t trig, runID string, f storedFollow) (res trigResult, held bool) {
	t.stored = true
	s.unstarted[runID] = f
	res = s.trigger(ent, t)
	if res.err == nil && res.run != nil && res.run.ID == runID {
		return res, false
	}
	delete(s.unstarted, runID)
	if g, ok := errors.AsType[*GateError](res.err); ok && g.Gate == GateStoreStalled {
		return res, true
	}
	s.await(s.e.wr.submit(f.what+"'s removal", f.hook, runID,
		func(ctx context.Context) error { return f.del(ctx, runID) }))
	return res, false
}

// storedWaits decides what the record r of a stored pending rerun or
// retry's run (f) says of it, for a start or takeover (restoreReruns,
// restoreRetries: the queued runs are back in line already) or a poll
// (adoptStored, adopt: one queued is put back in line here, and started
// if a slot is free). A record
// queued, and in line, is the run waiting to start: the follow-up stays
// stored, and is forgotten once its start is recorded, as one triggered
// (storedFollow); a run whose start (release) failed leaves its record
// queued so (endsQueued). Any other record says the run started or ended
// (or was merged into its hook's pending run): the caller forgets the
// follow-up.
func (s *state) storedWaits(r *Run, f storedFollow, adopt bool) bool {
	if r.Status != StatusQueued {
		return false
	}
	if s.cfg.Manual {
		return true // a daemonless command leaves it to the next hookd
	}
	if s.live[r.ID] == nil && !adopt {
		return false
	}
	s.unstarted[r.ID] = f
	if s.live[r.ID] == nil {
		s.requeue([]*Run{r}, s.cfg.Clock.Now())
		s.drainQueue()
		if s.live[r.ID] == nil { // a gate refused it: its record says why
			delete(s.unstarted, r.ID)
			return false
		}
	}
	return true
}

// forgetStarted, called by the goroutine that recorded act's start once
// it did, forgets the stored pending rerun or retry act's run is, if any
// (storedFollow).
func (e *Engine) forgetStarted(act *active) {
	f := act.stored
	if f == nil {
		return
	}
	id := act.run.ID
	e.wr.submit(f.what+"'s removal", f.hook, id, func(ctx context.Context) error { return f.del(ctx, id) })
}

// adoptStored, on a cluster's scheduler at each poll, takes up the
// pending reruns and retries stored (read before the poll read which
// runs ended) that it neither holds nor has started: one whose release
// failed (kept: storedFollow), or one Cluster.Follow stored whose answer
// was lost (the store's deadline came during its commit). One whose hook
// has a run in flight, queued or pending here waits for a later poll
// (its run's end, not read yet, may bring it: plannedRetry); one whose
// run exists started already, and is forgotten.
func (s *state) adoptStored(ctx context.Context, reruns []*PendingRerun, retries []*PendingRetry) {
	if s.stopping() {
		return
	}
	var cand []string
	known := func(hook, id string) bool {
		if s.live[id] != nil || slices.ContainsFunc(s.reruns, func(r PendingRerun) bool { return r.RunID == id }) ||
			slices.ContainsFunc(s.retries, func(q *PendingRetry) bool { return q.RunID == id }) {
			return true
		}
		// Triggered, it waited and is gone without starting (cancelled,
		// or dropped with its hook): its record, if any, decides below.
		delete(s.unstarted, id)
		ent := s.hooks[hook]
		return ent != nil && (ent.active != nil || ent.queued != nil || ent.pending != nil)
	}
	for _, p := range reruns {
		if !known(p.Hook, p.RunID) {
			cand = append(cand, p.RunID)
		}
	}
	for _, p := range retries {
		if !known(p.Hook, p.RunID) {
			cand = append(cand, p.RunID)
		}
	}
	if len(cand) == 0 {
		return
	}
	exists := map[string]*Run{}
	var err error
	s.onStore(func() {
		sctx, cancel := s.e.storeCtx(ctx)
		defer cancel()
		for _, id := range cand {
			r, gerr := s.cfg.Store.GetRun(sctx, id)
			switch {
			case gerr == nil:
				exists[id] = r
			case !errors.Is(gerr, ErrNotFound):
				err = gerr
				return
			}
		}
	})
	if err != nil {
		s.e.log.Warn("read the runs of stored reruns and retries; taken up at the next poll", "err", err)
		return
	}
	for _, p := range reruns {
		switch {
		case !slices.Contains(cand, p.RunID):
		case exists[p.RunID] != nil:
			if !s.storedWaits(exists[p.RunID], storedFollow{what: "pending rerun", hook: p.Hook, del: s.cfg.Store.DeleteRerun}, true) {
				s.forgetRerun(p.Hook, p.RunID)
			}
		default:
			s.e.log.Info("taking up a stored rerun", "hook", p.Hook, "interrupted", p.Interrupted, "rerun", p.RunID)
			s.reruns = append(s.reruns, *p)
		}
	}
	for _, p := range retries {
		switch {
		case !slices.Contains(cand, p.RunID):
		case exists[p.RunID] != nil:
			if !s.storedWaits(exists[p.RunID], storedFollow{what: "pending retry", hook: p.Hook, del: s.cfg.Store.DeleteRetry}, true) {
				s.forgetRetry(p)
			}
		default:
			s.e.log.Info("taking up a stored retry", "hook", p.Hook, "retry_of", p.RetryOf, "retry", p.RunID, "at", p.At)
			s.retries.add(p)
		}
	}
}

// followBatch is what the follow-ups of one batch of owed runs (a
// takeover's, a poll's, a single daemon's start) share: the stored
// retries, read once, when the first run is followed, and the first
// store call that failed (err), after which the rest of the batch stay
// owed and are followed at the next poll (the next start). So
// a database that stops answering holds the loop for two StoreTimeouts
// a batch at most (a run's GetRun, whose error is not a failure, then
// its Follow), not two or three a run. A poll's outcome events
// (tellOutcome) are told the same way: after the first Tell the store
// did not answer (tellErr), the rest stay untold for the next poll, so a
// poll holds the loop for one more StoreTimeout at most, not one a run
// that ended.
type followBatch struct {
	read    bool
	stored  []*PendingRetry
	err     error
	tellErr error
}

// followInterrupted decides what follows the interrupted run r, which
// is owed its follow-up: on a cluster's scheduler (Cluster.Owed: its
// node restarted, or stopped heartbeating, while it ran), or on a single
// daemon (Store.Owed: a crash left it running; followOwed). It is the
// one place hookd decides it: the retry r's hookd (node) stored before
// it was killed (not a second one), else a retry (retry.on names
// interrupted), else a rerun (on_interrupted: rerun), else nothing. The
// decision is stored, with r owed nothing more, in one transaction
// (Store.Follow; on a cluster Cluster.Follow, fenced by the lease) before
// anything follows from it: a hookd (scheduler) that dies before that
// commit leaves r owed to the next one, which decides it at its start
// (takeover), and a deposed scheduler stores nothing (and stops). A
// rerun is stored pending and started by startReruns with the run id it
// was given, so that no hookd starts it twice (restoreReruns).
//
// A run still in flight on this scheduler (its end not yet read) is
// followed when its end is (remoteFinished), so that its rerun finds the
// hook's in-flight gate free.
//
// r is one of batch b: the stored retries are read for the first of
// them, and once a store call failed, r is left owed, as the rest of the
// batch are.
func (s *state) followInterrupted(ctx context.Context, r *Run, b *followBatch) {
	if s.stopping() || b.err != nil {
		return // owed still, to the next scheduler (hookd) or the next poll
	}
	now := s.cfg.Clock.Now()
	var (
		exists bool
		err    error
	)
	s.onStore(func() {
		sctx, cancel := s.e.storeCtx(ctx)
		defer cancel()
		if !b.read {
			if b.stored, err = s.cfg.Store.PendingRetries(sctx); err != nil {
				return
			}
			b.read = true
		}
		if p := retryOf(b.stored, r); p != nil && retryOf(s.retries, r) == nil {
			_, gerr := s.cfg.Store.GetRun(sctx, p.RunID)
			exists = gerr == nil // it fired already
		}
	})
	if err != nil {
		b.err = err
		s.e.log.Warn("read the pending retries; the interrupted run is followed at the next poll", "hook", r.Hook, "run", r.ID, "err", err)
		return
	}
	stored := b.stored
	var (
		planned = retryOf(s.retries, r) // its node's, restored at the takeover
		retry   *PendingRetry           // a new one, to store
		again   *PendingRerun
	)
	if planned == nil {
		planned = retryOf(stored, r)
	}
	if ent := s.hooks[r.Hook]; planned == nil && ent != nil {
		if retry = newRetry(ent.hook, r, now); retry == nil && s.rerunsInterrupted(r) {
			p := newRerun(r, now)
			again = &p
		}
	}
	s.onStore(func() {
		sctx, cancel := s.e.storeCtx(ctx)
		defer cancel()
		if cl := s.e.cfg.Cluster; cl != nil {
			err = cl.Follow(sctx, r.ID, retry, again)
		} else {
			err = s.cfg.Store.Follow(sctx, r.ID, retry, again)
		}
	})
	switch {
	case errors.Is(err, ErrLeaseLost):
		b.err = err
		s.e.fail(err)
		return
	case errors.Is(err, ErrNotFound):
		return // another scheduler stored its follow-up
	case err != nil:
		// Stored after all when the deadline came during the commit: the
		// next poll then takes it up (adoptStored), else decides it again;
		// on a single daemon, the next start (restoreReruns, restoreRetries,
		// followOwed).
		b.err = err
		s.e.log.Warn("store what follows an interrupted run; taken up, or decided again, at the next poll", "hook", r.Hook, "run", r.ID, "err", err)
		return
	}
	switch {
	case planned != nil:
		plan := planned.RetryPlan
		r.Retry = &plan
		s.finishRecord(r) // the interrupted record says when it is retried
		if !exists && !slices.ContainsFunc(s.retries, func(q *PendingRetry) bool { return q.RunID == planned.RunID }) {
			s.retries.add(planned)
		}
		s.leftForServe(r)
	case retry != nil:
		plan := retry.RetryPlan
		r.Retry = &plan
		s.finishRecord(r)
		s.retries.add(retry)
		s.leftForServe(r)
	case again != nil && s.cfg.Manual:
		s.e.log.Warn("the rerun of an interrupted run is left for hookd serve", "hook", r.Hook, "run", r.ID, "rerun", again.RunID)
	case again != nil:
		s.reruns = append(s.reruns, *again)
		s.e.log.Info("the rerun of an interrupted run is decided", "hook", r.Hook, "interrupted", r.ID, "rerun", again.RunID)
	}
}

// leftForServe says, on a daemonless command's engine, that the retry
// of the interrupted run r is stored for hookd serve to fire.
func (s *state) leftForServe(r *Run) {
	if s.cfg.Manual && r.Retry != nil {
		s.e.log.Warn("the retry of an interrupted run is left for hookd serve", "hook", r.Hook, "run", r.ID,
			"retry", r.Retry.RunID, "at", r.Retry.At)
	}
}
