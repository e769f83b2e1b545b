package notify

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// hungTarget is a webhook that takes requests and never answers them
// until the test ends: it counts what it was sent and signals each
// request as it arrives.
type hungTarget struct {
	srv     *httptest.Server
	arrived chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	n       int
}

// free lets the target answer what it holds, and all later requests, at
// once. A test defers it, so that the notifier's Stop (a cleanup) finds
// the queued notifications delivered promptly.
func (h *hungTarget) free() { h.once.Do(func() { close(h.release) }) }

func newHungTarget(t *testing.T) *hungTarget {
	h := &hungTarget{arrived: make(chan struct{}, 256), release: make(chan struct{})}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
		h.arrived <- struct{}{}
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(h.srv.Close)
	t.Cleanup(h.free) // before the server closes
	return h
}

func (h *hungTarget) requests() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// waitArrived waits for the next request to reach the target.
func (h *hungTarget) waitArrived(t *testing.T) {
	t.Helper()
	select {
	case <-h.arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("no request reached the hung target")
	}
}

// TestHungTargetsDoNotDelayOthers: two webhooks that never answer do not
// hold up a third. Each of five failed runs is reported to all three
// targets, the hung ones listed first; the good target receives all five
// while each hung one still holds the first request it was sent (its
// other four wait in its own queue). With the two workers every target
// shared, both were stuck on the hung targets' first requests and the
// good target received nothing.
func TestHungTargetsDoNotDelayOthers(t *testing.T) {
	hung1, hung2 := newHungTarget(t), newHungTarget(t)
	defer hung1.free()
	defer hung2.free()
	good := newReceiver(t)
	n, c, _ := newTest(t, Options{
		Client: &http.Client{}, // no timeout: a hung target holds its request until the test ends
		Targets: []engine.NotifyTarget{
			{Name: "hung1", URL: hung1.srv.URL}, {Name: "hung2", URL: hung2.srv.URL}, {Name: "good", URL: good.srv.URL},
		},
	})
	const runs = 5
	for i := range runs {
		n.Observe(failedEvent("h", fmt.Sprintf("r%d", i)))
	}
	for range runs {
		good.wait(t)
	}
	waitCount(t, c, Delivered, runs)
	hung1.waitArrived(t)
	hung2.waitArrived(t)
	if a, b := hung1.requests(), hung2.requests(); a != 1 || b != 1 {
		t.Errorf("hung targets were sent %d and %d requests, want 1 each (the first, still unanswered)", a, b)
	}
	if got := c.get(Undeliverable) + c.get(Dropped); got != 0 {
		t.Errorf("%d notifications undeliverable or dropped, want none yet", got)
	}
}

// TestDropNotedOnRun: a notification its target's full queue has no room
// for is dropped, counted and noted on its run; the note of a started
// notification waits for the run's end (its final record would replace
// an earlier note), then comes before the end's own.
func TestDropNotedOnRun(t *testing.T) {
	hung := newHungTarget(t)
	defer hung.free()
	type note struct{ hook, run, text string }
	var notes []note
	n, c, logs := newTest(t, Options{
		Client: &http.Client{}, QueueSize: 2,
		Targets: []engine.NotifyTarget{{Name: "slow", URL: hung.srv.URL, On: []string{"started", "failed"}}},
		Note:    func(hook, id, text string) { notes = append(notes, note{hook, id, text}) },
	})
	n.Observe(failedEvent("h", "r0"))
	hung.waitArrived(t) // its worker holds r0
	n.Observe(failedEvent("h", "r1"))
	n.Observe(failedEvent("h", "r2")) // the queue holds 2
	n.Observe(failedEvent("h", "r3"))
	n.Observe(runEvent(&engine.Run{ID: "s", Hook: "h", Status: engine.StatusRunning}))
	if len(notes) != 1 || notes[0].run != "r3" {
		t.Fatalf("notes %+v, want r3's alone (s is still running)", notes)
	}
	n.Observe(failedEvent("h", "s"))
	want := []note{
		{"h", "r3", "notification of failed to slow dropped: its queue of 2 was full (the webhook is slow or not answering)"},
		{"h", "s", "notification of started to slow dropped: its queue of 2 was full (the webhook is slow or not answering)"},
		{"h", "s", "notification of failed to slow dropped: its queue of 2 was full (the webhook is slow or not answering)"},
	}
	if !slices.Equal(notes, want) {
		t.Errorf("notes\n%+v\nwant\n%+v", notes, want)
	}
	if got := c.get(Dropped); got != 3 {
		t.Errorf("dropped %d, want 3", got)
	}
	if !strings.Contains(logs.String(), "notification dropped: the target's queue is full") {
		t.Errorf("drop not logged:\n%s", logs)
	}
}
