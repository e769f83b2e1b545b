package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/dashboard"
	"github.com/hookd/hookd/engine"
)

// The live stream (GET /v1/stream) is driven by the event log in the
// store, not by the bus: each client keeps the seq of the last event it
// was sent and reads the events after it whenever the store says events
// were written. Engine events are stored in batches after they are
// dispatched, so reading the log is what makes the ids gap-free and
// replay and live one path: a client that reconnects with Last-Event-ID
// reads on from there, whether the events it missed were written before
// or after it came back.

// Feed wakes stream clients when events are stored: the store tells
// it of every event write (engine.StoreObserver, set in settings.go), and
// on a cluster the engine of what other nodes stored (OthersStored).
type Feed struct {
	mu sync.Mutex
	ch chan struct{}
}

func NewFeed() *Feed { return &Feed{ch: make(chan struct{})} }

// changed returns a channel closed at the next write. Take it before
// reading the log, so a write between the read and the wait is not missed.
func (f *Feed) changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ch
}

// Wake tells every waiting client that events were stored.
func (f *Feed) Wake() {
	f.mu.Lock()
	close(f.ch)
	f.ch = make(chan struct{})
	f.mu.Unlock()
}

// eventLog is what the stream and the event list read.
type eventLog interface {
	EventsAfter(ctx context.Context, after int64, limit int) ([]*engine.Event, error)
	LastEventSeq(ctx context.Context) (int64, error)
	ListEvents(ctx context.Context, typ string, limit int) ([]*engine.Event, error)
}

// eventFilter selects events for the stream and the list.
type eventFilter struct {
	types []string // patterns: exact, prefix.* (one segment), prefix.** (the rest); none: all
	hook  string   // only events whose data names this hook
}

func parseFilter(r *http.Request) eventFilter {
	q := r.URL.Query()
	var f eventFilter
	for _, t := range q["type"] {
		for _, p := range strings.Split(t, ",") {
			if p = strings.TrimSpace(p); p != "" {
				f.types = append(f.types, p)
			}
		}
	}
	f.hook = q.Get("hook")
	return f
}

func (f eventFilter) match(ev *engine.Event) bool {
	if f.hook != "" {
		if h, _ := ev.Data["hook"].(string); h != f.hook {
			return false
		}
	}
	if len(f.types) == 0 {
		return true
	}
	for _, p := range f.types {
		if matchType(p, ev.Type) {
			return true
		}
	}
	return false
}

// matchType matches an event type against a pattern of dot-separated
// segments, where * is one segment and a final ** is one or more.
func matchType(pattern, typ string) bool {
	ps, ts := strings.Split(pattern, "."), strings.Split(typ, ".")
	for i, p := range ps {
		if p == "**" && i == len(ps)-1 {
			return len(ts) > i
		}
		if i >= len(ts) || (p != "*" && p != ts[i]) {
			return false
		}
	}
	return len(ps) == len(ts)
}

// streamBatch bounds one read of the log.
const streamBatch = 500

// heartbeat is how often an idle stream sends a comment, so proxies and
// clients see the connection is alive.
var heartbeat = 15 * time.Second

// streamGather is how long a stream client, woken by a write, lets more
// writes gather before it reads the log: a run writes its events a few
// at a time (each step's start and end), and one read for all of them
// costs the daemon a fraction of one read each. It is the most the live
// stream lags behind the log.
const streamGather = 25 * time.Millisecond

// stream serves GET /v1/stream: Server-Sent Events, one per stored event,
// with the event's seq as its id. It starts after the Last-Event-ID
// header's seq, else after the since query parameter, else at the end of
// the log (live events only).
//
// sess is the dashboard session of a browser's stream (nil for one opened
// with the bearer token): the stream ends when the session does, at once
// on logout or a new login of the browser, and on expiry before it sends
// anything more (an idle stream at its next heartbeat). The browser's
// EventSource then comes back without a live session and is refused.
func (a *Server) stream(w http.ResponseWriter, r *http.Request, sess *dashboard.StreamSession) {
	ctx := r.Context()
	var ended <-chan struct{} // nil: never
	if sess != nil {
		ended = sess.Ended()
	}
	// over ends a stream whose session ended, saying so.
	over := func() bool {
		if sess == nil || sess.Live() {
			return false
		}
		fmt.Fprint(w, ": the session ended\n\n")
		http.NewResponseController(w).Flush()
		return true
	}
	var after int64
	from := r.Header.Get("Last-Event-ID")
	if from == "" {
		from = r.URL.Query().Get("since")
	}
	if from != "" {
		n, err := strconv.ParseInt(from, 10, 64)
		if err != nil || n < 0 {
			writeJSON(w, http.StatusBadRequest, api.Error{Error: "Last-Event-ID and since must be an event seq (a number >= 0)"})
			return
		}
		after = n
	} else {
		n, err := a.evlog.LastEventSeq(ctx)
		if err != nil {
			writeErr(w, err)
			return
		}
		after = n
	}
	filter := parseFilter(r)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// The retry hint, and a comment saying where the stream starts.
	fmt.Fprintf(w, "retry: 2000\n: hookd event stream after seq %d\n\n", after)
	if err := rc.Flush(); err != nil {
		return
	}
	tick := a.clock.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		changed := a.feed.changed()
		evs, err := a.evlog.EventsAfter(ctx, after, streamBatch)
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("stream: read events", "err", err)
				fmt.Fprintf(w, ": error reading events: %s\n\n", engine.OneLine(err.Error(), 200))
				rc.Flush()
			}
			return
		}
		if over() {
			return
		}
		for _, ev := range evs {
			after = ev.Seq
			if !filter.match(ev) {
				continue
			}
			b, err := json.Marshal(api.EventOf(ev))
			if err != nil {
				continue
			}
			// JSON has no raw newlines, so the data is one line.
			fmt.Fprintf(w, "id: %d\ndata: %s\n\n", ev.Seq, b)
		}
		if len(evs) > 0 {
			if err := rc.Flush(); err != nil {
				return
			}
		}
		if len(evs) == streamBatch {
			continue
		}
		select {
		case <-changed:
			gather := a.clock.NewTimer(streamGather)
			stop := false
			select {
			case <-gather.C():
			case <-ctx.Done():
				stop = true
			case <-a.closing:
				stop = true
			case <-ended:
				over()
				stop = true
			}
			gather.Stop()
			if stop {
				return
			}
		case <-tick.C():
			if over() {
				return
			}
			// An id-less comment: keeps the connection alive, moves no id.
			fmt.Fprint(w, ": ping\n\n")
			if err := rc.Flush(); err != nil {
				return
			}
		case <-ctx.Done():
			return
		case <-a.closing:
			return
		case <-ended:
			over()
			return
		}
	}
}

// events serves GET /v1/events: stored events as JSON, oldest first after
// a seq (after=N), or the newest (no after), at most limit (default 100,
// at most 1000), filtered by type= and hook=.
func (a *Server) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 100
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			writeJSON(w, http.StatusBadRequest, api.Error{Error: "limit must be an integer from 1 to 1000"})
			return
		}
		limit = n
	}
	filter := parseFilter(r)
	out := []api.Event{}
	if s := q.Get("after"); s != "" {
		after, err := strconv.ParseInt(s, 10, 64)
		if err != nil || after < 0 {
			writeJSON(w, http.StatusBadRequest, api.Error{Error: "after must be an event seq (a number >= 0)"})
			return
		}
		for len(out) < limit {
			evs, err := a.evlog.EventsAfter(r.Context(), after, streamBatch)
			if err != nil {
				writeErr(w, err)
				return
			}
			for _, ev := range evs {
				after = ev.Seq
				if filter.match(ev) && len(out) < limit {
					out = append(out, api.EventOf(ev))
				}
			}
			if len(evs) < streamBatch {
				break
			}
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	typ := ""
	if len(filter.types) == 1 && !strings.Contains(filter.types[0], "*") {
		typ = filter.types[0]
	}
	evs, err := a.evlog.ListEvents(r.Context(), typ, 1000)
	if err != nil {
		writeErr(w, err)
		return
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if filter.match(evs[i]) {
			out = append(out, api.EventOf(evs[i]))
		}
	}
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	writeJSON(w, http.StatusOK, out)
}
