package store

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
	d, _ := openTest(t)
	ctx := context.Background()
	out := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	r := &engine.Run{ID: engine.NewID(), Hook: "dump", Trigger: "manual", Status: engine.StatusRunning, StartedAt: t0, QueuedAt: t0}
	mustRun(t, d.StartRun(ctx, r))
	r.Status, r.FinishedAt = engine.StatusCompleted, t0.Add(time.Second)
	r.Steps = []*engine.StepResult{{Index: 0, Name: "dump", Type: "shell", Output: out, ExitCode: new(0),
		Fields: map[string]any{"stdout": out, "stderr": "", "command": "cat dump"}}}
	mustRun(t, d.FinishRun(ctx, r))
	var n int
	mustRun(t, d.r.QueryRowContext(ctx, `SELECT length(CAST(steps AS BLOB)) FROM runs WHERE id = ?`, r.ID).Scan(&n))
	if n > len(out)+1024 {
		t.Errorf("runs.steps holds %d bytes for a %d-byte output", n, len(out))
	}
	t.Logf("runs.steps holds %d bytes for a %d-byte output", n, len(out))
	got, err := d.GetRun(ctx, r.ID)
	mustRun(t, err)
	if s, _ := got.Steps[0].Fields["stdout"].(string); s != out || got.Steps[0].Output != out {
		t.Errorf("read back: output %d bytes, stdout %d bytes", len(got.Steps[0].Output), len(s))
	}
}
