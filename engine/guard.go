package engine

import "time"

// guardState is the loop's bookkeeping for Config.Guard.
type guardState struct {
	next   time.Time // no check before this
	failed bool
}

// guard runs Config.Guard when a Tick has passed since the last check.
// When it fails, the engine stops triggering and the error goes to Failed.
func (s *state) guard(now time.Time) {
	g := &s.guardState
	if s.cfg.Guard == nil || g.failed {
		return
	}
	// A clock moved back by more than a Tick must not postpone the check.
	if wait := g.next.Sub(now); wait > 0 && wait <= s.cfg.Tick {
		return
	}
	g.next = now.Add(s.cfg.Tick)
	err := s.cfg.Guard()
	if err == nil {
		return
	}
	g.failed = true
	s.e.halt()
	s.e.log.Error("hookd must stop: nothing more will be triggered", "err", err)
	s.e.failed <- err // buffered; sent once
}
