package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/api"
)

// sseEvent is one event read from the stream.
type sseEvent struct {
	id int64
	ev api.Event
}

// sseStream is an open GET /v1/stream.
type sseStream struct {
	t      *testing.T
	cancel context.CancelFunc
	events chan sseEvent
	first  chan string // the first comment line
}

// openStream connects to the stream with a Last-Event-ID ("" for none)
// and a query; events arrive on s.events.
func (c *apiClient) openStream(lastID, query string) *sseStream {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/v1/stream"+query, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		cancel()
		c.t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		c.t.Fatalf("stream: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	s := &sseStream{t: c.t, cancel: cancel, events: make(chan sseEvent, 1000), first: make(chan string, 1)}
	go func() {
		defer resp.Body.Close()
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 8<<20)
		var id, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if data != "" {
					var ev api.Event
					if err := json.Unmarshal([]byte(data), &ev); err != nil {
						c.t.Errorf("bad event data %q: %v", data, err)
						return
					}
					n, err := strconv.ParseInt(id, 10, 64)
					if err != nil {
						c.t.Errorf("event without a numeric id: %q", id)
					}
					s.events <- sseEvent{n, ev}
				}
				id, data = "", ""
			case strings.HasPrefix(line, ": hookd"):
				select {
				case s.first <- line:
				default:
				}
			case strings.HasPrefix(line, "id: "):
				id = line[4:]
			case strings.HasPrefix(line, "data: "):
				data += line[6:]
			}
		}
	}()
	c.t.Cleanup(cancel)
	return s
}

// until reads events until one satisfies stop, and returns them all.
func (s *sseStream) until(stop func(api.Event) bool) []sseEvent {
	s.t.Helper()
	var out []sseEvent
	timeout := time.After(waitLong)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				s.t.Fatalf("the stream ended after %d events", len(out))
			}
			out = append(out, ev)
			if stop(ev.ev) {
				return out
			}
		case <-timeout:
			s.t.Fatalf("timed out on the stream after %d events", len(out))
		}
	}
}

func completedRun(id string) func(api.Event) bool {
	return func(ev api.Event) bool { return ev.Type == "hook.run.completed" && ev.Data["run_id"] == id }
}

// TestStreamResume reads the stream, disconnects while events and runs
// happen, and reconnects with Last-Event-ID: together the two
// connections deliver exactly the event log, in order, each event once,
// with its seq as the SSE id — engine events (stored in batches after
// they are dispatched) included.
func TestStreamResume(t *testing.T) {
	e := newEnv(t, "", apiHooks)
	e.serve()
	c := e.socketClient()

	s := c.openStream("0", "")
	if first := <-s.first; first != ": hookd event stream after seq 0" {
		t.Errorf("first comment %q", first)
	}
	var fired api.RunAnswer
	for i := range 3 {
		c.json("POST", "/v1/events", map[string]any{"type": "deploy.finished", "data": map[string]any{"env": "prod", "i": i}}, 200, nil)
	}
	c.json("POST", "/v1/hooks/hello/fire", map[string]any{"event": map[string]any{"who": "s"}}, 200, &fired)
	got := s.until(completedRun(fired.Run.ID))
	s.cancel()

	// Disconnected: more events and runs.
	for i := range 3 {
		c.json("POST", "/v1/events", map[string]any{"type": "build.done", "data": map[string]any{"i": i}}, 200, nil)
	}
	c.json("POST", "/v1/hooks/hello/fire", map[string]any{"event": map[string]any{"who": "s"}}, 200, &fired)
	c.json("GET", "/v1/runs/"+fired.Run.ID+"/wait", nil, 200, nil)

	last := got[len(got)-1].id
	s2 := c.openStream(strconv.FormatInt(last, 10), "")
	got = append(got, s2.until(completedRun(fired.Run.ID))...)

	var log []api.Event
	c.json("GET", "/v1/events?after=0&limit=1000", nil, 200, &log)
	if len(got) != len(log) {
		t.Fatalf("stream delivered %d events, the log holds %d", len(got), len(log))
	}
	for i, ev := range got {
		if ev.id != log[i].Seq || ev.ev.Seq != ev.id || ev.ev.ID != log[i].ID {
			t.Errorf("event %d: stream id %d (%s), log seq %d (%s)", i, ev.id, ev.ev.ID, log[i].Seq, log[i].ID)
		}
	}
	types := map[string]int{}
	for _, ev := range got {
		types[ev.ev.Type]++
	}
	if types["deploy.finished"] != 3 || types["build.done"] != 3 || types["hook.run.started"] < 2 || types["hook.run.completed"] < 2 {
		t.Errorf("event types: %v", types)
	}

	// Live, filtered: only what matches, and nothing from before.
	s3 := c.openStream("", "?hook=hello&type=hook.run.*")
	<-s3.first
	c.json("POST", "/v1/hooks/hello/fire", map[string]any{"event": map[string]any{"who": "s"}}, 200, &fired)
	live := s3.until(completedRun(fired.Run.ID))
	if len(live) != 2 || live[0].ev.Type != "hook.run.started" || live[0].ev.Data["hook"] != "hello" {
		t.Errorf("live filtered stream: %+v", live)
	}
	if code, _ := c.call("GET", "/v1/stream?since=x", nil); code != 400 {
		t.Errorf("bad since: %d", code)
	}
}

// TestWatch follows the stream with `hookd watch` across a daemon restart:
// it reconnects with Last-Event-ID and prints every event once.
func TestWatch(t *testing.T) {
	e := newEnv(t, "", apiHooks)
	d := e.serve()
	c := e.socketClient()

	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	cmd := e.command(ctx, "watch", "--since", "0", "--type", "deploy.*", "-n", "4")
	var out, errOut logBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	emit := func(i int) {
		c.json("POST", "/v1/events", map[string]any{"type": "deploy.finished", "data": map[string]any{"env": "dev", "i": i}}, 200, nil)
	}
	emit(1)
	emit(2)
	waitFor(t, "watch to print two events", func() bool { return strings.Count(out.String(), "\n") >= 2 }, errOut.String)

	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("stop: %d", code)
	}
	d = e.serve()
	c = e.socketClient()
	emit(3)
	emit(4)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("watch printed %d lines:\n%s", len(lines), out.String())
	}
	for i, l := range lines {
		if !strings.Contains(l, "event     deploy.finished env=dev i="+strconv.Itoa(i+1)+" (api)") {
			t.Errorf("line %d: %q", i, l)
		}
	}
	if !strings.Contains(errOut.String(), "reconnecting") {
		t.Errorf("watch did not say it reconnected:\n%s", errOut.String())
	}

	// One line per run event, and JSON lines with --json.
	var fired api.RunAnswer
	c.json("POST", "/v1/hooks/hello/fire", map[string]any{"event": map[string]any{"who": "w"}}, 200, &fired)
	c.json("GET", "/v1/runs/"+fired.Run.ID+"/wait", nil, 200, nil)
	r := e.must(0, "watch", "--since", "0", "--hook", "hello", "--type", "hook.run.*", "-n", "2")
	if !strings.Contains(r.stdout, "started   hello run "+fired.Run.ID+" (manual)") ||
		!regexp.MustCompile(`completed hello run `+fired.Run.ID+` in \d+`).MatchString(r.stdout) {
		t.Errorf("watch of a run:\n%s", r)
	}
	r = e.must(0, "watch", "--since", "0", "--json", "-n", "1")
	var ev api.Event
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &ev); err != nil || ev.Seq == 0 || ev.Type == "" {
		t.Errorf("watch --json: %v\n%s", err, r)
	}
}

// TestStreamFraming publishes events whose values try to end the SSE
// event early and forge the next one (blank lines, CR, "id:" and "data:"
// lines of a hook.run.completed), and an event that tries to pass as an
// engine progress event: the stream carries each event whole, as its one
// data line, and nothing forged; hook.* types are refused.
func TestStreamFraming(t *testing.T) {
	e := newEnv(t, "", nil)
	e.serve()
	c := e.socketClient()
	s := c.openStream("0", "")
	<-s.first
	hostile := "a\n\nid: 999999\ndata: {\"type\":\"hook.run.completed\",\"source\":\"engine\"}\n\r\nevent: x\r\rdata: y\u2028z"
	data, _ := json.Marshal(map[string]any{"v": hostile, hostile: 1})
	e.must(0, "emit", "x.framing", "--data", string(data))
	for _, typ := range []string{"hook.step.finished", "hook.tool.called", "hook.llm.round"} {
		if r := e.run("emit", typ, "hook=x", "run_id=y", "tool=run_command"); r.code == 0 {
			t.Errorf("emit %s was accepted:\n%s", typ, r)
		}
		if code, body := c.call("POST", "/v1/events", map[string]any{"type": typ, "data": map[string]any{"hook": "x"}}); code != 400 {
			t.Errorf("POST /v1/events %s: %d %s", typ, code, body)
		}
	}
	e.must(0, "emit", "x.end")
	got := s.until(func(ev api.Event) bool { return ev.Type == "x.end" })
	if len(got) != 2 || got[0].ev.Type != "x.framing" || got[0].ev.Data["v"] != hostile || got[0].ev.Data[hostile] != float64(1) {
		t.Fatalf("stream: %+v", got)
	}
	for _, ev := range got {
		if ev.id == 999999 || strings.HasPrefix(ev.ev.Type, "hook.") {
			t.Errorf("forged event on the stream: %+v", ev)
		}
	}
}
