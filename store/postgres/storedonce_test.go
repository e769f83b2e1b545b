package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

// TestStepOutputStoredOnce: a run whose shell step printed 1 MB stores
// about 1 MB of steps, not 2 (the output and its stdout field), and
// reads back with the field.
func TestStepOutputStoredOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := open(t, migrated.NewDatabase(t))
	out := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	r := &engine.Run{ID: engine.NewID(), Hook: "dump", Trigger: "manual", Status: engine.StatusRunning, StartedAt: t0, QueuedAt: t0}
	must(t, d.StartRun(ctx, r))
	r.Status, r.FinishedAt = engine.StatusCompleted, t0.Add(time.Second)
	r.Steps = []*engine.StepResult{{Index: 0, Name: "dump", Type: "shell", Output: out, ExitCode: new(0),
		Fields: map[string]any{"stdout": out, "stderr": "", "command": "cat dump"}}}
	must(t, d.FinishRun(ctx, r))
	var n int
	must(t, d.pool.QueryRow(ctx, `SELECT octet_length(steps) FROM runs WHERE id = $1`, r.ID).Scan(&n))
	if n > len(out)+1024 {
		t.Errorf("runs.steps holds %d bytes for a %d-byte output", n, len(out))
	}
	got, err := d.GetRun(ctx, r.ID)
	must(t, err)
	if s, _ := got.Steps[0].Fields["stdout"].(string); s != out || got.Steps[0].Output != out {
		t.Errorf("read back: output %d bytes, stdout %d bytes", len(got.Steps[0].Output), len(s))
	}
}
