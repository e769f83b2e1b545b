package main

import (
	"os"
	"strings"
	"testing"
)

// sequentialHandlers are three run:after command handlers, in files whose
// order is not their priorities'. first (priority 10) waits, boundedly,
// for second to start, and writes "overlap" if it did: concurrent
// handlers show it every time; one at a time, second cannot start before
// first has ended.
var sequentialHandlers = map[string]string{
	"a-third.yaml":  "on: run:after\nlabel: third\npriority: 30\ncommand: [sh, -c, \"cat >/dev/null; echo third >> order\"]\n",
	"b-first.yaml":  "on: run:after\nlabel: first\npriority: 10\ncommand: [sh, -c, \"cat >/dev/null; i=0; while [ ! -f second.started ] && [ $i -lt 40 ]; do sleep 0.05; i=$((i+1)); done; if [ -f second.started ]; then echo overlap >> order; fi; echo first >> order\"]\n",
	"c-second.yaml": "on: run:after\nlabel: second\npriority: 20\ncommand: [sh, -c, \"cat >/dev/null; touch second.started; echo second >> order\"]\n",
	"job.yaml":      quickHook,
}

// TestSequentialPoint: with lifecycle: {run:after: {sequential: true}}
// in hookd.yaml, the run:after handlers run one at a time in priority
// order (as Thinkroid ran them); without it, concurrently.
func TestSequentialPoint(t *testing.T) {
	for _, seq := range []bool{true, false} {
		name, settings := "concurrent", ""
		if seq {
			name, settings = "sequential", "lifecycle:\n  run:after: {sequential: true}\n"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, settings, sequentialHandlers)
			e.must(0, "fire", "job", "--wait")
			var order string
			waitFor(t, "the three handlers", func() bool {
				b, _ := os.ReadFile(e.path("order"))
				order = string(b)
				return strings.Count(order, "\n") >= 3 && strings.Contains(order, "first")
			}, func() string { return order })
			if seq && order != "first\nsecond\nthird\n" {
				t.Errorf("sequential run:after handlers: order %q, want first, second, third, one at a time", order)
			}
			if !seq && !strings.Contains(order, "overlap") {
				t.Errorf("run:after handlers without sequential ran one at a time: %q", order)
			}
		})
	}
}
