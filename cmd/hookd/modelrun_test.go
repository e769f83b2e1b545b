package main

import (
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
)

// firstRound fires hook with --wait and returns its run, which must have
// completed, and the tool calls the model made in its first round.
func (e *env) firstRound(hook string) (*engine.Run, []*agent.ToolCall) {
	e.t.Helper()
	run := e.getRun(runID(e.t, e.must(0, "fire", hook, "--wait")))
	if run.Status != engine.StatusCompleted {
		e.t.Fatalf("%s: %s %q", hook, run.Status, run.Error)
	}
	tr, err := agent.DecodeTranscript(run)
	if err != nil || tr == nil || len(tr.Rounds) == 0 {
		e.t.Fatalf("%s: transcript %v: %s", hook, err, run.ToolCalls)
	}
	return run, tr.Rounds[0].ToolCalls
}
