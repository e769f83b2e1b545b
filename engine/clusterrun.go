package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookd/hookd/lease"
)

// clusterNode is an engine's side of a cluster (Config.Cluster, see
// Cluster): holding the scheduler lease, releasing runs, claiming and
// executing them, and hearing of their end.
type clusterNode struct {
	// dispatchMu makes dispatching stored events one at a time on the
	// scheduler: an Emit (store, then dispatch) and DispatchPending (read
	// the pending events, dispatch them) never dispatch one event twice.
	dispatchMu sync.Mutex
	defs       atomic.Pointer[map[string]*Hook] // the hooks by name, for the runs this node claims

	claimMu sync.Mutex         // held while claiming, so none starts once Shutdown waits
	localMu sync.Mutex         // guards local
	local   map[string]*active // runs this node executes, by id

	lease    *lease.Keeper // the scheduler lease: this node schedules while it holds it
	failOnce sync.Once
	ended    ended // signalled by WakeDone (clusterfire.go)

	wakeWork, wakePoll, wakeEvents chan struct{}
}

func (e *Engine) initCluster() {
	e.local = map[string]*active{}
	e.wakeWork = make(chan struct{}, 1)
	e.wakePoll = make(chan struct{}, 1)
	e.wakeEvents = make(chan struct{}, 1)
	e.lease = lease.New(lease.Config{Member: e.cfg.Cluster, Clock: e.cfg.Clock, Log: e.log, Stopping: e.stopping,
		TakeOver: e.takeover, Took: e.took, Held: e.expireSilent, Lost: e.leaseLost})
	e.setDefs(e.hooks)
}

// setDefs records the hooks claimed runs are executed with.
func (e *Engine) setDefs(hooks []*Hook) {
	m := make(map[string]*Hook, len(hooks))
	for _, h := range hooks {
		m[h.Name] = h
	}
	e.defs.Store(&m)
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// schedules reports whether this loop schedules: always on a single
// daemon, on the holder of the lease in a cluster.
func (s *state) schedules() bool { return s.e.cfg.Cluster == nil || s.leader }

// Scheduler reports, on a cluster node, whether this node schedules and
// which node does (as last seen); on a single daemon, true and "".
func (e *Engine) Scheduler() (self bool, node string) {
	if e.cfg.Cluster == nil {
		return true, ""
	}
	return e.lease.Leading(), e.lease.Holder()
}

func (e *Engine) notScheduler() error {
	_, node := e.Scheduler()
	if node == "" {
		return fmt.Errorf("%w: node %s waits for the scheduler lease", ErrNotScheduler, e.cfg.Cluster.Node())
	}
	return fmt.Errorf("%w: node %s does not schedule, node %s does: send it there", ErrNotScheduler, e.cfg.Cluster.Node(), node)
}

// fail stops a node that lost the scheduler lease: it triggers nothing
// more and reports err on Failed (the daemon exits; its runs end with it).
func (e *Engine) fail(err error) {
	e.failOnce.Do(func() {
		e.log.Error("hookd must stop: nothing more will be triggered", "err", err)
		e.halt()
		select {
		case e.failed <- err:
		default:
		}
	})
}

// startCluster starts a node: it heartbeats, tries for the lease, marks
// interrupted the runs an earlier process of this node left (after
// taking the lease, if it did: the new scheduler then counts them in
// flight and sees them end) and starts the node's goroutines.
func (e *Engine) startCluster(ctx, loopCtx context.Context) error {
	cl := e.cfg.Cluster
	if err := cl.Heartbeat(ctx); err != nil {
		return err
	}
	if err := cl.Loaded(ctx, e.hooks); err != nil {
		return err
	}
	e.lease.Try(ctx)
	runs, err := cl.Recover(ctx, e.cfg.Clock.Now())
	if err != nil {
		return err
	}
	earlier := e.journaled(ctx, runs)
	for _, r := range runs {
		e.log.Warn("run interrupted by a previous stop of this node", "hook", r.Hook, "run", r.ID)
		if err := e.do(ctx, func(s *state) { s.reapInterrupted(r) }); err != nil {
			return err
		}
		e.tell(WakeDone, r.ID)
	}
	for _, r := range earlier {
		if err := e.do(ctx, func(s *state) { s.reapInterrupted(r) }); err != nil {
			return err
		}
	}
	e.resetJournal()
	go e.wakeLoop(loopCtx, cl.Wakes(loopCtx))
	go e.lease.Run(loopCtx)
	go e.workLoop(loopCtx)
	go e.pollLoop(loopCtx)
	go e.dispatchLoop(loopCtx)
	return nil
}

// tell notifies every node, logging a failure: they poll as well.
func (e *Engine) tell(w Wake, payload string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.cfg.Cluster.Notify(ctx, w, payload); err != nil {
		e.log.Warn("notify the other nodes; they notice at their next poll", "err", err)
	}
}

// tellScheduler tells a cluster's scheduler that hook states changed.
func (e *Engine) tellScheduler() {
	if e.cfg.Cluster != nil {
		e.tell(WakeDone, "")
	}
}

// takeover, when this node took the lease, builds the scheduler's state
// from the store (state.takeover) in the loop.
func (e *Engine) takeover(ctx context.Context) error {
	var terr error
	// Its reads of the store hold the loop: counted as its wait for the
	// store, should a slot pass meanwhile.
	if err := e.do(ctx, func(s *state) { s.onStore(func() { terr = s.takeover(ctx) }) }); err != nil {
		terr = err
	}
	return terr
}

// took starts this node's scheduling, once it holds the lease.
func (e *Engine) took() {
	poke(e.wakeEvents)
	poke(e.wakePoll)
}

// expireSilent, on the scheduler after each renewal of the lease, marks
// interrupted the runs of nodes that stopped heartbeating.
func (e *Engine) expireSilent(ctx context.Context) {
	if runs, err := e.cfg.Cluster.Expire(ctx, e.cfg.Clock.Now()); err != nil {
		e.log.Warn("expire silent nodes", "err", err)
	} else if len(runs) > 0 {
		for _, r := range runs {
			e.log.Warn("run interrupted: its node stopped heartbeating", "hook", r.Hook, "run", r.ID)
		}
		poke(e.wakePoll)
	}
}

// leaseLost stops a node that held the lease and lost it.
func (e *Engine) leaseLost(reason error) {
	e.fail(fmt.Errorf("%w: %w", ErrLeaseLost, reason))
}

// takeover builds the scheduler's state from the store, as a daemon's
// start does: the hooks' saved state, the runs in flight on any node, the
// queue and pending runs, pending retries and reruns, the interrupted
// runs owed a follow-up no scheduler stored (followInterrupted), and the
// schedules with their on_missed for the slots no scheduler fired
// meanwhile.
func (s *state) takeover(ctx context.Context) error {
	cl := s.e.cfg.Cluster
	now := s.cfg.Clock.Now()
	saved, err := s.cfg.Store.HookStates(ctx)
	if err != nil {
		return fmt.Errorf("load hook states: %w", err)
	}
	inflight, err := cl.InFlight(ctx)
	if err != nil {
		return err
	}
	waiting, err := cl.Waiting(ctx)
	if err != nil {
		return err
	}
	s.due = s.due[:0]
	s.queue, s.running, s.reruns, s.retries = nil, 0, nil, nil
	clear(s.held)
	s.e.waitMu.Lock()
	s.live = map[string]*entry{}
	s.e.waitMu.Unlock()
	s.remote, s.retired = map[string]*active{}, map[string]*entry{}
	s.marking = marking{}
	for name, ent := range s.hooks {
		*ent = *newEntry(ent.hook, saved[name])
		if err := s.loadStarts(ctx, ent, now); err != nil {
			return err
		}
	}
	for _, r := range inflight {
		ent := s.hooks[r.Hook]
		if ent == nil { // removed from hooks.d; in flight until it ends
			if ent = s.retired[r.Hook]; ent == nil {
				ent = &entry{hook: &Hook{Name: r.Hook}, heapIdx: -1}
				s.retired[r.Hook] = ent
			}
		}
		started := make(chan struct{})
		close(started)
		act := &active{run: r, cancel: s.e.remoteCancel(r.ID), started: started, wasQueued: true,
			progress: &RunProgress{RunID: r.ID, Hook: r.Hook, Trigger: r.Trigger, StartedAt: r.StartedAt, Since: now, Steps: []StepProgress{}}}
		if ent.active == nil {
			ent.active = act
		}
		s.running++
		s.setLive(r.ID, ent)
		s.remote[r.ID] = act
	}
	s.requeue(waiting, now)
	if err := s.restoreRetries(ctx); err != nil {
		return err
	}
	if err := s.restoreReruns(ctx); err != nil {
		return err
	}
	owed, err := cl.Owed(ctx)
	if err != nil {
		return err
	}
	s.leader = true
	for _, ent := range s.hooks {
		if h := ent.hook; h.Trigger.Periodic() && h.Trigger.Schedule != nil {
			s.initSchedule(ent, now)
		}
	}
	if err := s.recordFirstSeen(ctx, now); err != nil {
		return err
	}
	var batch followBatch
	for _, r := range owed {
		if s.remote[r.ID] == nil { // else interrupted since InFlight: followed when its end is read
			s.followInterrupted(ctx, r, &batch)
		}
	}
	s.startReruns()
	s.startCatchups()
	s.drainQueue()
	return nil
}

// release hands a run the scheduler admitted to the nodes (fenced by the
// lease); the run is in flight until its record is final.
//
// A run whose own records wait in the writer (its pending or queued
// record, a merge of a trigger into it: the database is slow) is released
// once they are stored, at most StoreTimeout later. Each of them records
// the stored event it brings as reached (Store.DispatchedTo); released
// first, the run would execute with an event's payload of which the store
// has no record at its hook, and a scheduler that took over before the
// event's mark would give it to the hook again. Past StoreTimeout (the
// store stalled), it is not released, as the single daemon does not
// start a run whose earlier records are not stored (startRecord): its
// release fails with the stall (releaseFailed), and its queued record,
// once written, ends failed. Before, it was released without them: the
// release stored the run, and its queued record, written later, was
// refused as a duplicate, which the writer took for a stall and tried
// again, refusing every trigger store_stalled, until another write
// succeeded.
//
// The release itself is a store write like the others, within
// StoreTimeout: one the database does not answer (a connection that
// hangs, a row another session holds locked) fails once it is up, as a
// release the database refused does: the run is not executed, its hook
// is no longer in flight, and a stored event it carried stays pending,
// to be dispatched again (settle). Given up, its transaction does not
// commit later (it commits only when told to, and pgx closes the
// connection of a statement whose context ended), unless the deadline
// came during its commit: the run may then be released after all. So a
// release that failed unanswered is read back before it is taken for
// failed (releaseEnded).
// Before, a release had no deadline: one that hung kept its hook in
// flight, and the dispatch of events and fires that waited for its
// start (an Emit on the scheduler with them), for as long as it hung.
func (e *Engine) release(ent *entry, h *Hook, act *active, fence func(context.Context) context.Context) {
	var err error
	if wr := act.after; wr != nil && !e.wr.awaitWritten(wr) {
		err = e.unwritten()
	}
	if err == nil {
		ctx, cancel := e.storeCtx(context.Background())
		err = e.cfg.Cluster.Release(ctx, act.run, act.markSeq)
		cancel()
	}
	e.releaseEnded(ent, h, act, err, fence, false)
}

// releaseDoubt is why a run's release is in doubt: it failed with err,
// unanswered, and whether it committed could not be read back.
type releaseDoubt struct {
	err   error
	fence func(context.Context) context.Context
}

// releaseEnded decides what became of act's release, which returned err
// (nil: it committed), and acts on it: the one place that decides it,
// when the release returns and, for one in doubt (again), at each poll
// of the scheduler until it is decided (resolveDoubts).
//
// A release the database answered (it committed, or refused: the slot
// taken, the lease lost, the run no longer queued) or did not make (its
// own records not stored: unwritten) is what it says. Another error (its
// StoreTimeout ran out, its connection was lost) says nothing of its
// commit: it may have been under way when the client gave up, and made
// on the database all the same. Taken for failed, such a release left the
// run executing on a node while the scheduler forgot it (its hook no
// longer in flight: an overlap: skip hook ran twice at once; its end not
// the scheduler's: no outcome event, its retry not fired) and, for a
// slot, a missed record of the slot beside its run. So the run's record
// is read back (Cluster.Released, within StoreTimeout): released, the
// release committed, and the run is in flight as if it had said so;
// not, it failed as it said (releaseFailed).
//
// When the read-back is not answered either, the run stays in flight
// (no record of its failure is written) and its release in doubt, read
// back at each poll until the database answers: a run forgotten that
// executes would run twice. Meanwhile it holds what a run in flight
// holds, made or not: a max_concurrent slot, and its hook's turn (its
// hook's gates count it: with overlap: skip, a slot or an event that
// comes meanwhile is refused in_flight, and does not run even if the
// release turns out not made). Its start is reported failed (whoever
// waits for it is not kept waiting on a database that does not answer,
// doubtError), and an event it carried stays pending: it is neither
// dispatched again nor marked while the release is in doubt
// (decisions.reached), then, once read back, marked (made: the release
// recorded it as reached at the hook, or marked it) or dispatched again
// to the hook (not made: the decision is dropped), the sweep woken
// (undoubt). A run whose end the poll reads first was made
// (remoteFinished).
func (e *Engine) releaseEnded(ent *entry, h *Hook, act *active, err error, fence func(context.Context) context.Context, again bool) {
	if err != nil && !releaseAnswered(err) {
		ctx, cancel := e.storeCtx(context.Background())
		released, rerr := e.cfg.Cluster.Released(ctx, act.run.ID)
		cancel()
		switch {
		case rerr != nil:
			e.log.Warn("a release of a run failed and could not be read back; the run stays in flight until it is",
				"hook", act.run.Hook, "run", act.run.ID, "err", err, "read", rerr)
			if !again {
				act.startErr = &doubtError{fmt.Errorf("%w (whether it committed could not be read: %w)", err, rerr)}
				close(act.started)
				e.send(func(s *state) {
					if s.remote[act.run.ID] != act {
						// Its end was read already (remoteFinished): made.
						e.undoubt(act, doubtMade)
						return
					}
					act.doubt = &releaseDoubt{err: err, fence: fence}
				})
			}
			return
		case released:
			e.log.Warn("a release of a run failed, yet it was made: the run is released",
				"hook", act.run.Hook, "run", act.run.ID, "err", err)
			err = nil
		}
	}
	if err == nil {
		if !again {
			act.marked = act.markSeq != 0
			close(act.started)
		} else {
			e.send(func(s *state) { act.doubt = nil })
			e.undoubt(act, doubtMade)
		}
		e.forgetStarted(act)
		return
	}
	if !again {
		act.startErr = err
		if errors.Is(err, ErrLeaseLost) {
			e.fail(err)
		}
	}
	// The run's record (its status and why) is written before started
	// is closed, as startErr is: what a goroutine woken by it reads of
	// act is whole.
	e.releaseFailed(context.Background(), h, act, err, fence)
	if !again {
		close(act.started)
	}
	e.send(func(s *state) {
		if s.remote[act.run.ID] == act {
			s.finished(ent, act, nil)
		}
	})
	if again {
		// After the run's end, sent to the loop first: dispatched there
		// again, its event does not find it in flight.
		e.undoubt(act, doubtNotMade)
	}
}

// What a release in doubt was read back as (active.doubtRead).
const (
	doubtMade    = 1
	doubtNotMade = 2
)

// undoubt says what act's release in doubt was read back as (doubtMade:
// also a run whose end was read first, remoteFinished), for the event it
// carried (decisions.reached), and wakes the sweep, which dispatches it
// again to act's hook (not made) or marks it (made: the release recorded
// it as reached there) once its other hooks are reached.
func (e *Engine) undoubt(act *active, read int32) {
	act.doubtRead.Store(read)
	poke(e.wakeEvents)
}

// doubtError is the start error of a run whose release is in doubt
// (releaseEnded): the event it carried has not reached its hook, nor
// failed to (decisions.reached), until the release is read back.
type doubtError struct{ err error }

func (d *doubtError) Error() string { return d.err.Error() }
func (d *doubtError) Unwrap() error { return d.err }

// releaseAnswered reports whether a release's error says what became of
// it: the database refused it (or it was not made), so it did not commit.
func releaseAnswered(err error) bool {
	_, unwritten := errors.AsType[*stalledError](err)
	return unwritten || permanent(err) || errors.Is(err, ErrLeaseLost)
}

// resolveDoubts, on the scheduler at each poll, decides the releases in
// doubt (releaseEnded) it can read back now, before the poll reads which
// runs ended.
func (e *Engine) resolveDoubts(doubts []doubtful) {
	for _, d := range doubts {
		if d.ent == nil {
			continue
		}
		e.releaseEnded(d.ent, d.ent.hook, d.act, d.err, d.fence, true)
	}
}

// doubtful is a run whose release is in doubt, as a poll found it.
type doubtful struct {
	ent *entry
	act *active
	releaseDoubt
}

// unwritten is why a run whose own records were not stored in time is
// not released (release): the store's stall.
func (e *Engine) unwritten() error {
	st, ok := e.wr.stalled()
	if !ok {
		st = StoreStall{Since: e.cfg.Clock.Now(),
			Cause: fmt.Sprintf("the run's records were not stored within %s", e.cfg.StoreTimeout)}
	}
	return &stalledError{st}
}

// cancelRequest asks the node executing a run to cancel it.
type cancelRequest struct {
	Run    string `json:"run"`
	Status Status `json:"status"`
	Cause  Cause  `json:"cause"`
	Reason string `json:"reason"`
}

// remoteCancel is the cancel function of a run another node may execute:
// it asks every node to cancel it (the one that runs it does).
func (e *Engine) remoteCancel(id string) context.CancelCauseFunc {
	return func(cause error) {
		var cc *cancelCause
		if !errors.As(cause, &cc) {
			return // errRunOver: nothing to cancel
		}
		b, _ := json.Marshal(cancelRequest{Run: id, Status: cc.status, Cause: cc.cause, Reason: cc.reason})
		go e.tell(WakeCancel, string(b))
	}
}

func (e *Engine) cancelLocal(payload string) {
	var req cancelRequest
	if err := json.Unmarshal([]byte(payload), &req); err != nil {
		return
	}
	e.localMu.Lock()
	act := e.local[req.Run]
	e.localMu.Unlock()
	if act != nil {
		act.cancel(&cancelCause{req.Status, req.Cause, req.Reason})
	}
}

// wakeLoop routes the cluster's wake-ups.
func (e *Engine) wakeLoop(ctx context.Context, wakes <-chan WakeUp) {
	for w := range wakes {
		switch w.Wake {
		case WakeWork:
			poke(e.wakeWork)
		case WakeDone:
			e.ended.signal()
			poke(e.wakePoll)
		case WakeEvents:
			poke(e.wakeEvents)
			if f := e.cfg.OthersStored; f != nil {
				f()
			}
		case WakeCancel:
			e.cancelLocal(w.Payload)
		}
	}
}

// workLoop claims released runs while this node has room, woken by new
// work, by its own runs ending, and every Interval.
func (e *Engine) workLoop(ctx context.Context) {
	t := e.cfg.Clock.NewTicker(e.cfg.Cluster.Interval())
	defer t.Stop()
	for {
		e.claim(ctx)
		select {
		case <-ctx.Done():
			return
		case <-e.stopping:
			return
		case <-t.C():
		case <-e.wakeWork:
		}
	}
}

func (e *Engine) claim(ctx context.Context) {
	cl := e.cfg.Cluster
	e.claimMu.Lock()
	defer e.claimMu.Unlock()
	select {
	case <-e.stopping:
		return
	default:
	}
	e.localMu.Lock()
	free := cl.Capacity() - len(e.local)
	e.localMu.Unlock()
	if free <= 0 {
		return
	}
	runs, err := cl.Claim(ctx, free)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("claim runs", "err", err)
		}
		return
	}
	for _, r := range runs {
		rctx, cancel := context.WithCancelCause(e.runCtx)
		started := make(chan struct{})
		close(started)
		act := &active{run: r, cancel: cancel, started: started}
		e.localMu.Lock()
		e.local[r.ID] = act
		e.localMu.Unlock()
		e.runs.Add(1)
		go e.executeClaimed(rctx, act)
	}
}

// claimBarrier returns once no claim is under way; after stopping is
// closed, none starts.
func (e *Engine) claimBarrier() {
	e.claimMu.Lock()
	defer e.claimMu.Unlock() //nolint:staticcheck // an empty critical section on purpose
}

// executeClaimed executes a run this node claimed and tells the
// scheduler it ended.
func (e *Engine) executeClaimed(ctx context.Context, act *active) {
	defer e.runs.Done()
	run := act.run
	cl := e.cfg.Cluster
	defer func() {
		e.localMu.Lock()
		delete(e.local, run.ID)
		e.localMu.Unlock()
		act.cancel(errRunOver)
		poke(e.wakeWork)
	}()
	// The run executes with the hook's file at the version that queued
	// it, or not at all: a node's claims name the versions it reported,
	// and it may have loaded others since (a reload, a report that did
	// not reach the database).
	h := (*e.defs.Load())[run.Hook]
	if h != nil && (run.HookVersion == "" || h.Source.Version == run.HookVersion) {
		e.perform(ctx, h, act, cl.FinishOn)
		e.flush(&act.out)
	} else {
		run.Status, run.Cause = StatusFailed, CauseInternal
		run.Error = fmt.Sprintf("hook %s is not loaded on node %s (its hooks.d differs from the scheduler's)", run.Hook, cl.Node())
		if h != nil {
			run.Error = fmt.Sprintf("hook %s is at version %s on node %s, not at %s, the version that queued the run (its file changed): "+
				"the run is not executed with another file", run.Hook, h.Source.Version, cl.Node(), run.HookVersion)
		}
		run.FinishedAt = e.cfg.Clock.Now()
		if err := cl.FinishOn(context.WithoutCancel(ctx), run); err != nil {
			e.log.Error("store run result", "hook", run.Hook, "run", run.ID, "err", err)
		}
	}
	e.tell(WakeDone, run.ID)
}

// pollLoop, on the scheduler, reads which released runs ended (woken when
// a node says one did, and every Interval) and reads back the hooks'
// paused state, which any node may change.
func (e *Engine) pollLoop(ctx context.Context) {
	cl := e.cfg.Cluster
	t := e.cfg.Clock.NewTicker(cl.Interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-e.wakePoll:
		}
		if !e.lease.Leading() {
			e.readPaused(ctx) // any node may pause or resume a hook
			continue
		}
		var (
			ids    []string
			doubts []doubtful
		)
		if e.do(ctx, func(s *state) {
			for id, act := range s.remote {
				ids = append(ids, id)
				if act.doubt != nil {
					doubts = append(doubts, doubtful{s.live[id], act, *act.doubt})
				}
			}
		}) != nil {
			return
		}
		e.resolveDoubts(doubts)
		// The stored reruns and retries first: one a run's end stores
		// (its node's retry) is then read with that end, not before it.
		reruns, err := e.cfg.Store.PendingReruns(ctx)
		var (
			retries []*PendingRetry
			finals  []*Run
			owed    []*Run
			untold  []*Run
			saved   map[string]HookState
		)
		if err == nil {
			retries, err = e.cfg.Store.PendingRetries(ctx)
		}
		if err == nil {
			finals, err = cl.Final(ctx, ids)
		}
		if err == nil {
			owed, err = cl.Owed(ctx)
		}
		if err == nil {
			untold, err = cl.Untold(ctx)
		}
		if err == nil {
			saved, err = e.cfg.Store.HookStates(ctx)
		}
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("read which runs ended", "err", err)
			}
			continue
		}
		if e.do(ctx, func(s *state) {
			for name, ent := range s.hooks {
				ent.paused = saved[name].Paused
			}
			s.remoteEnded(ctx, finals, owed, untold, reruns, retries)
		}) != nil {
			return
		}
	}
}

// readPaused reads the hooks' paused state back, on a node that does not
// schedule, so that its list shows a pause made on another node.
func (e *Engine) readPaused(ctx context.Context) {
	saved, err := e.cfg.Store.HookStates(ctx)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("read the hooks' paused state", "err", err)
		}
		return
	}
	_ = e.do(ctx, func(s *state) {
		for name, ent := range s.hooks {
			ent.paused = saved[name].Paused
		}
	})
}

// remoteEnded, on the scheduler, ends the released runs whose records
// it read final (remoteFinished), follows the interrupted runs owed a
// follow-up that are not in flight here (followInterrupted: one whose
// end this scheduler has yet to read is followed then), tells the
// outcome of the runs untold that are not in flight here (tellOutcome:
// a run a scheduler before it did not tell, as it died or lost the
// lease), takes up the stored reruns and retries it neither holds nor
// started (adoptStored: reruns and retries, read before the ends), and
// starts the reruns.
func (s *state) remoteEnded(ctx context.Context, finals, owed, untold []*Run, reruns []*PendingRerun, retries []*PendingRetry) {
	isOwed := make(map[string]bool, len(owed))
	for _, r := range owed {
		isOwed[r.ID] = true
	}
	ended := make(map[string]bool, len(finals))
	var batch followBatch // the owed runs this poll follows, ended here or not
	for _, r := range finals {
		if s.remoteFinished(ctx, r, isOwed[r.ID], &batch) {
			delete(isOwed, r.ID)
			ended[r.ID] = true
		}
	}
	for _, r := range owed {
		if isOwed[r.ID] && s.remote[r.ID] == nil {
			s.followInterrupted(ctx, r, &batch)
		}
	}
	for _, r := range untold {
		if !ended[r.ID] && s.remote[r.ID] == nil { // else told when its end is read
			s.tellOutcome(ctx, r, s.hookOf(r.Hook), &batch)
		}
	}
	s.adoptStored(ctx, reruns, retries)
	s.startReruns()
}

// remoteFinished ends, on the scheduler, a released run whose record is
// final: as a run of its own ends (the gates, the queue), with the retry
// its node planned, or, when its node stopped and it is owed its
// follow-up, the one followInterrupted decides (one of batch b); its
// outcome event is told once it left the runs in flight (tellOutcome).
// It reports whether the run was in flight here.
func (s *state) remoteFinished(ctx context.Context, r *Run, owed bool, b *followBatch) bool {
	act, ent := s.remote[r.ID], s.live[r.ID]
	if act == nil || ent == nil {
		return false
	}
	act.run = r
	if act.doubt != nil {
		// Its end says its release was made (releaseEnded): the event it
		// carried reached its hook.
		act.doubt = nil
		s.e.undoubt(act, doubtMade)
	}
	var retry *PendingRetry
	switch {
	case r.Status == StatusInterrupted:
		if owed {
			s.followInterrupted(ctx, r, b)
		}
	case r.Retry != nil:
		retry = s.plannedRetry(ctx, r)
	}
	s.finished(ent, act, retry)
	s.tellOutcome(ctx, r, ent.hook, b)
	return true
}

// hookOf is the hook named name, loaded or retired; nil when neither.
func (s *state) hookOf(name string) *Hook {
	if ent := s.hooks[name]; ent != nil {
		return ent.hook
	}
	if ent := s.retired[name]; ent != nil {
		return ent.hook
	}
	return nil
}

// tellOutcome, on a cluster's scheduler, publishes the outcome event of
// r, a released run of hook h (nil: not loaded) whose end a node stored
// untold (Cluster.Untold): it stores the event pending with the mark
// cleared, in one transaction fenced by the lease (Cluster.Tell), for
// dispatchLoop to dispatch as any event stored pending, and tells this
// node's subscribers. It is the one place a released run's outcome is
// published, when the scheduler reads its end or, for a run no scheduler
// told (it died or lost the lease before), at its takeover's first poll
// and at each poll: the store dispatches it once, across failovers. One
// not stored now stays untold, for the next poll or the next scheduler;
// so do the rest of the poll's (batch b) once a Tell was not answered.
func (s *state) tellOutcome(ctx context.Context, r *Run, h *Hook, b *followBatch) {
	if s.stopping() || b.tellErr != nil {
		return // untold still, for the next poll or the next scheduler
	}
	ev := RunEvent(r)
	ev.Time = r.FinishedAt
	ev.Outcome.Intermediate = r.Retry != nil && h != nil && h.Retry.Notify != RetryNotifyEach
	var err error
	s.onStore(func() {
		sctx, cancel := s.e.storeCtx(ctx)
		defer cancel()
		err = s.e.cfg.Cluster.Tell(sctx, r.ID, ev)
	})
	switch {
	case errors.Is(err, ErrLeaseLost):
		s.e.fail(err)
		return
	case errors.Is(err, ErrNotFound):
		return // another scheduler told it
	case err != nil:
		// Stored after all when the deadline came during the commit: then
		// dispatched, and not told again (the mark went with it).
		s.e.log.Warn("store the outcome event of a run; told at the next poll", "hook", r.Hook, "run", r.ID, "err", err)
		b.tellErr = err
		return
	}
	s.e.notify(ev)
}

// plannedRetry is the pending retry the node that ran r stored.
func (s *state) plannedRetry(ctx context.Context, r *Run) *PendingRetry {
	var (
		pending []*PendingRetry
		err     error
	)
	s.onStore(func() { pending, err = s.cfg.Store.PendingRetries(ctx) })
	if err != nil {
		s.e.log.Error("read the retry of a run; it is retried at the next takeover", "run", r.ID, "err", err)
		return nil
	}
	for _, p := range pending {
		if p.RunID == r.Retry.RunID && !slices.ContainsFunc(s.retries, func(q *PendingRetry) bool { return q.RunID == p.RunID }) {
			return p
		}
	}
	return nil
}

// dispatchLoop, on the scheduler, dispatches the events any node stored
// pending and decides the fires other nodes stored: woken when events or
// fires are stored, and every Interval.
func (e *Engine) dispatchLoop(ctx context.Context) {
	t := e.cfg.Clock.NewTicker(e.cfg.Cluster.Interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-e.wakeEvents:
		}
		if !e.lease.Leading() {
			continue
		}
		select {
		case <-e.stopping:
			continue
		default:
		}
		if _, err := e.DispatchPending(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("dispatch stored events", "err", err)
		}
		e.decideFires(ctx)
	}
}

// storePending stores an event raised on a node that does not schedule,
// for the scheduler to dispatch.
func (e *Engine) storePending(ev *Event) {
	if ev.ID == "" {
		ev.ID = NewID()
	}
	if ev.Time.IsZero() {
		ev.Time = e.cfg.Clock.Now()
	}
	ctx, cancel := e.storeCtx(context.Background())
	defer cancel()
	if err := e.cfg.Store.AppendPendingEvent(ctx, ev); err != nil && !errors.Is(err, ErrDuplicateEvent) {
		e.log.Error("store an event for the scheduler", "type", ev.Type, "err", err)
		return
	}
	e.tell(WakeEvents, "")
}
