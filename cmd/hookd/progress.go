package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/api/client"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/human"
	"golang.org/x/sys/unix"
)

// isTerminal reports whether w is a terminal that can show a live line
// (not TERM=dumb).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), getTermios)
	return err == nil
}

// terminalWidth is the width of the terminal w is, 0 when it is none.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// progressTypes are the events a run's progress is printed from.
const progressTypes = "hook.step.*,hook.llm.round,hook.tool.called,hook.run.*"

// progressPrinter prints the progress of one run as its events arrive:
// a line for each step, model call and tool call as it ends and, on a
// terminal, a live last line with what runs now and for how long.
type progressPrinter struct {
	mu      sync.Mutex
	w       io.Writer
	flush   func()
	live    bool
	runID   string
	early   []earlyEvent // events that came before setRun, for its replay
	start   time.Time    // when the run started, as far as we know
	current string       // what runs now: "step_1 (build) shell", "model call 2"
	since   time.Time
	shown   bool // the live line is on screen
	ended   chan struct{}
	endOnce sync.Once
	stop    chan struct{}
	done    chan struct{}

	// The run's live output (followOutput, subscribeOutput), its lines
	// printed under the progress line after the step's label.
	lines     liveLines
	earlyOut  []engine.LiveChunk // chunks that came before setRun
	following bool               // the live output is followed: close waits for its end
	outEnded  chan struct{}
	outOnce   sync.Once
	closed    bool
}

// newProgressPrinter starts printing run's progress to w; live shows the
// live line (refreshed every 200 ms).
func newProgressPrinter(w io.Writer, flush func(), live bool) *progressPrinter {
	p := &progressPrinter{w: w, flush: flush, live: live, start: time.Now(), since: time.Now(),
		ended: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}), outEnded: make(chan struct{})}
	if !live {
		close(p.done)
		return p
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.mu.Lock()
				p.draw()
				p.mu.Unlock()
			case <-p.stop:
				return
			}
		}
	}()
	return p
}

// earlyEvent is an event held until the printer knows its run.
type earlyEvent struct {
	typ  string
	t    time.Time
	data map[string]any
}

// maxEarly bounds the events held before setRun.
const maxEarly = 1024

// setRun says which run to print; events of others are ignored. Events of
// the run that arrived before setRun (the stream is followed before the
// fire, and a fast step ends before the fire's answer) are printed now.
func (p *progressPrinter) setRun(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runID = id
	early := p.early
	p.early = nil
	for _, ev := range early {
		p.eventLocked(ev.typ, ev.t, ev.data)
	}
	out := p.earlyOut
	p.earlyOut = nil
	for _, c := range out {
		p.outputLocked(c)
	}
}

// follow says the run's live output is followed, so that close waits for
// its end too.
func (p *progressPrinter) follow() {
	p.mu.Lock()
	p.following = true
	p.mu.Unlock()
}

// output takes one chunk of live output.
func (p *progressPrinter) output(c engine.LiveChunk) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if p.runID == "" {
		if len(p.earlyOut) < maxEarly {
			p.earlyOut = append(p.earlyOut, c)
		}
		return
	}
	p.outputLocked(c)
}

// outputLocked prints the lines a chunk of the run's output completes;
// p.mu is held.
func (p *progressPrinter) outputLocked(c engine.LiveChunk) {
	if c.RunID != p.runID {
		return
	}
	p.lines.add(c, p.outputLine)
	p.draw()
}

// outputLine prints one line of live output, or what a run's end says
// of it; p.mu is held.
func (p *progressPrinter) outputLine(c engine.LiveChunk, text string) {
	p.clear()
	if c.End {
		if c.Dropped > 0 {
			fmt.Fprintf(p.w, "  %s\n", droppedText(c.Dropped))
		}
		p.outOnce.Do(func() { close(p.outEnded) })
		return
	}
	fmt.Fprintf(p.w, "  %s | %s\n", c.Step, text)
}

// event takes one event of the stream or the bus.
func (p *progressPrinter) event(typ string, t time.Time, data map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runID == "" {
		if len(p.early) < maxEarly {
			p.early = append(p.early, earlyEvent{typ, t, data})
		}
		return
	}
	p.eventLocked(typ, t, data)
}

// eventLocked is event with p.mu held.
func (p *progressPrinter) eventLocked(typ string, t time.Time, data map[string]any) {
	if id, _ := data["run_id"].(string); id == "" || id != p.runID {
		return
	}
	switch {
	case typ == engine.EventRunStarted:
		p.start, p.since = t, t
		p.current = "starting"
	case typ == engine.EventStepStarted:
		p.current = strings.TrimSuffix(progressText(typ, data), ": started")
		p.since = t
	case engine.ProgressEventType(typ):
		p.clear()
		switch typ {
		case engine.EventLLMRound:
			fmt.Fprintf(p.w, "  model %s\n", progressText(typ, data))
		case engine.EventToolCalled:
			fmt.Fprintf(p.w, "    tool %s\n", progressText(typ, data))
		default:
			fmt.Fprintf(p.w, "  %s\n", progressText(typ, data))
		}
		if typ != engine.EventToolCalled {
			p.current, p.since = "waiting for the model", t
			if typ == engine.EventStepFinished {
				p.current = "next step"
			}
		}
	case strings.HasPrefix(typ, "hook.run."):
		p.clear()
		p.endOnce.Do(func() { close(p.ended) })
		return
	}
	p.draw()
}

// clear removes the live line; p.mu is held.
func (p *progressPrinter) clear() {
	if p.shown {
		writeRaw(p.w, "\r\x1b[K")
		p.shown = false
	}
}

// draw shows the live line; p.mu is held.
func (p *progressPrinter) draw() {
	if !p.live || p.runID == "" || p.current == "" {
		p.flush()
		return
	}
	now := time.Now()
	line := fmt.Sprintf("  … %s %s (run %s)", p.current, human.Duration(now.Sub(p.since).Truncate(100*time.Millisecond)),
		human.Duration(now.Sub(p.start).Truncate(100*time.Millisecond)))
	writeRaw(p.w, "\r\x1b[K")
	fmt.Fprint(p.w, engine.OneLine(line, 120))
	p.shown = true
	p.flush()
}

// close waits up to grace for the run's final event (the stream may lag
// the run's end a little), then removes the live line.
func (p *progressPrinter) close(grace time.Duration) {
	deadline := time.NewTimer(grace) // one for both waits: it fires once
	defer deadline.Stop()
	select {
	case <-p.ended:
	case <-deadline.C:
		grace = 0
	}
	p.mu.Lock()
	following := p.following
	p.mu.Unlock()
	if following && grace > 0 {
		select {
		case <-p.outEnded:
		case <-deadline.C:
		}
	}
	close(p.stop)
	<-p.done
	p.mu.Lock()
	p.clear()
	p.lines.flush("", p.outputLine)
	p.closed = true
	p.runID = "" // nothing more is printed
	p.flush()
	p.mu.Unlock()
}

// followStream follows the daemon's stream of hook's events into p until
// ctx ends. It returns once the stream is open, so that nothing fired
// after it is missed.
func followStream(ctx context.Context, cl *client.Client, hook string, p *progressPrinter) error {
	q := url.Values{"hook": {hook}, "type": {progressTypes}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, client.BaseURL+"/v1/stream?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("open the event stream: %w", err)
	}
	resp, err := cl.HTTP().Do(req)
	if err != nil {
		return fmt.Errorf("open the event stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return fmt.Errorf("open the event stream: %s", resp.Status)
	}
	go func() {
		defer resp.Body.Close()
		_ = client.ScanSSE(resp.Body, nil, func(_, data string) error {
			var ev api.Event
			if json.Unmarshal([]byte(data), &ev) == nil {
				p.event(ev.Type, ev.Time, ev.Data)
			}
			return nil
		})
	}()
	return nil
}
