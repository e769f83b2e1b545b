package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// The loop decides, a writer persists. The records the scheduling loop
// makes — a trigger a gate refused, a run that waits for a slot, a merge
// into a pending run, a waiting run's end, a retry that fired — are
// written by one writer goroutine, in the order the loop made them, each
// within Config.StoreTimeout. While the store answers, the loop waits for
// each of its records (at most storeWait), so a record is stored when the
// loop's answer is given, as before. Once a write fails or does not
// return in time, the store is stalled (Engine.StoreStalled): the loop
// answers on without waiting, its records wait in order and are written
// once the store takes writes again, and no run starts — a run whose
// start cannot be recorded could run twice after a crash:
//
//   - a schedule slot that comes, or whose start claim could not be
//     written, is not fired: the writer remembers the hook's first such
//     slot and, once a write succeeds, stores one missed record for the
//     gap with the store's error (slotGap);
//   - any other trigger is refused with the store_stalled gate, its
//     record waiting with the others; a stored rerun or retry is kept
//     rather than refused, and started once the stall ends
//     (triggerStored).

// storeWait bounds how long the loop waits for one of its records while
// the store answers; past it, the record is written later. A store that
// answers each record just within it still holds the loop for as many
// as it makes in a row: a slot that passes meanwhile is recorded missed
// with that wait as its cause (loopGap.why).
const storeWait = time.Second

// Bounds of the wait between attempts while the store is stalled. The
// first is 1.5 s so that a write that failed at a slot's time is tried
// again between the slots of a schedule in whole seconds, not at the
// instant one fires: a slot that comes while a gap's missed record is
// being written begins a record of its own.
const (
	stallRetryMin = 1500 * time.Millisecond
	stallRetryMax = 30 * time.Second
)

// maxWaitingWrites bounds the records waiting for a stalled store; past
// it a record is not kept (logged, and counted in StoreStall.Lost).
const maxWaitingWrites = 100_000

// StoreStall says the store has not taken hookd's writes since Since:
// a write failed, or did not return within Config.StoreTimeout. Cause is
// the store's error ("database is locked", "no space left on device").
// While it lasts no run starts (a slot's fate is recorded as missed once
// the store answers again, others are refused store_stalled) and records
// wait to be written.
type StoreStall struct {
	Since   time.Time `json:"since"`
	Cause   string    `json:"cause"`
	Waiting int       `json:"waiting"`        // records waiting to be written
	Slots   int       `json:"slots"`          // schedule slots not fired, to be recorded missed
	Lost    int       `json:"lost,omitempty"` // records not kept: more than the writer holds waited
}

// String is "store stalled since 2026-11-29 07:30:05 UTC (insert run …:
// database is locked)".
func (s StoreStall) String() string {
	return fmt.Sprintf("store stalled since %s (%s)", s.Since.UTC().Format("2006-01-02 15:04:05 MST"), s.Cause)
}

// StoreStalled reports whether the store is stalled, and since when and
// why. It does not ask the loop: it answers while the loop is busy too.
func (e *Engine) StoreStalled() (StoreStall, bool) { return e.wr.stalled() }

// write is one store write the loop hands to the writer.
type write struct {
	what string // what it stores, for the log: "run record"
	hook string
	run  string
	do   func(ctx context.Context) error
	done chan struct{} // closed once written, or given up
	err  error         // set before done is closed
	sync bool          // the loop waits for it (the store answered when it was made)
}

// slotGap is the schedule slots of one hook that were not fired because
// their start could not be recorded, from first to last.
type slotGap struct {
	id          string // the record's id: that of the first slot's run, when it had one
	hook        string
	project     string
	first, last time.Time
	n           int
	cause       string
	// fence is how its record is fenced (state.fence): by the lease of
	// the scheduler that missed the slots, when a cluster's scheduler
	// did.
	fence func(context.Context) context.Context
}

// storeWriter is the engine's writer goroutine and what it holds.
type storeWriter struct {
	e *Engine

	mu      sync.Mutex
	queue   []*write
	gaps    map[string]*slotGap
	order   []string // hooks with a gap, in the order their gaps began
	stall   *StoreStall
	healed  bool // a write elsewhere succeeded since the head write last failed
	closing bool
	wake    chan struct{} // new work (cap 1)
	quit    chan struct{} // closed by close
	heal    chan struct{} // a write elsewhere succeeded (cap 1)
	exited  chan struct{}
	started bool
	// answers is closed while the store is not stalled; a stall replaces
	// it with an open one, closed when the stall ends (whenAnswering).
	answers chan struct{}
}

func (e *Engine) newWriter() *storeWriter {
	return &storeWriter{e: e, gaps: map[string]*slotGap{}, wake: make(chan struct{}, 1),
		heal: make(chan struct{}, 1), quit: make(chan struct{}), exited: make(chan struct{}), answers: closedChan()}
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// whenAnswering waits until the store is not stalled, and reports false
// instead when the writer is closed first.
func (w *storeWriter) whenAnswering() bool {
	w.mu.Lock()
	c := w.answers
	w.mu.Unlock()
	select {
	case <-c:
		return true
	case <-w.quit:
		return false
	}
}

// answering returns a channel closed once the store is not stalled:
// closed already when it is not.
func (w *storeWriter) answering() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.answers
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// start starts the writer goroutine.
func (w *storeWriter) start() {
	w.mu.Lock()
	w.started = true
	w.mu.Unlock()
	go w.run()
}

// close writes what waits, unless the store is stalled (then it is given
// up, logged), and ends the writer. Safe twice; a no-op when not started.
func (w *storeWriter) close() {
	w.mu.Lock()
	started, was := w.started, w.closing
	w.closing = true
	w.mu.Unlock()
	if !was {
		close(w.quit)
	}
	if started {
		<-w.exited
	}
}

// isClosing reports whether the engine is stopping the writer.
func (w *storeWriter) isClosing() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closing
}

// stalled returns the stall, if the store is stalled.
func (w *storeWriter) stalled() (StoreStall, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stall == nil {
		return StoreStall{}, false
	}
	st := *w.stall
	st.Waiting = len(w.queue)
	for _, g := range w.gaps {
		st.Slots += g.n
	}
	return st, true
}

// submit hands the writer a write of the loop. The write is sync (the
// caller may await it) when the store is not stalled and nothing waits
// before it.
func (w *storeWriter) submit(what, hook, run string, do func(ctx context.Context) error) *write {
	wr := &write{what: what, hook: hook, run: run, do: do, done: make(chan struct{})}
	w.mu.Lock()
	if len(w.queue) >= maxWaitingWrites {
		if w.stall != nil {
			w.stall.Lost++
		}
		w.mu.Unlock()
		wr.err = errors.New("engine: too many records wait for the stalled store")
		close(wr.done)
		w.e.log.Error("store "+what+": not kept, too many records wait for the stalled store", "hook", hook, "run", run)
		return wr
	}
	wr.sync = w.stall == nil && len(w.queue) == 0
	w.queue = append(w.queue, wr)
	w.mu.Unlock()
	signal(w.wake)
	return wr
}

// await waits for a sync write, at most storeWait, and reports whether
// it was written.
func (w *storeWriter) await(wr *write) bool {
	if !wr.sync {
		return false
	}
	t := w.e.cfg.Clock.NewTimer(storeWait)
	defer t.Stop()
	select {
	case <-wr.done:
		return wr.err == nil
	case <-t.C():
		return false
	}
}

// last returns the latest write waiting (nil: none): a run the loop
// starts now records its start only after it (and so after every write
// before it), so that its start never precedes its queued record.
func (w *storeWriter) last() *write {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		return nil
	}
	return w.queue[len(w.queue)-1]
}

// lastOf returns the latest write waiting of run id (nil: none): a
// cluster's scheduler releases a run only after its own records
// (clusterrun.go).
func (w *storeWriter) lastOf(id string) *write {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.queue) - 1; i >= 0; i-- {
		if w.queue[i].run == id {
			return w.queue[i]
		}
	}
	return nil
}

// awaitWritten waits until wr is written or given up, at most
// StoreTimeout, and reports whether it was written: false when it still
// waits in the writer, to be written later, or was given up. The writer
// writes in order: wr written, every write before it was written or
// given up.
func (w *storeWriter) awaitWritten(wr *write) bool {
	t := w.e.cfg.Clock.NewTimer(w.e.cfg.StoreTimeout)
	defer t.Stop()
	select {
	case <-wr.done:
		return wr.err == nil
	case <-t.C():
		return false
	}
}

// unwritten waits until each of ws is written or given up, at most
// StoreTimeout in all, and returns the first that was not written, with
// why: the store refused it (its error), or it still waits in the
// writer, to be written later. It returns nil when every one was
// written.
func (w *storeWriter) unwritten(ws []*write) (*write, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	t := w.e.cfg.Clock.NewTimer(w.e.cfg.StoreTimeout)
	defer t.Stop()
	for _, wr := range ws {
		select {
		case <-wr.done:
			if wr.err != nil {
				return wr, wr.err
			}
		case <-t.C():
			return wr, fmt.Errorf("not stored within %s", w.e.cfg.StoreTimeout)
		}
	}
	return nil, nil
}

// missSlot adds slot of h to its hook's gap: it was not fired because its
// start could not be recorded. id is the record's id when the gap begins
// with it ("" for a new one); cause is the store's error ("": that of the
// stall); fence fences the gap's record when it begins with this slot.
func (w *storeWriter) missSlot(h *Hook, slot time.Time, id, cause string, fence func(context.Context) context.Context) {
	w.mu.Lock()
	g := w.gaps[h.Name]
	if g == nil {
		if id == "" {
			id = NewID()
		}
		if cause == "" && w.stall != nil {
			cause = w.stall.Cause
		}
		g = &slotGap{id: id, hook: h.Name, project: h.Project, first: slot, last: slot, cause: cause, fence: fence}
		w.gaps[h.Name] = g
		w.order = append(w.order, h.Name)
	}
	if slot.Before(g.first) {
		g.first = slot
	}
	if slot.After(g.last) {
		g.last = slot
	}
	g.n++
	w.mu.Unlock()
	signal(w.wake)
}

// failed records that a write that began at began failed with err.
func (w *storeWriter) failed(err error, began time.Time) {
	cause := stallCause(err, w.e.cfg.StoreTimeout)
	w.mu.Lock()
	first := w.stall == nil
	if first {
		w.stall = &StoreStall{Since: began, Cause: cause}
		w.answers = make(chan struct{})
	} else {
		w.stall.Cause = cause
	}
	w.mu.Unlock()
	if first {
		w.e.log.Error("store stalled: records wait and no run starts until it takes writes again", "cause", cause)
	}
}

// ok records that a write succeeded: the store is not stalled.
func (w *storeWriter) ok() {
	w.mu.Lock()
	was := w.stall
	w.stall = nil
	if was != nil {
		w.healed = true
		close(w.answers)
	}
	w.mu.Unlock()
	if was != nil {
		w.e.log.Info("store takes writes again", "stalled_since", was.Since, "cause", was.Cause)
		signal(w.heal)
		signal(w.wake)
	}
}

// persist makes a write of a run's goroutine that must not be lost (its
// final record, its pending retry, its spend) within StoreTimeout. When
// the store does not take it, the store is stalled and the write is
// handed to the writer, which makes it once the store answers: it is
// delayed, not lost. It returns the store's error only when the store
// refused the write outright (permanent). do must own what it writes.
func (e *Engine) persist(ctx context.Context, what, hook, run string, do func(context.Context) error) error {
	began := e.cfg.Clock.Now()
	sctx, cancel := e.storeCtx(ctx)
	err := do(sctx)
	cancel()
	switch {
	case err == nil:
		e.wr.ok()
		return nil
	case permanent(err):
		return err
	}
	e.wr.failed(err, began)
	e.log.Error("store "+what+": written once the store takes writes again", "hook", hook, "run", run, "err", err)
	e.wr.submit(what, hook, run, do)
	return nil
}

// stallCause is the text of a stall's cause: the store's error, or that
// it did not answer in time.
func stallCause(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s: %v", timeout, err)
	}
	return err.Error()
}

// stalledError is why a run did not start: the store was stalled with
// records before its start waiting. Its text is the stall's cause.
type stalledError struct{ st StoreStall }

func (e *stalledError) Error() string { return e.st.Cause }

// storeCtx is the context of one store write the engine makes for the
// loop: parent's values, without its cancellation, within StoreTimeout.
func (e *Engine) storeCtx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(parent), e.cfg.StoreTimeout)
}

// permanent reports whether a write's error is an answer of the store
// rather than a stall: writing it again would fail alike.
func permanent(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrSlotTaken) || errors.Is(err, ErrDuplicateEvent)
}

// run is the writer goroutine: it writes the queue in order, then the
// gaps' missed records, waiting between attempts while the store is
// stalled.
func (w *storeWriter) run() {
	defer close(w.exited)
	var backoff time.Duration
	for {
		w.mu.Lock()
		var (
			wr  *write
			gap *slotGap
		)
		if len(w.queue) > 0 {
			wr = w.queue[0]
		}
		closing := w.closing
		w.mu.Unlock()
		if wr == nil {
			gap = w.takeGap()
		}
		if wr == nil && gap == nil {
			if closing {
				return
			}
			select {
			case <-w.wake:
			case <-w.quit:
			}
			continue
		}
		began := w.e.cfg.Clock.Now()
		var err error
		if wr != nil {
			err = w.attempt(wr.do)
		} else {
			err = w.writeGap(gap)
		}
		switch {
		case err == nil:
			backoff = 0
			w.ok()
			w.pop(wr, nil)
			continue
		case wr != nil && errors.Is(err, ErrLeaseLost):
			// A scheduler's fenced write (Cluster.Fence) refused because
			// this node no longer holds the lease: the next scheduler owns
			// what it was to change, writing it again cannot succeed,
			// and the store is not stalled. The node stops scheduling,
			// as a refused release stops it, rather than answer from a
			// state the database no longer has.
			w.e.log.Error("store "+wr.what, "hook", wr.hook, "run", wr.run, "err", err)
			w.pop(wr, err)
			w.e.fail(err)
			continue
		case wr != nil && (permanent(err) || w.poisoned()):
			// The store answered no, or takes other writes: this one
			// would fail forever and hold up those after it.
			w.e.log.Error("store "+wr.what, "hook", wr.hook, "run", wr.run, "err", err)
			w.pop(wr, err)
			continue
		}
		w.failed(err, began)
		if closing {
			w.giveUp(err)
			return
		}
		backoff = min(max(2*backoff, stallRetryMin), stallRetryMax)
		t := w.e.cfg.Clock.NewTimer(backoff)
		select {
		case <-t.C():
		case <-w.heal:
			backoff = 0
		case <-w.quit:
		}
		t.Stop()
	}
}

// attempt runs one write within StoreTimeout.
func (w *storeWriter) attempt(do func(ctx context.Context) error) error {
	ctx, cancel := w.e.storeCtx(context.Background())
	defer cancel()
	return do(ctx)
}

// poisoned reports whether a write elsewhere succeeded since the head
// write last failed (the store takes writes, only not this one), and
// clears the mark.
func (w *storeWriter) poisoned() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.healed
	w.healed = false
	return h && w.stall == nil
}

// pop ends the head write, if wr is one, with err.
func (w *storeWriter) pop(wr *write, err error) {
	w.mu.Lock()
	if wr != nil {
		w.queue = w.queue[1:]
		wr.err = err
	}
	w.healed = false
	w.mu.Unlock()
	if wr != nil {
		close(wr.done)
	}
}

// takeGap takes the oldest gap away for writing (nil: none): slots missed
// meanwhile begin a new one; putBack returns it when its write failed.
func (w *storeWriter) takeGap() *slotGap {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.order) == 0 {
		return nil
	}
	g := w.gaps[w.order[0]]
	delete(w.gaps, g.hook)
	w.order = w.order[1:]
	return g
}

// putBack returns a gap whose record could not be written, merged with
// the slots its hook missed meanwhile, first in line.
func (w *storeWriter) putBack(g *slotGap) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cur := w.gaps[g.hook]; cur != nil {
		g.first, g.last = minTime(g.first, cur.first), maxTime(g.last, cur.last)
		g.n += cur.n
		w.order = slices.DeleteFunc(w.order, func(h string) bool { return h == g.hook })
	}
	w.gaps[g.hook] = g
	w.order = slices.Insert(w.order, 0, g.hook)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// writeGap stores the missed record of g, taken from the gaps. The loop
// is told, to publish the record as every record is.
func (w *storeWriter) writeGap(g *slotGap) error {
	now := w.e.cfg.Clock.Now()
	run := &Run{
		ID: g.id, Hook: g.hook, Project: g.project, Trigger: "schedule", Status: StatusSkipped, Gate: GateMissed,
		Slot: g.last, QueuedAt: now, FinishedAt: now,
		Reason: fmt.Sprintf("missed: %d slot(s) from %s to %s not fired: the store could not record their start (%s)",
			g.n, g.first.Format(time.RFC3339), g.last.Format(time.RFC3339), g.cause),
	}
	err := w.attempt(func(ctx context.Context) error { return w.e.cfg.Store.InsertRun(g.fence(ctx), run) })
	switch {
	case errors.Is(err, ErrLeaseLost):
		// Missed by a scheduler that no longer holds the lease: the
		// next one decides those slots, and this node stops
		// scheduling, as it does for its other refused writes.
		w.e.log.Error("store missed record", "hook", g.hook, "err", err)
		w.e.fail(err)
		return nil
	case err != nil && !permanent(err):
		w.putBack(g)
		return err
	case err != nil:
		w.e.log.Error("store missed record", "hook", g.hook, "err", err)
		return nil
	}
	w.e.log.Warn("recorded the slots not fired while the store was stalled", "hook", g.hook, "slots", g.n, "cause", g.cause)
	ev := RunEvent(run)
	w.e.send(func(s *state) { s.events = append(s.events, ev) })
	return nil
}

// giveUp drops what waits for a stalled store as the engine stops.
func (w *storeWriter) giveUp(err error) {
	w.mu.Lock()
	queue, gaps := w.queue, w.gaps
	w.queue, w.gaps, w.order = nil, map[string]*slotGap{}, nil
	w.mu.Unlock()
	if len(queue) == 0 && len(gaps) == 0 {
		return
	}
	var hooks []string
	for name := range gaps {
		hooks = append(hooks, name)
	}
	w.e.log.Error("hookd stops with the store stalled: records not written", "records", len(queue),
		"hooks_with_missed_slots", strings.Join(hooks, ","), "err", err)
	for _, wr := range queue {
		wr.err = err
		close(wr.done)
	}
}
