package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/agenttest"
	"github.com/hookd/hookd/internal/human"
	"github.com/hookd/hookd/llm/llmtest"
)

// TestRetriedCallShowsTotal: a model call the server answered on its
// third attempt, after two 503s each asking to retry in 2 s, is shown
// with its whole time (the waits included, not only the last attempt's
// milliseconds) and its attempts, in `hookd run`'s view, in the progress
// line of `fire --wait` and `watch`, and in the record.
func TestRetriedCallShowsTotal(t *testing.T) {
	busy := llmtest.Reply{Status: 503, Error: "loading model", Header: map[string]string{"Retry-After": "2"}}
	srv := llmtest.New(busy, busy, llmtest.Answer("ready"))
	f := agenttest.Start(t, srv, agenttest.NewHook(t, srv))
	var (
		mu     sync.Mutex
		rounds []map[string]any
	)
	f.Eng.Subscribe(func(ev *engine.Event) {
		if ev.Type == engine.EventLLMRound {
			mu.Lock()
			rounds = append(rounds, ev.Data)
			mu.Unlock()
		}
	})
	run, tr := f.Fire()
	agenttest.WantStatus(t, run, engine.StatusCompleted, "")

	c := tr.Rounds[0].Call
	if c.Requests() != 3 || c.Duration < 4*time.Second || c.Duration < c.Latency {
		t.Fatalf("record: %d requests, duration %s (latency %s); want 3 and at least the 4s of waits", c.Requests(), c.Duration, c.Latency)
	}
	var view strings.Builder
	printTranscript(&view, run)
	want := fmt.Sprintf("model call 1, %s, %s over 3 attempts, finish stop", c.Model, human.Duration(c.Duration))
	if !strings.Contains(view.String(), want) {
		t.Errorf("hookd run shows no %q:\n%s", want, view.String())
	}

	mu.Lock()
	defer mu.Unlock()
	if len(rounds) != 1 {
		t.Fatalf("%d hook.llm.round events", len(rounds))
	}
	line := progressText(engine.EventLLMRound, rounds[0])
	if want := fmt.Sprintf("call 1: answered in %s over 3 attempts", human.Duration(c.Duration.Truncate(time.Millisecond))); line != want {
		t.Errorf("progress line %q, want %q", line, want)
	}
	t.Logf("hookd run: %s\nprogress: %s", want, line)
}
