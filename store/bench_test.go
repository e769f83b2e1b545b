package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// BenchmarkRunsRecorded records one run per iteration the way the engine
// does: StartRun (claiming a slot) then FinishRun, each its own
// transaction, and reports runs per second.
func BenchmarkRunsRecorded(b *testing.B) {
	ctx := context.Background()
	d, _ := openTest(b)
	steps := []*engine.StepResult{{Index: 1, Type: "shell", Output: "ok", Started: t0, Duration: time.Millisecond}}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		r := &engine.Run{
			ID: fmt.Sprintf("run%09d", i), Hook: fmt.Sprintf("hook%d", i%20), Trigger: "schedule",
			Slot: t0.Add(time.Duration(i) * time.Second), StartedAt: t0,
		}
		if err := d.StartRun(ctx, r); err != nil {
			b.Fatal(err)
		}
		r.Status, r.FinishedAt, r.Steps = engine.StatusCompleted, t0, steps
		r.Prompt, r.Response = "prompt", "response"
		r.Tokens = engine.Tokens{Prompt: 100, Completion: 10, Known: true}
		if err := d.FinishRun(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
}
