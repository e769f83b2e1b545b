package engine

// A run's goroutine tells the loop of the run's progress by messages: the
// run started, each step started and finished, the run ended. Each
// message wakes the loop (a goroutine handoff: futex, scheduler), so the
// events of a run are held in its outbox while the goroutine only does
// its own work, and go to the loop together in its next message: the
// run's start with its first step's, a step's end with the next step's
// start, the last step's end with the run's end (execute). The outbox is
// sent before anything that may wait or act outside the run's goroutine
// (a step, the model, a lifecycle handler): an event is never held while
// the run waits, and every event reaches the loop in the order it was
// raised, before the run's end.

// outbox is the events a run's goroutine holds for its next message to
// the loop. Only that goroutine uses it.
type outbox struct {
	evs []*Event
}

// hold stamps ev and keeps it for the next message.
func (e *Engine) hold(o *outbox, ev *Event) {
	ev.Time = e.cfg.Clock.Now()
	o.evs = append(o.evs, ev)
}

// take returns the events held, in order, and empties o.
func (o *outbox) take() []*Event {
	evs := o.evs
	o.evs = nil
	return evs
}

// flush sends what o holds to the loop, in one message. A nil outbox
// (a preview) holds nothing.
func (e *Engine) flush(o *outbox) {
	if o == nil || len(o.evs) == 0 {
		return
	}
	evs := o.take()
	e.send(func(s *state) { s.events = append(s.events, evs...) })
}
