package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/api/client"
	"github.com/hookd/hookd/engine"
)

// liveLines turns the chunks of live output into whole lines, one
// partial line kept per run, step and stream.
type liveLines struct {
	partial map[liveKey]string
}

type liveKey struct{ run, hook, step, stream string }

// maxLivePartial bounds a line kept waiting for its end: longer, it is
// printed as it is.
const maxLivePartial = 4 << 10

// add takes a chunk and calls line with each line it completes (without
// its newline). A run's end prints what was left of its lines, then line
// is called with the end chunk and the text "".
func (l *liveLines) add(c engine.LiveChunk, line func(c engine.LiveChunk, text string)) {
	if l.partial == nil {
		l.partial = map[liveKey]string{}
	}
	if c.End {
		l.flush(c.RunID, line)
		line(c, "")
		return
	}
	k := liveKey{c.RunID, c.Hook, c.Step, c.Stream}
	s := l.partial[k] + c.Text
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			break
		}
		line(c, strings.TrimSuffix(s[:i], "\r"))
		s = s[i+1:]
	}
	if len(s) > maxLivePartial {
		line(c, s)
		s = ""
	}
	if s == "" {
		delete(l.partial, k)
	} else {
		l.partial[k] = s
	}
}

// flush prints the partial lines of run ("": of every run).
func (l *liveLines) flush(run string, line func(c engine.LiveChunk, text string)) {
	for k, s := range l.partial {
		if run == "" || k.run == run {
			line(engine.LiveChunk{RunID: k.run, Hook: k.hook, Step: k.step, Stream: k.stream}, s)
			delete(l.partial, k)
		}
	}
}

// droppedText says that a follower lost chunks of a run's live output.
func droppedText(n int64) string {
	return fmt.Sprintf("%d %s of live output not shown: read too slowly (the run's record has the output)", n, plural(int(n), "chunk", "chunks"))
}

// followOutput follows the daemon's live output of hook's runs ("": of
// every run) and calls f with each chunk until ctx ends or the stream
// does. It returns once the stream is open, so that no output of a run
// fired after it is missed; done is closed when it stops.
func followOutput(ctx context.Context, httpc *http.Client, base, token, hook string, f func(engine.LiveChunk)) (done <-chan error, err error) {
	u := base + "/v1/output"
	if hook != "" {
		u += "?hook=" + url.QueryEscape(hook)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("open the live output: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("open the live output: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("open the live output: %s", resp.Status)
	}
	ch := make(chan error, 1)
	go func() {
		defer resp.Body.Close()
		ch <- client.ScanSSE(resp.Body, nil, func(_, data string) error {
			var c api.OutputChunk
			if json.Unmarshal([]byte(data), &c) == nil {
				f(c)
			}
			return nil
		})
	}()
	return ch, nil
}

// subscribeOutput feeds the live output of hook's runs on eng (no
// daemon: fire runs the hook in this process) to f, off the step's
// goroutine. The returned function stops it.
func subscribeOutput(eng *engine.Engine, hook string, f func(engine.LiveChunk)) func() {
	sub := eng.SubscribeOutput(engine.LiveFilter{Hook: hook}, 0)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-sub.Ready():
				for _, c := range sub.Take() {
					f(c)
				}
			case <-stop:
				for _, c := range sub.Take() {
					f(c)
				}
				return
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		sub.Close()
	}
}
