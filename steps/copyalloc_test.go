package steps

import (
	"context"
	"runtime"
	"testing"
)

// A command's output is copied with pooled buffers: running `true` many
// times allocates well under the 64 KB a run that io.Copy's own buffers
// (32 KB for stdout, 32 KB for stderr) cost before.
func TestCommandOutputCopyAllocations(t *testing.T) {
	c := Command{Argv: []string{"/bin/sh", "-c", "echo out; echo err >&2"}}
	ctx := context.Background()
	if r := c.Run(ctx); r.Err != nil || r.Stdout != "out\n" || r.Stderr != "err\n" {
		t.Fatalf("first run: %+v", r)
	}
	const n, bound = 40, 32 << 10
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range n {
		if r := c.Run(ctx); r.Err != nil || r.ExitCode != 0 || r.Stdout != "out\n" || r.Stderr != "err\n" {
			t.Fatalf("run: %+v", r)
		}
	}
	runtime.ReadMemStats(&m1)
	if per := (m1.TotalAlloc - m0.TotalAlloc) / n; per > bound {
		t.Errorf("a run of a command allocated %d bytes on average, want at most %d", per, bound)
	}
}
