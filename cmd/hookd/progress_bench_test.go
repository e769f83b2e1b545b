package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/engine"
)

// BenchmarkStreamOverhead measures what a live stream subscriber costs
// the runs it watches: a real daemon runs a hook of four shell steps (ten
// events a run: its start and end, each step's start and end) — "quick"
// steps that only echo (a run of a few ms, over before the stream reads:
// streamGather), and "steps" that take 30 ms each, so the stream reads
// while the run goes on — b.N times
// with no subscriber and b.N times with a GET /v1/stream client reading
// every event, alternating run by run (and which comes first) so that
// load on the machine falls on both alike. A run's time is its record's (started to finished, on
// the daemon); the subscriber is connected before the run is fired and
// has read the run's last event before the next. It prints the ratio of
// the medians (target <= 1.05).
//
//	go test -run '^$' -bench StreamOverhead -benchtime 60x ./cmd/hookd
func BenchmarkStreamOverhead(b *testing.B) {
	const quick = `steps:
  - {type: shell, command: "echo one"}
  - {type: shell, command: "echo two"}
  - {type: shell, command: "echo three"}
  - {type: shell, command: "echo four"}
skip_llm: true
`
	addr, stop := benchDaemon(b, "quick.yaml", quick, "steps.yaml", strings.ReplaceAll(quick, `"echo`, `"sleep 0.03; echo`))
	defer stop()
	for _, hook := range []string{"quick", "steps"} {
		b.Run(hook, func(b *testing.B) { streamOverhead(b, addr, hook) })
	}
}

func streamOverhead(b *testing.B, addr, hook string) {
	client := &http.Client{}
	call := func(method, path string, out any) {
		req, _ := http.NewRequest(method, "http://"+addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%s %s: %s", method, path, resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			b.Fatal(err)
		}
	}
	run := func() (string, time.Duration) {
		var fired api.RunAnswer
		call("POST", "/v1/hooks/"+hook+"/fire", &fired)
		var final engine.Run
		call("GET", "/v1/runs/"+fired.Run.ID+"/wait", &final)
		if final.Status != engine.StatusCompleted {
			b.Fatalf("run %s: %s %s %s", final.ID, final.Status, final.Reason, final.Error)
		}
		return final.ID, final.FinishedAt.Sub(final.StartedAt)
	}
	// subscribe connects a stream client; it returns once the stream is
	// open, and the returned function waits for the end of run id, counts
	// the run's events and disconnects.
	subscribe := func() func(id string) int {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/v1/stream", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		// Its own connection: the runs' requests keep theirs.
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
		if err != nil {
			b.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(nil, 8<<20)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		if first := <-lines; !strings.HasPrefix(first, "retry:") {
			b.Fatalf("stream starts with %q", first)
		}
		return func(id string) int {
			defer func() { cancel(); resp.Body.Close() }()
			n := 0
			timeout := time.After(waitLong)
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						b.Fatal("the stream ended")
					}
					if !strings.HasPrefix(l, "data: ") || !strings.Contains(l, id) {
						continue
					}
					n++
					if strings.Contains(l, `"type":"hook.run.completed"`) {
						return n
					}
				case <-timeout:
					b.Fatalf("run %s did not end on the stream", id)
				}
			}
		}
	}
	for range 5 { // warm up: the shell, the page cache, the database
		run()
	}
	// Each run starts after a pause, with or without a subscriber: the
	// new connection's first read of the log passes (what is measured is
	// following runs, not connecting), and both start from a daemon that
	// was idle alike.
	const settle = 50 * time.Millisecond
	without := make([]time.Duration, 0, b.N)
	with := make([]time.Duration, 0, b.N)
	events := 0
	b.ResetTimer()
	for i := range b.N {
		// Which goes first alternates too: a run right after another
		// differs from one after a stream closed.
		for _, sub := range [][2]bool{{false, true}, {true, false}}[i%2] {
			if !sub {
				time.Sleep(settle)
				_, d := run()
				without = append(without, d)
				continue
			}
			done := subscribe()
			time.Sleep(settle)
			id, d := run()
			with = append(with, d)
			events += done(id)
		}
	}
	b.StopTimer()
	if events < 10*b.N {
		b.Fatalf("the subscriber saw %d events of %d runs, want 10 a run", events, b.N)
	}
	median := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	mw, mo := median(with), median(without)
	ratio := float64(mw) / float64(mo)
	b.ReportMetric(ratio, "ratio")
	b.Logf("%s: run time with a stream subscriber / without, medians of %d runs each: %s / %s = %.3f (target <= 1.05; %d events streamed)",
		hook, b.N, mw, mo, ratio, events)
}
