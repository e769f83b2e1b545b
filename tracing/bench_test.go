package tracing

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/internal/testtool"
)

// benchRun is a run as a model hook leaves it: two steps, two model
// calls, one tool call.
func benchRun(t0 time.Time, i int) *engine.Run {
	zero := 0
	tr := agent.Transcript{Model: "test-model", BaseURL: "http://127.0.0.1:8080/v1", Stop: "answer", Rounds: []*agent.Round{
		{Call: agent.ModelCall{Model: "test-model", Started: t0.Add(20 * time.Millisecond), Latency: 300 * time.Millisecond,
			FinishReason: "tool_calls", Usage: &agent.Usage{Prompt: 400, Completion: 20}}},
		{Call: agent.ModelCall{Model: "test-model", Started: t0.Add(400 * time.Millisecond), Latency: 500 * time.Millisecond,
			FinishReason: "stop", Usage: &agent.Usage{Prompt: 500, Completion: 80}, Content: "all is well"}},
	}}
	raw, _ := json.Marshal(tr)
	return &engine.Run{ID: "r" + string(rune('a'+i%26)), Hook: "triage", Trigger: "event", Status: engine.StatusCompleted,
		QueuedAt: t0, StartedAt: t0, FinishedAt: t0.Add(time.Second), EventType: "deploy.finished",
		Steps: []*engine.StepResult{
			{Index: 0, Name: "gather", Type: "shell", Output: "12 files changed\n", ExitCode: &zero, Started: t0, Duration: 10 * time.Millisecond},
			{Index: 1, Name: "diff", Type: "git_diff", Output: "diff --git a/x b/x\n", ExitCode: &zero, Started: t0.Add(10 * time.Millisecond), Duration: 8 * time.Millisecond},
		},
		ToolCalls: raw,
		Tools: []engine.ToolUse{{Round: 1, ID: "call_1", Name: "read_file", Tool: "read_file", Outcome: engine.ToolOK,
			Arguments: `{"path":"notes.txt"}`, Result: "all is well", Started: t0.Add(330 * time.Millisecond), Duration: 2 * time.Millisecond}},
		Tokens: engine.Tokens{Prompt: 900, Completion: 100, Known: true},
	}
}

// BenchmarkExportRun prints the CPU a run's trace costs hookd — its
// spans built, batched, encoded and sent over OTLP/HTTP to a loopback
// server — for a model run (two steps, two model calls, a tool call) and
// for a run of one shell step, against the CPU of one spawn of /bin/sh -c
// true in the same run: the least any run with a step costs (the target
// is at most 5 % of a run's own cost).
//
//	go test -run '^$' -bench 'BenchmarkExportRun$' -benchtime 2000x ./tracing/
func BenchmarkExportRun(b *testing.B) {
	for _, kind := range []string{"model", "shell"} {
		b.Run("run="+kind, func(b *testing.B) { benchExportRun(b, kind) })
	}
}

func benchExportRun(b *testing.B, kind string) {
	var spans atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		spans.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	x, err := New(context.Background(), Options{Endpoint: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	runs := make([]*engine.Run, 64)
	for i := range runs {
		runs[i] = benchRun(t0, i)
		if kind == "shell" { // one step running true, no model
			runs[i].Steps, runs[i].ToolCalls, runs[i].Tools, runs[i].Tokens = runs[i].Steps[:1], nil, nil, engine.Tokens{}
		}
	}
	n := max(b.N, 200)
	b.ResetTimer()
	c0 := testtool.SelfCPU(b)
	for i := range n {
		x.export(runs[i%len(runs)])
	}
	if err := x.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	c1 := testtool.SelfCPU(b)
	for range n {
		if err := exec.Command("/bin/sh", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	c2 := testtool.SelfCPU(b)
	b.StopTimer()
	if spans.Load() == 0 {
		b.Fatal("nothing reached the collector")
	}
	export, spawn := (c1-c0)/time.Duration(n), (c2-c1)/time.Duration(n)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(export.Microseconds()), "export-cpu-µs/run")
	b.ReportMetric(float64(spawn.Microseconds()), "spawn-cpu-µs")
	b.ReportMetric(float64(export)/float64(spawn), "ratio")
}
