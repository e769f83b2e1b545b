package server

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/dashboard"
	"github.com/hookd/hookd/engine"
)

// output serves GET /v1/output (every run's live output, or one hook's
// with hook=NAME) and GET /v1/runs/{id}/output (one run's, ending with
// the run): Server-Sent Events of what running steps write, redacted and
// capped as their record is. An "output" event is a chunk
// (api.OutputChunk), an "end" event a run's end, with how many chunks of
// it this client lost by reading too slowly. Nothing of it is stored: a
// client sees what is written while it is connected.
//
// sess is the dashboard session of a browser's stream (nil with the
// bearer token): the stream ends when the session does, as GET
// /v1/stream's.
func (a *Server) output(w http.ResponseWriter, r *http.Request, sess *dashboard.StreamSession) {
	ctx := r.Context()
	var ended <-chan struct{} // nil: never
	if sess != nil {
		ended = sess.Ended()
	}
	f := engine.LiveFilter{RunID: r.PathValue("id"), Hook: r.URL.Query().Get("hook")}
	if f.RunID != "" {
		if _, err := a.st.GetRun(ctx, f.RunID); err != nil {
			writeErr(w, err)
			return
		}
	}
	sub := a.eng.SubscribeOutput(f, 0)
	defer sub.Close()
	// One run's stream ends with the run: Wait returns once its end is
	// queued, or at once when it was over before the subscription.
	var over chan struct{}
	if f.RunID != "" {
		over = make(chan struct{})
		go func() {
			defer close(over)
			_, _ = a.eng.Wait(ctx, f.RunID)
		}()
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": hookd live output\n\n")
	if err := rc.Flush(); err != nil {
		return
	}
	// send writes the chunks that wait and says whether the run the
	// stream follows has ended.
	send := func() (ended bool) {
		cs := sub.Take()
		for _, c := range cs {
			b, err := json.Marshal(api.OutputChunk(c))
			if err != nil {
				continue
			}
			typ := "output"
			if c.End {
				typ = "end"
				ended = ended || c.RunID == f.RunID && f.RunID != ""
			}
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		}
		if len(cs) > 0 {
			_ = rc.Flush()
		}
		return ended
	}
	tick := a.clock.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-sub.Ready():
			if send() {
				return
			}
		case <-over:
			if !send() && ctx.Err() == nil {
				// Over before the subscription: nothing was lost.
				b, _ := json.Marshal(api.OutputChunk{RunID: f.RunID, End: true, Dropped: sub.DroppedOf(f.RunID)})
				fmt.Fprintf(w, "event: end\ndata: %s\n\n", b)
				_ = rc.Flush()
			}
			return
		case <-ended:
			return
		case <-tick.C():
			if sess != nil && !sess.Live() {
				return // expired
			}
			fmt.Fprint(w, ": ping\n\n")
			if err := rc.Flush(); err != nil {
				return
			}
		case <-ctx.Done():
			return
		case <-a.closing:
			return
		}
	}
}
