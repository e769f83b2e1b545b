package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"syscall"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
)

const durableHook = `trigger:
  event: deploy.*
steps:
  - type: shell
    command: "true"
skip_llm: true
`

// runsByN maps the n field of each deploy run's payload to its records.
func runsByN(t *testing.T, e *env) map[float64]int {
	t.Helper()
	out := map[float64]int{}
	for _, r := range e.listRuns("deploy", "--limit", "100000") {
		var p map[string]any
		if err := json.Unmarshal(r.Event, &p); err != nil {
			t.Fatalf("run %s payload %s: %v", r.ID, r.Event, err)
		}
		n, _ := p["n"].(float64)
		out[n]++
	}
	return out
}

// TestPendingEventDispatchedAtStart: an event stored but not dispatched —
// what a crash between the two leaves — is dispatched when hookd starts,
// and only once.
func TestPendingEventDispatchedAtStart(t *testing.T) {
	e := newEnv(t, "", map[string]string{"deploy.yaml": durableHook})
	d := e.serve()
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}

	db, err := store.Open(e.path(".hookd/hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	ev := &engine.Event{ID: "stored-not-dispatched", Type: "deploy.finished", Source: "api", Data: map[string]any{"n": 7.0}}
	if err := db.AppendPendingEvent(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	db.Close()

	d = e.serve()
	d.waitLog("dispatched an event left pending by the previous stop")
	waitFor(t, "the pending event's run", func() bool { return runsByN(t, e)[7] == 1 }, func() string { return d.log.String() })
	d.signal(syscall.SIGTERM)
	d.wait()
	e.serve()
	if got := runsByN(t, e)[7]; got != 1 {
		t.Errorf("the event ran %d times after two restarts, want 1", got)
	}
}

// TestEventDurability publishes events over the API as fast as one client
// can while the daemon is killed with SIGKILL, then restarts it: every
// event the API accepted is stored and has exactly one run record (a run,
// or a gate's refusal). Events with the client's IDs are stored pending
// before they are dispatched, and the record of what each did to the hook
// is written with that run record, so the one a kill left pending is
// dispatched again to no hook it reached; events without are stored in
// the transaction of the run they start, never pending.
func TestEventDurability(t *testing.T) {
	t.Run("client ids", func(t *testing.T) { testEventDurability(t, true) })
	t.Run("ids by hookd", func(t *testing.T) { testEventDurability(t, false) })
}

func testEventDurability(t *testing.T, clientIDs bool) {
	e := newProcEnv(t, "", map[string]string{"deploy.yaml": durableHook})
	d := e.serve()
	c := e.socketClient()
	c.http.Timeout = waitLong

	var (
		mu    sync.Mutex
		acked []float64
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 1.0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			ev := map[string]any{"type": "deploy.finished", "data": map[string]any{"n": n}}
			if clientIDs {
				ev["id"] = fmt.Sprintf("ev-%v", n)
			}
			body, _ := json.Marshal(ev)
			req, _ := newRequest("POST", c.base+"/v1/events", body)
			resp, err := c.http.Do(req)
			if err != nil {
				return // the daemon is gone
			}
			resp.Body.Close()
			if resp.StatusCode == 200 {
				mu.Lock()
				acked = append(acked, n)
				mu.Unlock()
			}
		}
	}()
	waitFor(t, "events to be accepted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 50
	}, nil)
	d.signal(syscall.SIGKILL)
	d.wait()
	close(stop)
	<-done

	e.serve()
	mu.Lock()
	defer mu.Unlock()
	var counts map[float64]int
	waitFor(t, "a record of every accepted event", func() bool {
		counts = runsByN(t, e)
		for _, n := range acked {
			if counts[n] == 0 {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("%d accepted; records by n: %v", len(acked), counts) })
	for n, k := range counts {
		if k > 1 {
			t.Errorf("event n=%v has %d run records, want 1", n, k)
		}
	}
	// Every event in the log was dispatched: none is left pending.
	db, err := store.Open(e.path(".hookd/hookd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if p, _ := db.PendingEvents(context.Background(), 10); len(p) != 0 {
		t.Errorf("events still pending after the restart: %d", len(p))
	}
	evs, err := db.ListEvents(context.Background(), "deploy.finished", 100000)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[float64]bool{}
	for _, ev := range evs {
		n, _ := ev.Data["n"].(float64)
		stored[n] = true
	}
	for _, n := range acked {
		if !stored[n] {
			t.Errorf("event n=%v was accepted but is not in the event log", n)
		}
	}
	t.Logf("%d events accepted before the kill", len(acked))
}
