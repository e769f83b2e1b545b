package engine

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/redact"
)

// state is everything the loop goroutine owns.
type state struct {
	e     *Engine
	cfg   *Config
	hooks map[string]*entry
	due   dueHeap
	queue []*queuedRun // runs waiting for a concurrency slot, in the order they began waiting
	waits uint64       // counts the runs that began waiting: their place in line (admit)

	running int               // runs executing
	live    map[string]*entry // run id -> hook, for active, queued and pending runs
	retired map[string]*entry // hooks removed by a reload whose run is still in flight
	waiters map[string][]chan *Run
	events  []*Event       // engine events raised inside the loop, dispatched after the current message
	match   []string       // reused buffer for EventIndex.Listeners
	accept  []*entry       // reused buffer: the hooks whose where: accepted an event (dispatch)
	reruns  []PendingRerun // stored reruns of interrupted runs to start (on_interrupted: rerun)
	retries retryQueue     // pending retries, earliest first (retry.go)
	marking marking        // the event the next start of its hook marks dispatched (dispatch)
	spend   budget.Ledger  // token usage of the last day
	lookout lookout        // since the loop last looked at the clock (gap.go)

	// held are the run ids of the reruns and retries the store_stalled
	// gate refused: kept in reruns and retries, they start once the
	// store takes writes again (triggerStored, unhold).
	held map[string]bool

	// records are the writer's records of what the stored event the loop
	// dispatches now did to each hook (Run.EventSeq, Merged.EventSeq):
	// dispatch hands them to its caller, whose mark waits for each of
	// them (settle).
	records []*write

	// unstarted are the stored pending reruns and retries whose runs were
	// triggered and wait to start (queued, pending), by run id: each is
	// forgotten once its run's start is recorded (storedFollow).
	unstarted map[string]storedFollow

	// recent holds the final records of the runs that ended last, for
	// Wait (recentFinals; under Engine.waitMu).
	recent recentFinals

	// A cluster node's (clusterrun.go): whether it holds the scheduler
	// lease, and the runs it released that are not final yet.
	leader bool
	remote map[string]*active

	guardState // Config.Guard's bookkeeping (guard.go)

	broken []BrokenFile // hook files that did not load, by file (Engine.SetBroken)
	// invalid are the hooks kept from a file that no longer loads, each
	// with its index in broken: their triggers are refused (GateInvalidFile)
	invalid map[*Hook]int
}

// marking names the stored event that the run of hook started while it
// is dispatched marks dispatched with its start (Store.StartRunDispatched),
// or the event not stored yet that the run stores with its start (ev,
// Store.StartRunWithEvent); carrier is the run that took it.
type marking struct {
	hook    string
	seq     int64
	ev      *Event
	carrier *active
}

type queuedRun struct {
	run   *Run
	ent   *entry
	since uint64 // when it began waiting (state.waits): its place in the queue
}

// entry is one hook's scheduling and gate state.
type entry struct {
	hook   *Hook
	paused bool

	slot, due time.Time // next schedule slot and its jittered fire time
	heapIdx   int       // -1 when not in the heap
	lastSlot  time.Time // latest slot fired or recorded
	firstSeen time.Time // when a scheduling hookd first loaded it with a schedule (HookState.FirstSeen)
	catchup   []time.Time

	active    *active
	queued    *Run        // waiting in the global queue
	pending   *Run        // overlap: queue rerun, waiting for active/queued
	pendSince uint64      // when pending began waiting (state.waits)
	coalesce  int         // triggers merged into pending
	shared    *hookShared // what every run of its hook uses alike (shared)

	lastStart   time.Time
	lastRunSlot time.Time   // the slot the latest run started for; zero when none (cooldownLeft)
	starts      []time.Time // admitted starts within the hook's rate window (rate.go)
	lastRunID   string
	lastStatus  Status
	lastCheck   string // the check the latest run did not pass (Run.CheckFailed)
	lastMissed  bool   // the latest slot did not start a run
}

// active is a run executing in its own goroutine.
type active struct {
	run     *Run
	cancel  context.CancelCauseFunc
	started chan struct{} // closed once the start is recorded

	wasQueued bool          // the run has a queued record already
	usage     *budget.Usage // what its model stage spent, set before the loop hears it finished
	progress  *RunProgress  // what it has done so far, from its progress events
	shared    *hookShared   // its hook's redactor and environment (nil: built by the run)
	out       outbox        // events its goroutine holds for its next message (outbox.go)

	// markSeq is the stored event this run's start marks dispatched in
	// the same transaction (0: none); marked says, once started is
	// closed, that it did. carry is the event, not stored yet, that its
	// start stores (Store.StartRunWithEvent); startErr, once started is closed, why
	// the start could not be recorded.
	markSeq  int64
	marked   bool
	carry    *Event
	startErr error

	// after is the loop's latest write waiting when the run started
	// (nil: none): its start is recorded after it (writer.go). On a
	// cluster's scheduler it is the latest of the run's own (its queued
	// record, a merge into it), which its release comes after.
	after *write

	// stored is the stored pending rerun or retry this run is (nil:
	// none), forgotten once its start is recorded (storedFollow).
	stored *storedFollow

	// doubt, on a cluster's scheduler (the loop's), says the run's
	// release is in doubt: it failed unanswered and could not be read
	// back (releaseEnded); nil otherwise.
	doubt *releaseDoubt
	// doubtRead is what such a release was read back as, for the
	// dispatch of its event (0: in doubt still; doubtMade, doubtNotMade).
	doubtRead atomic.Int32
}

// trig is one trigger of a hook.
type trig struct {
	reason      string // schedule, catchup, event, manual, watch
	slot        time.Time
	data        map[string]any
	raw         json.RawMessage // data encoded, when the caller has it already
	eventType   string
	depth       int
	force       bool
	manual      bool
	disabled    bool                                                  // run the hook although it has enabled: false (FireOptions.EvenDisabled)
	id          string                                                // the run's id, when the caller chose it (a forwarded fire)
	note        string                                                // a note for the run's record
	retry       *PendingRetry                                         // the retry this trigger is (TriggerRetry)
	stored      bool                                                  // a stored rerun or retry: the store_stalled gate keeps it (triggerStored)
	eventSeq    int64                                                 // the stored event, pending still, it came from (Run.EventSeq)
	merge       func(pending json.RawMessage) (map[string]any, error) // Event.Merge
	traceParent TraceParent                                           // the caller's trace (Run.TraceParent)
	traceLink   TraceParent                                           // the span of the run that caused it (TraceLinks.StartedBy)
}

type trigResult struct {
	run *Run
	act *active // set when the run started now
	err error   // *GateError when refused
}

func (e *Engine) newState(ctx context.Context) (*state, error) {
	s := &state{
		e:       e,
		cfg:     &e.cfg,
		hooks:   make(map[string]*entry, len(e.hooks)),
		live:    map[string]*entry{},
		retired: map[string]*entry{},
		waiters: map[string][]chan *Run{},
		remote:  map[string]*active{},

		unstarted: map[string]storedFollow{},
		held:      map[string]bool{},
	}
	now := s.cfg.Clock.Now()
	s.lookout = lookout{wall: now, mono: s.cfg.Clock.Mono()} // the schedules begin at now
	// Recover first: it marks the hooks' last status interrupted too. A
	// cluster node recovers its own runs only (startCluster), and its
	// schedule state is built when it takes the scheduler lease.
	var interrupted []*Run
	if e.cfg.Cluster == nil {
		var err error
		if interrupted, err = s.cfg.Store.RecoverInterrupted(ctx, now); err != nil {
			return nil, fmt.Errorf("recover interrupted runs: %w", err)
		}
	}
	var earlier []*Run
	if e.cfg.Cluster == nil {
		earlier = e.journaled(ctx, interrupted)
	}
	for _, r := range interrupted {
		e.log.Warn("run interrupted by a previous stop", "hook", r.Hook, "run", r.ID)
		s.reapInterrupted(r)
	}
	for _, r := range earlier {
		s.reapInterrupted(r)
	}
	if e.cfg.Cluster == nil {
		e.resetJournal()
	}
	if err := s.loadUsage(ctx, now); err != nil {
		return nil, err
	}
	saved, err := s.cfg.Store.HookStates(ctx)
	if err != nil {
		return nil, fmt.Errorf("load hook states: %w", err)
	}
	for _, h := range e.hooks {
		ent := newEntry(h, saved[h.Name])
		s.hooks[h.Name] = ent
		if err := s.loadStarts(ctx, ent, now); err != nil {
			return nil, err
		}
		if h.Trigger.Kind == TriggerEvent {
			if err := s.cfg.Events.Add(h.Name, h.Trigger.Event, h.Trigger.Where); err != nil {
				return nil, fmt.Errorf("hook %s: event trigger: %w", h.Name, err)
			}
		}
		if s.schedules() && !s.cfg.Manual && h.Trigger.Periodic() && h.Trigger.Schedule != nil {
			s.initSchedule(ent, now)
		}
	}
	if !s.cfg.Manual && s.schedules() {
		if err := s.recordFirstSeen(ctx, now); err != nil {
			return nil, err
		}
		if err := s.restoreQueue(ctx, now); err != nil {
			return nil, err
		}
		if err := s.restoreRetries(ctx); err != nil {
			return nil, err
		}
		if err := s.restoreReruns(ctx); err != nil {
			return nil, err
		}
	} else if s.cfg.Manual {
		// A daemonless command's engine: what the next daemon needs to
		// know of retries already planned (followInterrupted).
		if err := s.restoreRetries(ctx); err != nil {
			return nil, err
		}
	}
	if e.cfg.Cluster == nil {
		if err := s.followOwed(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// newEntry is a hook's loop state, from what the store kept of it.
func newEntry(h *Hook, st HookState) *entry {
	return &entry{
		hook: h, paused: st.Paused, heapIdx: -1, lastSlot: st.LastSlot, firstSeen: st.FirstSeen,
		lastStart: st.LastStart, lastRunSlot: st.LastRunSlot, lastRunID: st.LastRunID, lastStatus: st.LastStatus,
		lastCheck: st.LastCheckFailed,
	}
}

// cancelPending cancels the hook's pending rerun, if any, with reason.
func (s *state) cancelPending(ent *entry, reason string, now time.Time) *Run {
	p := ent.pending
	if p == nil {
		return nil
	}
	ent.pending = nil
	s.delLive(p.ID)
	p.Status, p.Reason, p.FinishedAt = StatusCancelled, reason, now
	s.endWaiting(p)
	return p
}

// recordFirstSeen records now as the first-seen time of the scheduled
// hooks that have none: a scheduling hookd has loaded them with a schedule
// from now on, so a restart counts their slots since as missed even if
// none fired (initSchedule). Only an engine that schedules calls it.
func (s *state) recordFirstSeen(ctx context.Context, now time.Time) error {
	var names []string
	for name, ent := range s.hooks {
		if h := ent.hook; ent.firstSeen.IsZero() && h.Trigger.Periodic() && h.Trigger.Schedule != nil {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	if err := s.cfg.Store.RecordFirstSeen(ctx, names, now); err != nil {
		return fmt.Errorf("record hooks first seen: %w", err)
	}
	for _, name := range names {
		s.hooks[name].firstSeen = now
	}
	return nil
}

// initSchedule applies the hook's on_missed policy to the slots that
// passed since the last one recorded (for a hook that never fired, since
// it was first seen), then schedules the next slot.
func (s *state) initSchedule(ent *entry, now time.Time) {
	h := ent.hook
	if h.Trigger.Kind == TriggerAt {
		s.missedOnce(ent, now)
		s.schedule(ent, now)
		return
	}
	// A hook that never fired has missed the slots since a scheduling
	// hookd first loaded it, none before.
	from := ent.lastSlot
	if from.IsZero() {
		from = ent.firstSeen
	}
	if !from.IsZero() {
		keep := 1
		switch h.Trigger.OnMissed {
		case MissedSkip:
			keep = 0
		case MissedAll:
			keep = h.Trigger.MaxCatchup
			if keep <= 0 {
				keep = s.cfg.MaxCatchup
			}
		}
		// One more than kept: the first is then the latest slot not fired.
		slots, total := missedSlots(h.Trigger.Schedule, from, now, keep+1)
		if n := total - keep; n > 0 {
			policy := h.Trigger.OnMissed
			if policy == "" {
				policy = MissedLatest
			}
			// The record holds the latest missed slot, so the store keeps
			// these slots' fate: a restart before the catch-up does not
			// count them again.
			s.record(ent, &Run{
				ID: NewID(), Hook: h.Name, Trigger: "catchup", Status: StatusSkipped, Gate: GateMissed, Slot: slots[0],
				Reason: fmt.Sprintf("missed: %d slot(s) passed while hookd was down, not fired (on_missed: %s)", n, policy),
			})
			slots = slots[1:]
		}
		ent.catchup = slots
	}
	s.schedule(ent, now)
}

// restoreQueue puts the runs the store has as queued back in line.
func (s *state) restoreQueue(ctx context.Context, now time.Time) error {
	runs, err := s.cfg.Store.QueuedRuns(ctx)
	if err != nil {
		return fmt.Errorf("load queued runs: %w", err)
	}
	s.requeue(runs, now)
	return nil
}

// requeue puts queued runs back in line, oldest first: a hook's first in
// the queue (unless it has a run in flight), the next as its pending run,
// and any later one coalesced into that pending run (coalesceWaiting), as
// a trigger of the hook would be, keeping what it carries.
func (s *state) requeue(runs []*Run, now time.Time) {
	for _, r := range runs {
		ent := s.hooks[r.Hook]
		switch {
		case ent == nil:
			r.Status, r.Reason, r.FinishedAt = StatusCancelled, "removed: the hook no longer exists", now
			s.endWaiting(r)
		case ent.queued == nil && ent.active == nil:
			ent.queued = r
			s.queue = append(s.queue, &queuedRun{r, ent, s.nextWait()})
			s.setLive(r.ID, ent)
		case ent.pending == nil:
			ent.pending, ent.pendSince = r, s.nextWait()
			s.setLive(r.ID, ent)
		default:
			s.coalesceWaiting(ent, r, now)
		}
	}
}

// coalesceWaiting merges r, a waiting run that requeue found when its hook
// had a queued or running run and a pending one already, into the pending
// run, as a trigger coalesces into it (addPending): its payload (later
// keys win), its event type, a model's trigger and the traces it links
// to; r then ends cancelled, naming the run it merged into. A hook has
// more waiting runs than that when the end of one was never stored: a
// cluster's scheduler whose release of it failed, a process that stopped
// with its records still waiting for a stalled store. Before, r ended
// cancelled as coalesced with nothing of it merged: the pending run
// executed without the payload of the triggers r stood for.
func (s *state) coalesceWaiting(ent *entry, r *Run, now time.Time) {
	p, occupant := ent.pending, ent.queued
	if ent.active != nil {
		occupant = ent.active.run
	}
	var data map[string]any
	if len(r.Event) > 0 {
		if err := json.Unmarshal(r.Event, &data); err != nil {
			s.e.log.Warn("merge a waiting run's payload into its hook's pending run", "hook", r.Hook, "run", r.ID, "err", err)
		}
	}
	p.linkCoalesced(cmp.Or(r.TraceParent, r.TraceLinks.StartedBy)) // its own first, then those it links to
	for _, tp := range r.TraceLinks.Parents {
		p.linkCoalesced(tp)
	}
	p.TraceLinks.Dropped += r.TraceLinks.Dropped
	s.addPending(ent, r, trig{reason: r.Trigger, data: data, raw: r.Event, eventType: r.EventType,
		traceParent: r.TraceParent, traceLink: r.TraceLinks.StartedBy}, occupant)
	r.Status, r.FinishedAt = StatusCancelled, now
	r.Reason = fmt.Sprintf("coalesced: merged into run %s, its hook's pending run", p.ID)
	s.endWaiting(r)
}

// schedule sets ent's next slot after t and its place in the heap.
func (s *state) schedule(ent *entry, after time.Time) {
	tr := &ent.hook.Trigger
	if !ent.lastSlot.IsZero() && ent.lastSlot.After(after) {
		after = ent.lastSlot // never fire a slot twice, even after the clock moved back
	}
	slot := tr.Schedule.Next(after)
	if slot.IsZero() {
		if ent.heapIdx >= 0 {
			heap.Remove(&s.due, ent.heapIdx)
		}
		ent.slot, ent.due = time.Time{}, time.Time{}
		return
	}
	ent.slot = slot
	ent.due = dueAt(ent.hook, slot)
	if ent.heapIdx >= 0 {
		heap.Fix(&s.due, ent.heapIdx)
	} else {
		heap.Push(&s.due, ent)
	}
}

// alarmTick is the longest the loop sleeps when it has a wall-clock
// Alarm (unless Tick is longer): it wakes then only for Config.Guard.
const alarmTick = 30 * time.Second

// loop is the engine's one scheduling goroutine.
func (s *state) loop(ctx context.Context) {
	timer := s.cfg.Clock.NewTimer(s.cfg.Tick)
	defer timer.Stop()
	alarm := s.newAlarm()
	var (
		alarmC <-chan struct{}
		armed  time.Time // what alarm is set for
		rearm  = true    // set it even if next is armed
	)
	if alarm != nil {
		alarmC = alarm.C()
	}
	defer func() {
		if alarm != nil {
			alarm.Close()
		}
	}()
	if !s.cfg.Manual {
		s.startReruns()
		s.startCatchups()
		s.drainQueue()
	}
	for {
		now := s.cfg.Clock.Now()
		gap := s.look(now)
		s.guard(now)
		s.unhold()
		s.fireDue(now, gap)
		if !s.cfg.Manual {
			s.fireRetries(now)
		}
		s.flushEvents()
		next := s.nextWake()
		wait := s.cfg.Tick
		if alarm != nil {
			// Armed for next already and not fired since: no syscall (a
			// busy loop wakes for every message).
			if rearm || !next.Equal(armed) {
				if err := alarm.Set(next); err != nil {
					s.e.log.Warn("wall-clock alarm failed; the loop re-reads the clock every tick from now on", "err", err)
					alarm.Close()
					alarm, alarmC = nil, nil
				}
				armed, rearm = next, false
			}
			if alarm != nil {
				wait = max(s.cfg.Tick, alarmTick)
			}
		}
		if alarm == nil && !next.IsZero() {
			wait = max(min(wait, next.Sub(now)), 0)
		}
		// Holding reruns or retries the store_stalled gate refused, the
		// loop wakes when the stall ends (unhold starts them).
		var answers <-chan struct{}
		if s.holds() {
			answers = s.e.wr.answering()
		}
		timer.Reset(wait)
		asleep := s.cfg.Clock.Mono()
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
			s.slept(asleep)
		case <-answers:
			s.slept(asleep)
		case <-alarmC:
			s.slept(asleep)
			rearm = true // expired, or cancelled by a clock step
		case f := <-s.e.msgs:
			s.slept(asleep)
			// Sleeping on the alarm, the loop may not have looked for
			// alarmTick: the guard looks first, so that nothing is
			// triggered before it did. (On the tick it looked at most a
			// Tick ago, at the top of the loop.)
			if alarm != nil {
				s.guard(s.cfg.Clock.Now())
			}
			f(s)
			// Take what else is waiting before looking at the clock again.
			for n := 0; n < 64; n++ {
				select {
				case f := <-s.e.msgs:
					f(s)
					continue
				default:
				}
				break
			}
			s.flushEvents()
		}
	}
}

// newAlarm returns a wall-clock alarm when the clock has them and the
// engine schedules (a Manual engine has nothing due), or nil.
func (s *state) newAlarm() clock.Alarm {
	if s.cfg.Manual {
		return nil
	}
	a, err := s.cfg.Clock.NewAlarm()
	if err != nil {
		s.e.log.Info("no wall-clock alarm; the loop re-reads the clock every tick", "tick", s.cfg.Tick, "err", err)
		return nil
	}
	return a
}

// nextWake returns the earliest wall time the loop has something to do
// at: the next due slot or retry; zero when none, or while stopping
// (fireDue fires nothing then, so the loop must not spin on a due slot).
func (s *state) nextWake() time.Time {
	if s.stopping() || !s.schedules() {
		return time.Time{}
	}
	var next time.Time
	if len(s.due) > 0 {
		next = s.due[0].due
	}
	if at := s.nextRetry(); !at.IsZero() && !s.cfg.Manual && (next.IsZero() || at.Before(next)) {
		next = at
	}
	return next
}

func (s *state) stopping() bool {
	select {
	case <-s.e.stopping:
		return true
	default:
		return false
	}
}

// fireDue fires every hook whose jittered slot has come; gap is the
// stretch since the loop last looked at the clock, before now.
func (s *state) fireDue(now time.Time, gap loopGap) {
	if s.stopping() || !s.schedules() {
		return
	}
	for len(s.due) > 0 && !s.due[0].due.After(now) {
		ent := s.due[0]
		slot := ent.slot
		// Slots that passed while the loop could not look (a suspend, a
		// clock jump, a wait for the store): fire the latest once and
		// record the rest, with why (loopGap.why).
		later, n := missedSlots(ent.hook.Trigger.Schedule, slot, now, 2)
		if n > 0 {
			// The record holds the latest missed slot; later[0] when
			// there were two or more after slot.
			missed := slot
			if len(later) == 2 {
				missed = later[0]
			}
			s.record(ent, &Run{
				ID: NewID(), Hook: ent.hook.Name, Trigger: "schedule", Status: StatusSkipped, Gate: GateMissed, Slot: missed,
				Reason: fmt.Sprintf("missed: %d slot(s) from %s passed while %s; fired the latest once",
					n, slot.Format(time.RFC3339), gap.why()),
			})
			slot = later[len(later)-1]
		}
		s.fireSlot(ent, "schedule", slot)
		s.schedule(ent, slot)
	}
}

func (s *state) fireSlot(ent *entry, reason string, slot time.Time) {
	data := periodicPayload(reason, s.cfg.Clock.Now(), slot, ent.lastStart)
	// on_missed: all fires every missed slot, one after the other: its
	// catch-ups pass the cooldown, or all but the first would be refused.
	force := reason == "catchup" && ent.hook.Trigger.OnMissed == MissedAll
	res := s.trigger(ent, trig{reason: reason, slot: slot, data: data, force: force})
	ent.lastMissed = res.err != nil
	if slot.After(ent.lastSlot) {
		ent.lastSlot = slot
	}
}

func (s *state) startCatchups() {
	names := make([]string, 0)
	for name, ent := range s.hooks {
		if len(ent.catchup) > 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		s.nextCatchup(s.hooks[name])
	}
}

// nextCatchup fires ent's next missed slot. The one after waits for the
// run it starts; a slot a gate refuses (rate, budget) leaves its record
// and the next is fired at once, so that no slot waits for a run that
// never comes.
func (s *state) nextCatchup(ent *entry) bool {
	fired := false
	for len(ent.catchup) > 0 {
		slot := ent.catchup[0]
		ent.catchup = ent.catchup[1:]
		s.fireSlot(ent, "catchup", slot)
		fired = true
		if !ent.lastMissed {
			break
		}
	}
	return fired
}

// trigger runs a trigger through the gates: disabled/paused, in flight,
// cooldown, then the concurrency limit.
func (s *state) trigger(ent *entry, t trig) trigResult {
	h := ent.hook
	now := s.cfg.Clock.Now()
	run := &Run{
		ID: NewID(), Hook: h.Name, Project: h.Project, Trigger: t.reason, Slot: t.slot,
		EventType: t.eventType, Depth: t.depth, QueuedAt: now, HookVersion: h.Source.Version, EventSeq: t.eventSeq,
	}
	run.traceOf(t.traceParent, t.traceLink)
	if t.id != "" {
		run.ID = t.id
	}
	if t.note != "" {
		run.Notes = []string{t.note}
	}
	if p := t.retry; p != nil {
		run.ID, run.Attempt, run.Attempts, run.RetryOf = p.RunID, p.Attempt, p.Attempts, p.RetryOf
	}
	switch {
	case t.raw != nil:
		run.Event = t.raw
	case t.data != nil:
		run.Event, _ = MarshalData(t.data)
	}
	// Redacted from the record's first write: a run that never reaches
	// its final record (hookd killed) keeps this one, which is shown,
	// read by tools and indexed.
	run.Event = s.redactEvent(ent, run.Event)
	if t.depth >= s.cfg.MaxEventDepth {
		// A chain of hooks triggering each other (by events, or by the
		// fire_hook tool) is cut here, for every way in.
		what := "the fire"
		if t.eventType != "" {
			what = "event " + t.eventType
		}
		s.e.log.Warn("event chain cut", "hook", h.Name, "trigger", t.reason, "depth", t.depth)
		return s.refuse(ent, run, StatusSkipped, &GateError{Gate: GateEventDepth, Hook: h.Name,
			Detail: fmt.Sprintf("%s is %d runs deep (limit %d); a hook chain loops", what, t.depth, s.cfg.MaxEventDepth)})
	}
	if g := s.invalidGate(h); g != nil {
		return s.refuse(ent, run, StatusSkipped, g)
	}
	if !h.Enabled && !t.disabled {
		return s.refuse(ent, run, StatusSkipped, &GateError{Gate: GateDisabled, Hook: h.Name,
			Detail: fmt.Sprintf("hook %s has enabled: false in %s; set enabled: true to run it (hookd fire --even-disabled runs it once)", h.Name, h.Source.File)})
	}
	if ent.paused {
		return s.refuse(ent, run, StatusSkipped, &GateError{Gate: GatePaused, Hook: h.Name,
			Detail: fmt.Sprintf("hook %s is paused; run `hookd resume %s` first", h.Name, h.Name)})
	}
	if g := s.e.sandboxGate(h); g != nil {
		return s.refuse(ent, run, StatusSkipped, g)
	}
	if note := s.e.limitsNote(h); note != "" {
		run.Notes = append(run.Notes, note)
	}
	if from, ok := FromTool(t.reason); ok && !h.AcceptFromTools {
		return s.refuse(ent, run, StatusSkipped, &GateError{Gate: GateFromTool, Hook: h.Name,
			Detail: fmt.Sprintf("the model of hook %s asked for this run with a tool call; hook %s does not accept that "+
				"(it holds run_command, write_file or MCP tools); set accept_from_tools: true in %s to allow it", from, h.Name, h.Source.File)})
	}
	if ent.active != nil || ent.queued != nil {
		occupant := ent.queued
		if ent.active != nil {
			occupant = ent.active.run
		}
		switch h.Overlap {
		case OverlapQueue:
			return s.addPending(ent, run, t, occupant)
		case OverlapCancelPrevious:
			if ent.queued != nil {
				s.dequeue(ent.queued, StatusCancelled, "cancel_previous: superseded by run "+run.ID)
			}
			if ent.active != nil {
				ent.active.cancel(&cancelCause{StatusCancelled, CauseCancelPrevious, "cancel_previous: superseded by run " + run.ID})
				s.cancelPending(ent, "cancel_previous: superseded by run "+run.ID, now)
				return s.addPending(ent, run, t, ent.active.run)
			}
		default:
			return s.refuse(ent, run, StatusSkipped, &GateError{Gate: GateInFlight, Hook: h.Name, RunID: occupant.ID,
				Detail: "wait for it to finish, or set overlap: queue or cancel_previous"})
		}
	}
	if left := ent.cooldownLeft(t.slot, now); left > 0 && !t.force {
		return s.refuse(ent, run, StatusSkipped, &GateError{Gate: GateCooldown, Hook: h.Name, Remaining: left,
			Detail: fmt.Sprintf("cooldown is %s; use --force to skip the cooldown", h.Cooldown)})
	}
	if st, ok := s.e.wr.stalled(); ok {
		g := &GateError{Gate: GateStoreStalled, Hook: h.Name,
			Detail: st.String() + "; no run starts until the store takes writes again"}
		if !t.slot.IsZero() {
			// Folded into the hook's one missed record, written once
			// the store answers (writer.go).
			s.e.wr.missSlot(h, t.slot, "", "", s.fence())
			return trigResult{run: run, err: g}
		}
		if t.stored {
			// The gate says nothing of the hook: a stored rerun or retry
			// is kept, and started once the store takes writes again
			// (triggerStored). Its record has an id of its own, so that
			// its run's id stays free for that start; it is also the
			// write that finds the store answering again.
			rec := *run
			rec.ID, rec.Attempt, rec.Attempts, rec.RetryOf = NewID(), 0, 0, ""
			s.refuse(ent, &rec, StatusSkipped, &GateError{Gate: GateStoreStalled, Hook: h.Name,
				Detail: fmt.Sprintf("%s; the %s (run %s) is kept and starts once the store takes writes again", st, t.reason, run.ID)})
			return trigResult{run: run, err: g}
		}
		return s.refuse(ent, run, StatusSkipped, g)
	}
	if g := s.startGates(ent, now); g != nil {
		return s.refuse(ent, run, StatusSkipped, g)
	}
	return s.admit(ent, run, s.nextWait())
}

// cooldownLeft returns how much of its hook's cooldown a trigger at now,
// for slot (zero: not a schedule slot's), must still wait; 0 or less when
// none. The cooldown is judged on nominal slot times: a slot is measured
// from the slot of the latest run, so neither jitter nor a loop that woke
// a few milliseconds late nor a wait in the queue shortens the gap between
// two slots. When either is not a slot's, the gap ends, or begins, at the
// start: a slot after a manual fire is judged from the fire's time, and a
// manual fire from the latest run's start.
func (ent *entry) cooldownLeft(slot, now time.Time) time.Duration {
	if ent.hook.Cooldown <= 0 || ent.lastStart.IsZero() {
		return 0
	}
	from, to := ent.lastStart, now
	if !slot.IsZero() {
		to = slot
		if !ent.lastRunSlot.IsZero() {
			from = ent.lastRunSlot
		}
	}
	return from.Add(ent.hook.Cooldown).Sub(to)
}

// nextWait is the place in line of a run that begins waiting now.
func (s *state) nextWait() uint64 {
	s.waits++
	return s.waits
}

// startGates applies the gates that count a hook's starts, rate then
// budget, to a run about to be admitted (a new trigger, or the pending
// rerun when the run before it ends), and counts its start in the rate
// window: nil when it may go.
func (s *state) startGates(ent *entry, now time.Time) *GateError {
	if g := s.rateGate(ent, now); g != nil {
		return g
	}
	if g := s.budgetGate(ent, now); g != nil {
		return g
	}
	if ent.hook.Rate.N > 0 {
		ent.starts = append(ent.starts, now)
	}
	return nil
}

// addPending makes run the hook's one pending rerun, or merges it into the
// pending run there is.
func (s *state) addPending(ent *entry, run *Run, t trig, occupant *Run) trigResult {
	if p := ent.pending; p != nil {
		ent.coalesce++
		p.Event = s.redactEvent(ent, s.mergePending(p, t))
		p.linkCoalesced(cmp.Or(t.traceParent, t.traceLink))
		if t.eventType != "" {
			p.EventType = t.eventType
		}
		if _, ok := FromTool(t.reason); ok {
			p.Trigger = t.reason // merged data from a model marks the whole run
		}
		p.Reason = fmt.Sprintf("pending: waits for run %s; %d later trigger(s) coalesced into it", occupant.ID, ent.coalesce)
		// A slot merged here is the pending run's: stored with it, so a
		// restart does not fire it again as missed. So is the stored event
		// it came from (reached this hook: not merged again by a dispatch
		// after a crash or failover), and a fire another cluster node
		// forwarded (t.id): one decided again after a failover is not
		// fired again (decideFire).
		if cl := s.e.cfg.Cluster; cl != nil && t.id != "" {
			ctx, cancel := s.e.storeCtx(context.Background())
			err := cl.MergeFire(s.fence()(ctx), p, t.id)
			cancel()
			if err != nil {
				s.e.log.Error("store coalesced run", "hook", ent.hook.Name, "run", p.ID, "err", err)
			}
		} else {
			s.updateQueued(p, Merged{Slot: t.slot, EventSeq: t.eventSeq}, "coalesced run")
		}
		return trigResult{run: p}
	}
	ent.coalesce = 0
	run.Status = StatusQueued
	run.Reason = fmt.Sprintf("pending: waits for run %s", occupant.ID)
	s.insertRecord(run)
	ent.pending, ent.pendSince = run, s.nextWait()
	s.setLive(run.ID, ent)
	return trigResult{run: run}
}

// mergePending merges a later trigger's payload into the pending run p's:
// by the trigger's own rules when it has them (Event.Merge), else the
// later keys win.
func (s *state) mergePending(p *Run, t trig) json.RawMessage {
	if t.merge != nil {
		data, err := t.merge(p.Event)
		if err == nil {
			var b []byte
			if b, err = json.Marshal(data); err == nil {
				return s.boundPending(p, b, t)
			}
		}
		s.e.log.Warn("merge a trigger into a pending run; its payload replaces the pending one's keys",
			"hook", p.Hook, "run", p.ID, "err", err)
	}
	return s.boundPending(p, mergeEvent(p.Event, t.data), t)
}

// maxMergedEvent bounds the merged payload of a pending rerun: past it,
// the later trigger's payload replaces the pending one's, so that a flood
// of events with keys of their own cannot grow it, and the work of each
// merge (decoded, encoded and stored in the loop), without bound.
const maxMergedEvent = 1 << 20

// boundPending returns merged, the pending run p's payload with t's
// merged in, or t's payload alone when merged is over maxMergedEvent.
func (s *state) boundPending(p *Run, merged json.RawMessage, t trig) json.RawMessage {
	if len(merged) <= maxMergedEvent {
		return merged
	}
	later := t.raw
	if later == nil {
		later, _ = json.Marshal(t.data)
	}
	const note = "the payloads coalesced into this run passed 1 MiB: a later trigger's payload replaced the earlier ones"
	if !slices.Contains(p.Notes, note) {
		p.Notes = append(p.Notes, note)
		s.e.log.Warn("pending run's payload over 1 MiB: the later trigger's payload replaces it", "hook", p.Hook, "run", p.ID)
	}
	return later
}

// redactEvent redacts the secrets of ent's hook's runs in a run's
// payload.
func (s *state) redactEvent(ent *entry, ev json.RawMessage) json.RawMessage {
	if len(ev) == 0 {
		return ev
	}
	if red := s.shared(ent).red; red != nil {
		return json.RawMessage(red.String(string(ev)))
	}
	return ev
}

// hookShared is what every run of a loaded hook uses alike, built once
// per hook rather than once per run: its redactor and its processes'
// environment. Both depend only on the hook and the engine's Config, and
// are only read: runs in flight share them.
type hookShared struct {
	hook *Hook
	red  *redact.Redactor
	envs *ChildEnvs // h.ChildEnvs(Config.Environ); never written to
}

// newHookShared builds h's hookShared.
func (e *Engine) newHookShared(h *Hook) *hookShared {
	return &hookShared{hook: h, red: e.redactor(h), envs: h.ChildEnvs(e.cfg.Environ)}
}

// shared returns the hookShared of ent's hook, built once per loaded hook
// (a reload gives the entry another hook).
func (s *state) shared(ent *entry) *hookShared {
	if ent.shared == nil || ent.shared.hook != ent.hook {
		ent.shared = s.e.newHookShared(ent.hook)
	}
	return ent.shared
}

// mergeEvent merges data into a stored JSON object; later keys win.
func mergeEvent(old json.RawMessage, data map[string]any) json.RawMessage {
	if data == nil {
		return old
	}
	merged := map[string]any{}
	if len(old) > 0 {
		_ = json.Unmarshal(old, &merged)
	}
	maps.Copy(merged, data)
	b, err := json.Marshal(merged)
	if err != nil {
		return old
	}
	return b
}

// admit starts run, which began waiting at since (state.waits), now, when
// a concurrency slot is free and no run in the global queue began waiting
// before it; else it puts run in the queue in that order. So a pending
// rerun admitted when its hook's run ends takes the freed slot only if no
// run was queued before the rerun began waiting: otherwise it waits behind
// those (the caller drains the queue), as a trigger of that moment would.
// The queue's bound refuses a run only when no slot is free: with one
// free, the queue's head starts at once and the queue stays in bounds.
func (s *state) admit(ent *entry, run *Run, since uint64) trigResult {
	free := s.running < s.maxConcurrent() && !s.stopping()
	if free && (len(s.queue) == 0 || s.queue[0].since > since) {
		act, snap := s.startRun(ent, run)
		return trigResult{run: snap, act: act}
	}
	if !free && len(s.queue) >= s.cfg.QueueSize {
		g := &GateError{Gate: GateQueueFull, Hook: ent.hook.Name,
			Detail: fmt.Sprintf("%d runs already wait for a concurrency slot (max_concurrent %d, queue_size %d)",
				len(s.queue), s.maxConcurrent(), s.cfg.QueueSize)}
		if run.Status == StatusQueued {
			// A pending run, whose run before it ended with no slot free:
			// a cluster's scheduler that took over with more runs in
			// flight than its max_concurrent. It has its record, and
			// maybe waiters: it ends as refused.
			s.refuseWaiting(ent, run, StatusDropped, g)
			return trigResult{run: run, err: g}
		}
		return s.refuse(ent, run, StatusDropped, g)
	}
	known := run.Status == StatusQueued // a pending run already has its record
	run.Status = StatusQueued
	run.Reason = fmt.Sprintf("queued: waits for a concurrency slot (max_concurrent %d)", s.maxConcurrent())
	if known {
		s.updateQueued(run, Merged{}, "queued run")
	} else {
		s.insertRecord(run)
	}
	ent.queued = run
	s.setLive(run.ID, ent)
	i := len(s.queue)
	for i > 0 && s.queue[i-1].since > since {
		i--
	}
	s.queue = slices.Insert(s.queue, i, &queuedRun{run, ent, since})
	return trigResult{run: run}
}

// refuse records a trigger a gate stopped.
func (s *state) refuse(ent *entry, run *Run, status Status, g *GateError) trigResult {
	run.Status, run.Gate = status, g.Gate
	run.Reason = g.reason()
	run.FinishedAt = run.QueuedAt
	s.record(ent, run)
	return trigResult{run: run, err: g}
}

// record stores a final record of a trigger that did not run and
// announces it.
func (s *state) record(ent *entry, run *Run) {
	run.Project = ent.hook.Project
	if run.FinishedAt.IsZero() {
		run.FinishedAt = s.cfg.Clock.Now()
	}
	if run.QueuedAt.IsZero() {
		run.QueuedAt = run.FinishedAt
	}
	s.insertRecord(run)
	if !run.Slot.IsZero() && run.Slot.After(ent.lastSlot) {
		ent.lastSlot = run.Slot
	}
	s.events = append(s.events, RunEvent(run))
}

// insertRecord stores the first record of a run that did not start now,
// and with it the event it came from as dispatched to its hook
// (Run.EventSeq): once the loop knows it stored, its later writes need
// not. A record the store refused, or one still waiting in the writer,
// leaves the run its EventSeq: its start records the hook reached (the
// store does nothing for an event no longer pending, or a hook recorded
// already), so that an event kept pending for want of this record is not
// given to the hook again once the run took it.
// The loop's writes go through the writer (writer.go), each with a copy
// of the run: the loop goes on changing its own. While the store
// answers the loop waits for them, and takes back what the store set
// (a record collapsed into an earlier one has that one's id).
func (s *state) insertRecord(run *Run) {
	cp := *run
	fence := s.fence()
	wr := s.e.wr.submit("run record", run.Hook, run.ID, func(ctx context.Context) error { return s.cfg.Store.InsertRun(fence(ctx), &cp) })
	if run.EventSeq != 0 {
		s.records = append(s.records, wr)
	}
	if s.await(wr) {
		run.ID, run.Repeats, run.QueuedAt = cp.ID, cp.Repeats, cp.QueuedAt
		run.EventSeq = 0
	}
}

func (s *state) finishRecord(run *Run) {
	cp := *run
	fence := s.fence()
	s.await(s.e.wr.submit("run record", run.Hook, run.ID, func(ctx context.Context) error { return s.cfg.Store.FinishRun(fence(ctx), &cp) }))
}

// updateQueued stores what changed of a queued run.
func (s *state) updateQueued(run *Run, merged Merged, what string) {
	cp := *run
	fence := s.fence()
	wr := s.e.wr.submit(what, run.Hook, run.ID, func(ctx context.Context) error { return s.cfg.Store.UpdateQueued(fence(ctx), &cp, merged) })
	if merged.EventSeq != 0 {
		s.records = append(s.records, wr)
	}
	s.await(wr)
}

// fence is how a write the loop makes now is fenced (Cluster.Fence): on
// a cluster's scheduler by its hold on the lease, elsewhere not at all.
// A record, a merge into a pending run or a run's end that a scheduler
// writes after it lost the lease, or commits after its process died,
// would otherwise land after the next scheduler read the runs that wait
// and the hooks an event reached: a merge it never sees, whose event it
// then passes by as reached (the run it releases overwrites the merged
// payload), or a pending run it never starts.
func (s *state) fence() func(context.Context) context.Context {
	if cl := s.e.cfg.Cluster; cl != nil && s.leader {
		return cl.Fence
	}
	return unfenced
}

// unfenced is the fence of a write no lease fences: ctx as it is.
func unfenced(ctx context.Context) context.Context { return ctx }

// refuseWaiting finishes a queued or pending run, which has its record,
// that a gate refused when its time to start came, with status
// (skipped, or dropped by queue_full).
func (s *state) refuseWaiting(ent *entry, run *Run, status Status, g *GateError) {
	run.Status, run.Gate, run.Reason, run.FinishedAt = status, g.Gate, g.reason(), s.cfg.Clock.Now()
	s.endWaiting(run)
}

// endWaiting stores the final record of a queued or pending run that ends
// without starting, answers its waiters and publishes its outcome, as
// every run's end is published.
func (s *state) endWaiting(run *Run) {
	s.finishRecord(run)
	s.finishWaiters(run)
	s.events = append(s.events, RunEvent(run))
}

// dequeue takes a queued run out of the global queue and finishes it.
func (s *state) dequeue(run *Run, status Status, reason string) {
	for i, q := range s.queue {
		if q.run == run {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			q.ent.queued = nil
			break
		}
	}
	s.delLive(run.ID)
	run.Status, run.Reason, run.FinishedAt = status, reason, s.cfg.Clock.Now()
	s.endWaiting(run)
}

// startRun launches run in its own goroutine, which owns run from then
// on; the snapshot taken before is what callers may read.
func (s *state) startRun(ent *entry, run *Run) (*active, *Run) {
	now := s.cfg.Clock.Now()
	ctx, cancel := context.WithCancelCause(s.e.runCtx)
	act := &active{run: run, cancel: cancel, started: make(chan struct{}), wasQueued: run.Status == StatusQueued}
	if f, ok := s.unstarted[run.ID]; ok {
		delete(s.unstarted, run.ID)
		act.stored = &f
	}
	if s.e.cfg.Cluster == nil {
		act.after = s.e.wr.last()
	} else {
		act.after = s.e.wr.lastOf(run.ID) // released after its own records (release)
	}
	if (s.marking.seq != 0 || s.marking.ev != nil) && s.marking.hook == run.Hook {
		act.markSeq, act.carry = s.marking.seq, s.marking.ev
		s.marking = marking{carrier: act}
		run.EventSeq = 0 // its start marks the event dispatched: no record of it is needed
	}
	run.PrevStart = ent.lastStart
	run.Status = StatusRunning
	run.Reason = "" // why it waited (queued:, pending:) no longer applies
	if run.Attempt == 0 && ent.hook.Retry.Enabled() {
		run.Attempt, run.Attempts = 1, ent.hook.Retry.Attempts
	}
	run.StartedAt = now
	act.shared = s.shared(ent)
	act.progress = &RunProgress{RunID: run.ID, Hook: run.Hook, Trigger: run.Trigger, StartedAt: now, Since: now, Steps: []StepProgress{}}
	ent.active = act
	ent.lastStart, ent.lastRunSlot, ent.lastRunID, ent.lastStatus, ent.lastCheck = now, run.Slot, run.ID, StatusRunning, ""
	s.running++
	s.setLive(run.ID, ent)
	snap := *run
	if s.e.cfg.Cluster != nil {
		cancel(errRunOver) // a node that claims it runs it, under its own context
		act.cancel = s.e.remoteCancel(run.ID)
		s.remote[run.ID] = act
		go s.e.release(ent, ent.hook, act, s.fence())
		return act, &snap
	}
	s.e.runs.Add(1)
	s.e.goExecute(runJob{ctx, ent, ent.hook, act})
	return act, &snap
}

// errRunOver is the cause of a run context cancelled once its run ended.
var errRunOver = errors.New("engine: run is over")

// finished is called on the loop when a run's goroutine is done; retry
// is the retry it planned, if any.
func (s *state) finished(ent *entry, act *active, retry *PendingRetry) {
	run := act.run
	s.running--
	s.spend.Add(act.usage)
	if retry != nil {
		s.retries.add(retry)
	}
	if ent.active == act {
		ent.active = nil
	}
	// Release the run's context: until cancelled it stays a child of the
	// engine's, with everything it holds, for the daemon's lifetime.
	act.cancel(errRunOver)
	if ent.lastRunID == run.ID {
		ent.lastStatus, ent.lastCheck = run.Status, run.CheckFailed
	}
	s.delLive(run.ID)
	delete(s.remote, run.ID)
	s.finishWaiters(run)
	if ent.active == nil && s.retired[ent.hook.Name] == ent {
		delete(s.retired, ent.hook.Name) // its last run is over: the hook is gone
	}
	if s.stopping() {
		return
	}
	if p := ent.pending; p != nil && ent.active == nil && ent.queued == nil {
		ent.pending = nil
		s.delLive(p.ID)
		if g := s.startGates(ent, s.cfg.Clock.Now()); g != nil {
			s.refuseWaiting(ent, p, StatusSkipped, g)
		} else {
			s.admit(ent, p, ent.pendSince)
		}
	} else if ent.active == nil && ent.queued == nil {
		s.nextCatchup(ent)
	}
	s.drainQueue()
}

// maxConcurrent is how many runs may execute at once now.
func (s *state) maxConcurrent() int { return int(s.e.maxConcurrent.Load()) }

// drainQueue starts queued runs while there are free slots.
func (s *state) drainQueue() {
	for len(s.queue) > 0 && s.running < s.maxConcurrent() && !s.stopping() {
		q := s.queue[0]
		s.queue = s.queue[1:]
		q.ent.queued = nil
		if g := s.budgetGate(q.ent, s.cfg.Clock.Now()); g != nil {
			s.delLive(q.run.ID)
			s.refuseWaiting(q.ent, q.run, StatusSkipped, g)
			continue
		}
		s.startRun(q.ent, q.run)
	}
}

// dispatch fires the hooks whose event trigger matches ev. When mark is
// set (ev is stored pending) and ev matches one hook, the start of the run
// ev starts marks ev dispatched in the same transaction.
//
// carry, when set, is ev not stored yet: the run ev starts at once, when
// it is the only hook ev fires, stores it with its start (Store.StartRunWithEvent)
// and is returned as carrier; when several hooks take it, it fires none
// and says so (several), to be stored pending and dispatched as a stored
// event. refused are the matching hooks a gate refused, each with the
// record the refusal left (a copy). A stored
// event (mark) is recorded with what it does to each hook (Run.EventSeq,
// Merged.EventSeq), and returns those records (the writer's: records);
// the hooks in reached, which it reached before a crash or failover, are
// passed by.
func (s *state) dispatch(ev *Event, mark bool, carry *Event, reached []string) (d loopDispatch) {
	s.records = nil
	defer func() { d.records, s.records = s.records, nil }()
	// Progress events are for watchers, never for hooks (progress.go).
	if s.cfg.Events == nil || s.stopping() || !s.schedules() || ProgressEventType(ev.Type) {
		return d
	}
	s.match = s.cfg.Events.Listeners(s.match[:0], ev.Type)
	if len(s.match) == 0 {
		d.unheard = true
		return d
	}
	// where: is decided first, for every hook listening, so that the
	// hooks it rejects are known, and so is the one hook an event starts.
	s.accept = s.accept[:0]
	for _, name := range s.match {
		ent := s.hooks[name]
		if ent == nil || !inProject(ent.hook, ev.Data) {
			continue
		}
		if slices.Contains(reached, name) {
			// The one place a redispatched event is decided: it reached
			// this hook before a crash or failover (a run started, waits or
			// was refused, or it merged into a pending run), and the record
			// of that stands.
			continue
		}
		ok, err := s.accepts(ent, ev.Data)
		if err != nil {
			s.e.log.Warn("where: not evaluated; the event does not fire the hook", "hook", name, "event", ev.ID, "err", err)
		}
		if !ok {
			d.rejected = append(d.rejected, name)
			continue
		}
		s.accept = append(s.accept, ent)
	}
	if len(s.accept) == 0 {
		return d
	}
	if carry != nil && len(s.accept) > 1 {
		// Several hooks take ev, not stored yet: no one start can store
		// it, and what it does to each hook is recorded only for a
		// stored event (Run.EventSeq). It fires nothing here: the caller
		// stores it pending and dispatches it as a stored one.
		d.several = true
		return d
	}
	var raw json.RawMessage // the payload, encoded once for every hook it fires
	if ev.Data != nil {
		raw, _ = MarshalData(ev.Data)
	}
	var seq int64 // ev is stored pending: each hook it reaches is recorded (Run.EventSeq)
	if mark {
		seq = ev.Seq
	}
	only := len(s.accept) == 1
	for _, ent := range s.accept {
		name := ent.hook.Name
		reason := "event"
		if _, ok := FromTool(ev.Source); ok {
			reason = ev.Source // the data is a model's: the run is marked, and gated, as such
		}
		t := trig{reason: reason, data: ev.Data, raw: raw, eventType: ev.Type, depth: ev.Depth, eventSeq: seq, traceParent: ev.TraceParent,
			traceLink: ev.TraceLink}
		if mark && ev.Seq != 0 && only {
			s.marking = marking{hook: name, seq: ev.Seq}
		}
		if carry != nil && only {
			// The run that starts now stores carry with its start: its
			// fate is that run, decided before the run's goroutine reads it.
			t.id = NewID()
			carry.Fate = &EventFate{Rejected: d.rejected, Runs: []FateRun{{ID: t.id, Hook: name}}}
			s.marking = marking{hook: name, ev: carry}
		}
		res := s.trigger(ent, t)
		if s.marking.carrier != nil && s.marking.carrier.carry != nil {
			d.carrier = s.marking.carrier
		}
		s.marking = marking{} // unused when the run did not start now
		if res.err == nil {
			d.fired = append(d.fired, res.run)
		} else if g, ok := errors.AsType[*GateError](res.err); ok && res.run != nil {
			cp := *res.run
			d.refused = append(d.refused, Refusal{Run: &cp, Gate: g})
		}
	}
	return d
}

// loopDispatch is what the loop decided for an event (state.dispatch).
type loopDispatch struct {
	fired    []*Run
	refused  []Refusal // listening hooks a gate refused
	carrier  *active
	rejected []string // listening hooks whose where: rejected it
	unheard  bool     // no hook listens to its type
	several  bool     // with carry: several hooks take it, and it fired none
	// records are the writer's records of what a stored event (mark) did
	// to each hook: a run that waits, a refusal, a merge into a pending
	// run.
	records []*write
}

// accepts reports whether ent's where: accepts an event's payload: its
// payload filters (kept by the event index) and its condition. It is
// where where: is decided, for a dispatched event and for a fire with an
// event (FireOptions.IgnoreWhere); a condition that cannot be evaluated
// rejects it, with the error.
func (s *state) accepts(ent *entry, data map[string]any) (bool, error) {
	h := ent.hook
	if s.cfg.Events != nil && h.Trigger.Event != "" && !s.cfg.Events.Accepts(h.Name, data) {
		return false, nil
	}
	if c := h.Trigger.WhereIf; c != nil {
		return c.Eval(&Scope{Hook: h.Name, Event: data})
	}
	return true, nil
}

// flushEvents dispatches the engine events raised on the loop.
func (s *state) flushEvents() {
	for len(s.events) > 0 {
		ev := s.events[0]
		s.events = s.events[1:]
		if !s.schedules() && !ProgressEventType(ev.Type) {
			// A cluster node that does not schedule: the scheduler
			// dispatches it from the store.
			s.e.storePending(ev)
			s.e.notify(ev)
			continue
		}
		s.e.logEvent(ev)
		if ProgressEventType(ev.Type) {
			s.track(ev)
		}
		s.e.notify(ev)
		s.dispatch(ev, false, nil, nil)
	}
	s.events = s.events[:0]
}

// The loop writes live and waiters under Engine.waitMu, so that Wait can
// add a waiter for a live run without a message to the loop (addWaiter);
// the loop reads live without it.

// setLive and delLive add and remove a run of live.
func (s *state) setLive(runID string, ent *entry) {
	s.e.waitMu.Lock()
	s.live[runID] = ent
	s.e.waitMu.Unlock()
}

func (s *state) delLive(runID string) {
	s.e.waitMu.Lock()
	delete(s.live, runID)
	s.e.waitMu.Unlock()
}

// isLive reports whether the run is live (active, queued or pending).
// Safe off the loop.
func (s *state) isLive(runID string) bool {
	s.e.waitMu.Lock()
	defer s.e.waitMu.Unlock()
	_, ok := s.live[runID]
	return ok
}

// addWaiter has ch told of the run's end and reports true when the run is
// live (active, queued or pending; its end is then not told yet: every
// run leaves live before finishWaiters) or ended a moment ago (one of
// recent's: ch is told now). Safe off the loop.
func (s *state) addWaiter(runID string, ch chan *Run) bool {
	s.e.waitMu.Lock()
	defer s.e.waitMu.Unlock()
	if _, ok := s.live[runID]; !ok {
		if run, ok := s.recent.get(runID); ok {
			ch <- run
			return true
		}
		return false
	}
	s.waiters[runID] = append(s.waiters[runID], ch)
	return true
}

func (s *state) finishWaiters(run *Run) {
	final := *run // the waiters' copies are of it; run stays the loop's
	s.e.waitMu.Lock()
	chs := s.waiters[run.ID]
	delete(s.waiters, run.ID)
	s.recent.add(&final)
	s.e.waitMu.Unlock()
	s.e.live.end(run.ID, run.Hook)
	for _, ch := range chs {
		cp := *run
		ch <- &cp
	}
}

func (s *state) statuses() []HookStatus {
	// Sorted as names, then written in place: sorting the statuses
	// themselves moved 10,000 structs of 200 bytes about.
	type named struct {
		name string
		ent  *entry
	}
	ents := make([]named, 0, len(s.hooks))
	for name, ent := range s.hooks {
		ents = append(ents, named{name, ent})
	}
	slices.SortFunc(ents, func(a, b named) int { return strings.Compare(a.name, b.name) })
	broken := s.brokenFiles()
	byFile := make(map[string]*BrokenFile, len(broken))
	for i := range broken {
		byFile[broken[i].File] = &broken[i]
	}
	out := make([]HookStatus, len(ents), len(ents)+len(broken))
	spend := s.spendReport(s.cfg.Clock.Now())
	for i, e := range ents {
		ent, h := e.ent, e.ent.hook
		st := &out[i]
		*st = HookStatus{
			Name: h.Name, Trigger: h.Trigger.String(), Enabled: h.Enabled, Paused: ent.paused,
			NextDue: ent.due, LastRunID: ent.lastRunID, LastStatus: ent.lastStatus, LastStart: ent.lastStart,
			LastCheckFailed: ent.lastCheck,
			File:            h.Source.File, Version: h.Source.Version, Project: h.Project,
			Sandbox: s.e.SandboxProblem(h),
			Broken:  byFile[h.Source.File],
		}
		if ent.active != nil {
			st.InFlight = ent.active.run.ID
		}
		if w, ok := spend.Hooks[h.Name]; ok {
			st.Budget = &w
		}
		if ent.queued != nil {
			st.Queued++
		}
		if ent.pending != nil {
			st.Queued++
		}
	}
	// A broken file whose hook does not run is listed on its own.
	n := len(out)
	for i := range broken {
		if b := &broken[i]; b.Previous == "" {
			out = append(out, HookStatus{Name: b.Hook, File: b.File, Broken: b})
		}
	}
	if len(out) > n {
		slices.SortStableFunc(out, func(a, b HookStatus) int {
			return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.File, b.File))
		})
	}
	return out
}

func (s *state) summary() Summary {
	var sum Summary
	for _, ent := range s.hooks {
		if ent.active != nil {
			sum.InFlight = append(sum.InFlight, ent.active.run.ID)
		}
	}
	for _, ent := range s.retired {
		if ent.active != nil {
			sum.InFlight = append(sum.InFlight, ent.active.run.ID)
		}
	}
	for _, q := range s.queue {
		sum.Queued = append(sum.Queued, q.run.ID)
	}
	sort.Strings(sum.InFlight)
	sum.Retries = s.retryInfos()
	sum.Spend = s.spendReport(s.cfg.Clock.Now())
	if st, ok := s.e.wr.stalled(); ok {
		sum.Store = &st
	}
	sum.Broken = s.brokenFiles()
	return sum
}

// dueHeap orders periodic hooks by their next fire time.
type dueHeap []*entry

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	if h[i].due.Equal(h[j].due) {
		return h[i].hook.Name < h[j].hook.Name
	}
	return h[i].due.Before(h[j].due)
}
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}
func (h *dueHeap) Push(x any) {
	ent := x.(*entry)
	ent.heapIdx = len(*h)
	*h = append(*h, ent)
}
func (h *dueHeap) Pop() any {
	old := *h
	ent := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	ent.heapIdx = -1
	return ent
}
