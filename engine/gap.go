package engine

import (
	"fmt"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/internal/human"
)

// The loop fires a slot when it looks at the clock and finds it due: at
// the top of each pass (state.loop), after sleeping until the earliest
// due time or a message. Slots that pass between two looks are missed
// (fireDue fires the latest once), and their record says why the loop
// did not look in time (loopGap.why): the wall clock moved on without
// the monotonic clock (a suspend, a clock step), the loop waited for the
// store (the writes it waits for, storeWriter.await, and its own reads),
// or it was held up otherwise.

// lookout is what the loop knows of the stretch since it last looked at
// the clock.
type lookout struct {
	wall  time.Time     // the wall clock at the look
	mono  clock.Mono    // the monotonic clock at the look
	slept time.Duration // since: the loop slept, waiting for a message, its timer or its alarm
	store time.Duration // since: the loop waited for the store
}

// loopGap is the stretch between two looks of the loop at the clock.
type loopGap struct {
	wall  time.Duration // on the wall clock
	mono  time.Duration // on the monotonic clock: while the process ran
	slept time.Duration // of mono, the loop slept
	store time.Duration // of mono, the loop waited for the store
}

// look begins a new stretch at now and returns the one it ends.
func (s *state) look(now time.Time) loopGap {
	mono := s.cfg.Clock.Mono()
	l := &s.lookout
	g := loopGap{wall: now.Sub(l.wall), mono: mono.Sub(l.mono), slept: l.slept, store: l.store}
	*l = lookout{wall: now, mono: mono}
	return g
}

// slept counts the time since began as the loop's sleep.
func (s *state) slept(began clock.Mono) { s.lookout.slept += clock.Since(s.cfg.Clock, began) }

// onStore runs f, which waits for the store (the loop's reads, or its
// writes), and counts all the time f took as the loop's wait for the
// store (once: f may call onStore itself).
func (s *state) onStore(f func()) {
	began, before := s.cfg.Clock.Mono(), s.lookout.store
	f()
	s.lookout.store = before + clock.Since(s.cfg.Clock, began)
}

// await waits for the loop's write wr (storeWriter.await), counted as
// the loop's wait for the store.
func (s *state) await(wr *write) (ok bool) {
	s.onStore(func() { ok = s.e.wr.await(wr) })
	return ok
}

// why says why slots passed in g without the loop firing them, for their
// missed record ("… passed while <why>"): what took the most of it.
//
//   - The wall clock moved on further than the monotonic clock: hookd did
//     not run (the machine was suspended: the monotonic clock stops
//     while it sleeps) or the wall clock was stepped ahead.
//   - The loop waited for the store: the writes it waits for while the
//     store answers (at most storeWait each, but one after another), or
//     its own reads.
//   - Neither: the loop was held up otherwise (busy, or starved of CPU).
func (g loopGap) why() string {
	away := max(g.wall-g.mono, 0)
	busy := max(g.mono-g.slept-g.store, 0)
	switch {
	case away > g.store && away > busy:
		return "hookd was suspended or the clock jumped"
	case g.store > 0 && g.store >= busy:
		return fmt.Sprintf("the store was slow or stalled (hookd waited %s for it)", human.Duration(g.store))
	default:
		return fmt.Sprintf("hookd's loop was held up (it looked at the clock again only %s later)", human.Duration(g.wall))
	}
}
