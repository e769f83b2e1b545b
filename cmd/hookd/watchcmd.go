package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/api/client"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/human"
)

// cmdWatch follows the daemon's live event stream and prints one line per
// event. When the connection drops (the daemon restarts) it reconnects
// with Last-Event-ID, so no event is skipped or printed twice.
func cmdWatch(c *cli, args []string) int {
	fs := c.flags()
	since := fs.Int64("since", -1, "start after this event seq (0: the whole event log); default: new events only")
	hook := fs.String("hook", "", "only events about this hook")
	types := fs.String("type", "", "only events of these types: comma-separated patterns like deploy.*,hook.run.**")
	asJSON := fs.Bool("json", false, "print each event as one JSON line")
	baseURL := fs.String("url", "", "follow a daemon's TCP API at this base URL (http://host:port) instead of the local socket; the token is read from $HOOKD_TOKEN")
	count := fs.Int("n", 0, "exit after this many events (0: follow until interrupted)")
	output := fs.Bool("output", false, "also print running steps' output as it is written (live, redacted, not stored: lines of a run followed from now)")
	_, d, code, ok := c.setup(fs, args, 0, 0)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var (
		httpc *http.Client
		base  string
		token string
	)
	if *baseURL != "" {
		httpc, base, token = &http.Client{}, strings.TrimRight(*baseURL, "/"), c.env("HOOKD_TOKEN")
	} else {
		cl := client.DialContext(ctx, d.DB)
		if cl == nil {
			return c.errorf("hookd is not running (no answer on %s)", c.short(api.SocketPath(d.DB)))
		}
		httpc, base = cl.HTTP(), client.BaseURL
	}
	q := []string{}
	if *hook != "" {
		q = append(q, "hook="+url.QueryEscape(*hook))
	}
	if *types != "" {
		q = append(q, "type="+url.QueryEscape(*types))
	}
	path := base + "/v1/stream"
	if len(q) > 0 {
		path += "?" + strings.Join(q, "&")
	}

	w := &watcher{c: c, json: *asJSON, left: *count, last: *since}
	if *output {
		// Open before the events are followed: output written after
		// watch printed its first event is shown.
		done, err := followOutput(ctx, httpc, base, token, *hook, w.output)
		if err != nil {
			fmt.Fprintf(c.stderr, "hookd watch: no live output yet: %v\n", err)
		}
		go w.followOutput(ctx, httpc, base, token, *hook, done)
	}
	backoff := 250 * time.Millisecond
	for {
		err := w.follow(ctx, httpc, path, token)
		switch {
		case ctx.Err() != nil, errors.Is(err, errEnough):
			return exitOK
		case errors.Is(err, errFatal):
			return c.errorf("%v", err)
		}
		if w.got {
			backoff = 250 * time.Millisecond
		}
		fmt.Fprintf(c.stderr, "hookd watch: %v; reconnecting in %s\n", err, backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return exitOK
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

var (
	errEnough = errors.New("enough events")
	errFatal  = errors.New("refused")
)

// watcher is the state of `hookd watch` across reconnections.
type watcher struct {
	c    *cli
	json bool
	left int   // events still to print, when counting
	last int64 // seq of the last event seen, -1 before the first connection
	got  bool  // the last connection delivered something

	mu    sync.Mutex // events and live output are printed from two goroutines
	lines liveLines
}

// followOutput prints the live output of hook's runs ("": every run's)
// until ctx ends, reconnecting when the daemon restarts: output written
// meanwhile is not shown (it is not stored).
// first is the first connection's (nil: it failed).
func (w *watcher) followOutput(ctx context.Context, httpc *http.Client, base, token, hook string, first <-chan error) {
	backoff := 250 * time.Millisecond
	done := first
	for ctx.Err() == nil {
		if done != nil {
			backoff = 250 * time.Millisecond
			<-done
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, 5*time.Second)
		done, _ = followOutput(ctx, httpc, base, token, hook, w.output)
	}
}

// output prints a chunk of live output: with --json as it came, one JSON
// line; else its whole lines, after the run and the step.
func (w *watcher) output(c engine.LiveChunk) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.json {
		b, _ := json.Marshal(c)
		fmt.Fprintln(w.c.stdout, string(b))
		w.c.flush()
		return
	}
	w.lines.add(c, func(c engine.LiveChunk, text string) {
		ts := time.Now().Format("15:04:05.000")
		switch {
		case !c.End:
			fmt.Fprintf(w.c.stdout, "%s     %-9s %s run %s %s | %s\n", ts, "output", c.Hook, c.RunID, c.Step, text)
		case c.Dropped > 0:
			fmt.Fprintf(w.c.stdout, "%s     %-9s %s run %s: %s\n", ts, "output", c.Hook, c.RunID, droppedText(c.Dropped))
		}
	})
	w.c.flush()
}

// follow reads the stream once, until it ends or fails.
func (w *watcher) follow(ctx context.Context, httpc *http.Client, streamURL, token string) error {
	w.got = false
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, streamURL, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", errFatal, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if w.last >= 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(w.last, 10))
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var ae api.Error
		_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&ae)
		if ae.Error == "" {
			ae.Error = resp.Status
		}
		if resp.StatusCode >= 400 && resp.StatusCode < 500 {
			return fmt.Errorf("%w: %s", errFatal, ae.Error)
		}
		return errors.New(ae.Error)
	}
	err = client.ScanSSE(resp.Body, func(line string) {
		// The first comment says where the stream starts: remember it,
		// so a reconnection before any event resumes there.
		var after int64
		if _, err := fmt.Sscanf(line, ": hookd event stream after seq %d", &after); err == nil && w.last < 0 {
			w.last = after
		}
	}, w.print)
	if err != nil {
		return err
	}
	return errors.New("the stream ended")
}

func (w *watcher) print(id, data string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ev api.Event
	if err := json.Unmarshal([]byte(data), &ev); err != nil {
		return fmt.Errorf("%w: bad event from hookd: %v", errFatal, err)
	}
	if seq, err := strconv.ParseInt(id, 10, 64); err == nil {
		w.last = seq
	}
	w.got = true
	if w.json {
		b, _ := json.Marshal(ev)
		fmt.Fprintln(w.c.stdout, string(b))
	} else {
		fmt.Fprintln(w.c.stdout, eventLine(&ev))
	}
	w.c.flush()
	if w.left > 0 {
		w.left--
		if w.left == 0 {
			return errEnough
		}
	}
	return nil
}

// eventLine renders an event as one readable line:
//
//	15:04:05.123 #12 started   backup run 01J… (schedule, 3ms late)
//	15:04:06.456 #13 failed    backup run 01J… in 1.333s: step_0 failed: …
//	03:00:09.001 #15 completed nightly run 01J… in 9s, check failed: tests
//	15:04:05.200 #13 step      backup run 01J… step_0 (dump) shell: ok in 1.2s
//	15:04:07.000 #14 event     deploy.finished env=prod service=api (api)
func eventLine(ev *api.Event) string {
	ts := ev.Time.Local().Format("15:04:05.000")
	str := func(k string) string { s, _ := ev.Data[k].(string); return s }
	if ev.Source == "engine" && engine.ProgressEventType(ev.Type) {
		return fmt.Sprintf("%s #%d %-9s %s run %s %s", ts, ev.Seq, progressWord(ev.Type), str("hook"), str("run_id"), progressText(ev.Type, ev.Data))
	}
	if strings.HasPrefix(ev.Type, "hook.run.") && ev.Source == "engine" {
		what := strings.TrimPrefix(ev.Type, "hook.run.")
		line := fmt.Sprintf("%s #%d %-9s %s run %s", ts, ev.Seq, what, str("hook"), str("run_id"))
		if what == "started" {
			extra := str("trigger")
			if ms, ok := ev.Data["lateness_ms"].(float64); ok {
				extra += ", " + human.Duration(time.Duration(ms*float64(time.Millisecond))) + " late"
			}
			return line + " (" + extra + ")"
		}
		if ms, ok := ev.Data["duration_ms"].(float64); ok && ms > 0 {
			line += " in " + human.Duration(time.Duration(ms*float64(time.Millisecond)))
		} else if t := str("trigger"); t != "" {
			line += " (" + t + ")"
		}
		if c := str("check_failed"); c != "" {
			line += ", check failed: " + c
		}
		if why := strings.TrimSpace(str("reason") + " " + str("error")); why != "" {
			line += ": " + engine.OneLine(why, 160)
		}
		return line
	}
	var parts []string
	for _, k := range sortedKeys(ev.Data) {
		v := ev.Data[k]
		s, ok := v.(string)
		if !ok {
			b, _ := json.Marshal(v)
			s = string(b)
		}
		parts = append(parts, k+"="+engine.OneLine(s, 60))
	}
	line := fmt.Sprintf("%s #%d %-9s %s", ts, ev.Seq, "event", ev.Type)
	if len(parts) > 0 {
		line += " " + engine.OneLine(strings.Join(parts, " "), 200)
	}
	return line + " (" + ev.Source + ")"
}

// progressWord is the word a progress event's line starts with.
func progressWord(typ string) string {
	switch typ {
	case engine.EventLLMRound:
		return "model"
	case engine.EventToolCalled:
		return "tool"
	}
	return "step"
}

// progressText says what a progress event reports, from its payload (as
// the stream carries it, numbers are float64):
//
//	step_0 (dump) shell: started
//	step_0 (dump) shell: exit 2 in 1.2s (fails the run)
//	step_1 (post) http: http 503 in 40ms (fails the run)
//	call 2: 3 tool calls in 2.1s
//	call 1: answered in 8.5s over 5 attempts
//	read_file: ok in 3ms
func progressText(typ string, data map[string]any) string {
	str := func(k string) string { s, _ := data[k].(string); return s }
	num := func(k string) (int64, bool) {
		switch v := data[k].(type) {
		case float64:
			return int64(v), true
		case int64:
			return v, true
		case int:
			return int64(v), true
		}
		return 0, false
	}
	took := ""
	if ms, ok := num("duration_ms"); ok {
		took = " in " + human.Duration(time.Duration(ms)*time.Millisecond)
	}
	if n, ok := num("attempts"); ok && n > 1 {
		took += fmt.Sprintf(" over %d attempts", n)
	}
	switch typ {
	case engine.EventStepStarted, engine.EventStepFinished:
		idx, _ := num("index")
		p := engine.StepProgress{Index: int(idx), Name: str("name"), Outcome: engine.StepOutcome(str("outcome"))}
		head := p.Label() + " " + str("kind") + ": "
		if typ == engine.EventStepStarted {
			return head + "started"
		}
		if code, ok := num("exit_code"); ok {
			c := int(code)
			p.ExitCode = &c
		}
		if code, ok := num("status_code"); ok {
			p.StatusCode = int(code)
		}
		line := head + p.OutcomeText() + took
		if e := str("error"); e != "" {
			line += ": " + engine.OneLine(e, 120)
		}
		if b, _ := data["fails_run"].(bool); b {
			line += " (fails the run)"
		}
		return line
	case engine.EventLLMRound:
		round, _ := num("round")
		calls, _ := num("tool_calls")
		line := fmt.Sprintf("call %d: ", round)
		switch {
		case str("error") != "":
			line += "failed" + took + ": " + engine.OneLine(str("error"), 120)
		case str("answered_by") != "":
			line += "answered by " + str("answered_by")
		case calls > 0:
			line += fmt.Sprintf("%d %s%s", calls, plural(int(calls), "tool call", "tool calls"), took)
		default:
			line += "answered" + took
		}
		return line
	}
	line := str("tool") + ": " + str("outcome") + took
	if e := str("error"); e != "" {
		line += ": " + engine.OneLine(e, 120)
	}
	return line
}
