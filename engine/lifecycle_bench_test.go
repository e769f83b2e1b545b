package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// BenchmarkLifecyclePoint measures calling a waterfall point (the
// tool:call:before permission gate) with 0 and with 10 in-process
// handlers. Targets: <= 200 ns and <= 10 µs per call.
func BenchmarkLifecyclePoint(b *testing.B) {
	for _, n := range []int{0, 10} {
		b.Run(fmt.Sprintf("handlers=%d", n), func(b *testing.B) {
			r := engine.NewRegistry()
			for i := range n {
				r.On(engine.PointToolCallBefore, func(ctx context.Context, p *engine.Payload) (engine.Decision, error) {
					if i == 0 {
						return engine.Decision{Changes: map[string]any{"tool_input": p.ToolInput}}, nil
					}
					return engine.Decision{}, nil
				}, engine.HandlerOptions{Priority: i, Label: fmt.Sprint("h", i)})
			}
			hook := &engine.Hook{Name: "bench"}
			p := &engine.Payload{Hook: hook, RunID: "r", ToolName: "run_command", ToolInput: []byte(`{"argv":["ls"]}`)}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if !r.Active(engine.PointToolCallBefore) && n > 0 {
					b.Fatal("inactive")
				}
				r.Call(ctx, engine.PointToolCallBefore, p)
			}
			b.StopTimer()
			per := b.Elapsed() / time.Duration(max(b.N, 1))
			b.Logf("lifecycle point with %d handlers: %s per call (target %s)", n, per, map[int]string{0: "200ns", 10: "10µs"}[n])
		})
	}
}
