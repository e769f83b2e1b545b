package engine

import (
	"sync"
	"sync/atomic"

	"github.com/hookd/hookd/redact"
)

// Live output is what a running step's processes write, redacted, handed
// to whoever follows the run (hookd fire --wait, hookd watch, the
// dashboard's run page) as it is written. It is ephemeral: never stored,
// never in the event log; a subscriber that joins late sees only what is
// written after, and one that reads too slowly loses chunks, which are
// counted and reported when the run ends. A step never waits for a
// subscriber.

// LiveChunk is one piece of live output, or the end of a run's.
type LiveChunk struct {
	RunID  string `json:"run_id"`
	Hook   string `json:"hook"`
	Step   string `json:"step,omitempty"`   // the step's label (StepDef.Label)
	Stream string `json:"stream,omitempty"` // "stdout" or "stderr"
	Text   string `json:"text,omitempty"`   // redacted, as the step's process wrote it
	// End marks the run's end: no more output of it follows. Dropped is
	// then how many of the run's chunks this subscriber lost because it
	// read too slowly.
	End     bool  `json:"end,omitempty"`
	Dropped int64 `json:"dropped,omitempty"`
}

// LiveFilter selects the live output a subscriber gets: one run's, one
// hook's, or (both empty) every run's.
type LiveFilter struct {
	RunID string
	Hook  string
}

func (f LiveFilter) match(runID, hook string) bool {
	return (f.RunID == "" || f.RunID == runID) && (f.Hook == "" || f.Hook == hook)
}

// DefaultLiveBuffer is how many chunks a subscriber may have unread
// before further chunks are dropped, when SubscribeOutput is given 0.
const DefaultLiveBuffer = 256

// maxLiveEnds bounds the run ends a subscriber may have unread (an
// all-runs subscriber that stopped reading): past it, ends are dropped
// too.
const maxLiveEnds = 1024

// LiveSub is one subscription to live output (Engine.SubscribeOutput).
// Read it with Ready and Take; Close it when done.
type LiveSub struct {
	hub    *liveHub
	filter LiveFilter
	max    int
	ready  chan struct{}

	mu      sync.Mutex
	queue   []LiveChunk
	ends    int
	dropped map[string]int64 // per run, until its end is queued
	total   int64
	closed  bool
}

// Ready returns a channel that has a value when chunks wait to be taken.
func (s *LiveSub) Ready() <-chan struct{} { return s.ready }

// Take returns the chunks that wait, oldest first, and forgets them.
func (s *LiveSub) Take() []LiveChunk {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue, s.ends = nil, 0
	return q
}

// Dropped returns how many chunks the subscription lost in all.
func (s *LiveSub) Dropped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// DroppedOf returns how many of run's chunks the subscription lost.
func (s *LiveSub) DroppedOf(runID string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped[runID]
}

// Close ends the subscription; it is safe twice.
func (s *LiveSub) Close() {
	s.hub.remove(s)
	s.mu.Lock()
	s.closed, s.queue = true, nil
	s.mu.Unlock()
}

func (s *LiveSub) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// put queues c, or counts it dropped when the queue is full.
func (s *LiveSub) put(c LiveChunk) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if len(s.queue)-s.ends >= s.max {
		s.dropped[c.RunID]++
		s.total++
		s.mu.Unlock()
		return
	}
	s.queue = append(s.queue, c)
	s.mu.Unlock()
	s.signal()
}

// end queues the end of a run, with what the subscriber lost of it.
func (s *LiveSub) end(runID, hook string) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	n := s.dropped[runID]
	delete(s.dropped, runID)
	if s.ends >= maxLiveEnds {
		s.mu.Unlock()
		return
	}
	s.queue = append(s.queue, LiveChunk{RunID: runID, Hook: hook, End: true, Dropped: n})
	s.ends++
	s.mu.Unlock()
	s.signal()
}

// liveHub hands live output to its subscribers.
type liveHub struct {
	n    atomic.Int32 // subscribers: publishing costs nothing without one
	mu   sync.Mutex
	subs map[*LiveSub]struct{}
}

func (h *liveHub) add(s *LiveSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[*LiveSub]struct{}{}
	}
	h.subs[s] = struct{}{}
	h.n.Store(int32(len(h.subs)))
}

func (h *liveHub) remove(s *LiveSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
	h.n.Store(int32(len(h.subs)))
}

// publish hands a chunk to every subscriber it matches; it never waits
// for one.
func (h *liveHub) publish(runID, hook, step, stream string, p []byte) {
	if h.n.Load() == 0 || len(p) == 0 {
		return
	}
	c := LiveChunk{RunID: runID, Hook: hook, Step: step, Stream: stream, Text: string(p)}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.filter.match(runID, hook) {
			s.put(c)
		}
	}
}

// end tells the subscribers that follow run that it is over.
func (h *liveHub) end(runID, hook string) {
	if h.n.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.filter.match(runID, hook) {
			s.end(runID, hook)
		}
	}
}

// SubscribeOutput follows the live output of the runs f selects, from
// now on; buffer bounds the chunks it may have unread (0:
// DefaultLiveBuffer). Only runs this engine executes are followed.
func (e *Engine) SubscribeOutput(f LiveFilter, buffer int) *LiveSub {
	if buffer <= 0 {
		buffer = DefaultLiveBuffer
	}
	s := &LiveSub{hub: &e.live, filter: f, max: buffer, ready: make(chan struct{}, 1), dropped: map[string]int64{}}
	e.live.add(s)
	return s
}

// stepOutput is the StepEnv.Output of a run's step.
func (e *Engine) stepOutput(run *Run, def *StepDef) func(stream string, p []byte) {
	runID, hook, label := run.ID, run.Hook, def.Label()
	return func(stream string, p []byte) { e.live.publish(runID, hook, label, stream, p) }
}

// handlerOutput is the Payload.Live of a handler labelled label: the
// live output of the run p is about while this engine executes it,
// under "handler LABEL (POINT)", and the hook's redactor.
func (e *Engine) handlerOutput(p *Payload, label string) (func(stream string, b []byte), *redact.Redactor) {
	st := e.st.Load()
	if st == nil || p.Hook == nil || !st.isLive(p.RunID) {
		return nil, nil
	}
	runID, hook, name := p.RunID, p.Hook.Name, "handler "+label+" ("+string(p.Point)+")"
	return func(stream string, b []byte) { e.live.publish(runID, hook, name, stream, b) }, e.redactor(p.Hook)
}
