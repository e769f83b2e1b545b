package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/hookd/hookd/api"
)

// liveHook prints a line, waits for go1, prints the first 5 bytes of the
// secret (and says so with the file half), waits for go2, prints the
// rest of it and a last line. The padding lines take the output past
// what the redactor holds back (the longest form of the secret).
func liveHook(dir string) string {
	return `secrets: [MY_SECRET]
steps:
  - name: slow
    type: shell
    secrets: [MY_SECRET]
    command: |
      echo first-line; printf '%0300d\n' 0
      while [ ! -f ` + dir + `/go1 ]; do sleep 0.01; done
      printf '%s' "$MY_SECRET" | head -c 5
      touch ` + dir + `/half
      while [ ! -f ` + dir + `/go2 ]; do sleep 0.01; done
      printf '%s' "$MY_SECRET" | tail -c +6; echo
      echo last-line; printf '%0300d\n' 0
skip_llm: true
`
}

// openOutput connects to a live output stream; its chunks arrive on the
// channel, closed when the stream ends.
func (c *apiClient) openOutput(ctx context.Context, path string) <-chan api.OutputChunk {
	c.t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		c.t.Fatalf("%s: %s %s", path, resp.Status, resp.Header.Get("Content-Type"))
	}
	ch := make(chan api.OutputChunk, 1000)
	go func() {
		defer resp.Body.Close()
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var oc api.OutputChunk
				if err := json.Unmarshal([]byte(d), &oc); err != nil {
					c.t.Errorf("bad chunk %q: %v", d, err)
					return
				}
				ch <- oc
			}
		}
	}()
	return ch
}

// TestLiveOutput: a running step's output reaches a follower of the live
// output while the step runs (it waits for files the test makes only
// after it saw the lines), redacted though the secret was written in two
// pieces, and ends with the run; none of it is in the event log.
func TestLiveOutput(t *testing.T) {
	e := newEnv(t, "", nil)
	e.write("hooks.d/live.yaml", liveHook(e.dir))
	e.environ = []string{"MY_SECRET=" + hookSecret}
	e.serve()
	c := e.socketClient()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	chunks := c.openOutput(ctx, "/v1/output?hook=live")

	code, body := c.call("POST", "/v1/hooks/live/fire", api.FireRequest{})
	var fired api.RunAnswer
	if code != 200 || json.Unmarshal(body, &fired) != nil {
		t.Fatalf("fire: %d %s", code, body)
	}
	var text strings.Builder
	read := func(what string, until func(api.OutputChunk) bool) {
		t.Helper()
		for {
			select {
			case oc, ok := <-chunks:
				if !ok {
					t.Fatalf("the stream ended before %s; got %q", what, text.String())
				}
				if oc.RunID != fired.Run.ID || oc.Hook != "live" {
					t.Fatalf("chunk of another run: %+v", oc)
				}
				if !oc.End && (oc.Step != "step_0 (slow)" || oc.Stream != "stdout") {
					t.Errorf("chunk %+v: want step_0 (slow), stdout", oc)
				}
				text.WriteString(oc.Text)
				if until(oc) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no %s; got %q", what, text.String())
			}
		}
	}
	read("first line", func(api.OutputChunk) bool { return strings.Contains(text.String(), "first-line\n") })
	e.write("go1", "")
	waitFor(t, "the step to write half the secret", func() bool { return e.exists("half") }, nil)
	e.write("go2", "")
	var end api.OutputChunk
	read("the run's end", func(oc api.OutputChunk) bool { end = oc; return oc.End })
	got := text.String()
	if !strings.Contains(got, "\n[REDACTED:MY_SECRET]\nlast-line\n") {
		t.Errorf("live output %q: want the secret redacted whole, then the last line", got)
	}
	if l := leaked(got); l != "" || strings.Contains(got, hookSecret[:5]) {
		t.Errorf("live output gives away %s (or its first half): %q", l, got)
	}
	if end.Dropped != 0 {
		t.Errorf("end %+v: nothing should be dropped", end)
	}
	run := e.waitRun(fired.Run.ID, "completed")
	if !strings.Contains(run.Steps[0].Output, "last-line") {
		t.Errorf("the record lost the output: %q", run.Steps[0].Output)
	}

	// A finished run's output stream ends at once; nothing of the live
	// output is in the event log.
	if oc, ok := <-c.openOutput(ctx, "/v1/runs/"+fired.Run.ID+"/output"); !ok || !oc.End || oc.RunID != fired.Run.ID {
		t.Errorf("a finished run's output: %+v %v; want its end", oc, ok)
	}
	if code, _ := c.call("GET", "/v1/runs/nosuchrun/output", nil); code != 404 {
		t.Errorf("an unknown run's output: %d, want 404", code)
	}
	_, evs := c.call("GET", "/v1/events?after=0&limit=1000", nil)
	if strings.Contains(string(evs), "first-line") || strings.Contains(string(evs), "last-line") {
		t.Errorf("live output in the event log: %s", evs)
	}
}

// TestFireWaitLiveOutput: fire --wait prints a step's output lines under
// its progress, after the step's label, with a daemon and without one.
func TestFireWaitLiveOutput(t *testing.T) {
	hooks := map[string]string{"say.yaml": `steps:
  - name: hello
    type: shell
    command: printf 'hello\nworld\n'; printf 'to stderr\n' >&2
skip_llm: true
`}
	for _, daemon := range []bool{false, true} {
		e := newEnv(t, "", hooks)
		if daemon {
			e.serve()
		}
		r := e.must(0, "fire", "say", "--wait")
		for _, want := range []string{"  step_0 (hello) | hello\n", "  step_0 (hello) | world\n", "  step_0 (hello) | to stderr\n"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("daemon %v: fire --wait printed no %q:\n%s", daemon, want, r)
			}
		}
	}
}

// TestWatchOutput: watch --output prints a running step's output lines,
// after the hook, the run and the step, among the events.
func TestWatchOutput(t *testing.T) {
	e := newEnv(t, "", nil)
	e.write("hooks.d/show.yaml", `steps:
  - name: talk
    type: shell
    command: |
      while [ ! -f `+e.path("show")+` ]; do sleep 0.01; done
      echo live-watch-line
skip_llm: true
`)
	e.serve()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	cmd := e.command(ctx, "watch", "--output", "--since", "0", "--hook", "show", "--type", "hook.run.*")
	var out logBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	id := runID(t, e.must(0, "fire", "show"))
	// watch prints the run's start once it follows the events, and it
	// opened the live output before them.
	waitFor(t, "watch to print the run's start", func() bool { return strings.Contains(out.String(), "started   show run "+id) }, out.String)
	e.write("show", "")
	want := "output    show run " + id + " step_0 (talk) | live-watch-line\n"
	waitFor(t, "watch to print the step's output", func() bool { return strings.Contains(out.String(), want) }, out.String)
}
