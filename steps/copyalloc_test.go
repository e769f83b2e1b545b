package steps

import (
	"context"
	"runtime"
	"testing"

	"github.com/hookd/hookd/process"
)

// A command's output is copied with pooled buffers: running `true` many
// times allocates well under the 64 KB a run that io.Copy's own buffers
// (32 KB for stdout, 32 KB for stderr) cost before.
func TestCommandOutputCopyAllocations(t *testing.T) {
	c := process.Command{Argv: []string{"/bin/sh", "-c", "echo out; echo err >&2"}}
	ctx := context.Background()
	if r := c.Run(ctx); r.Err != nil || r.Stdout != "out\n" || r.Stderr != "err\n" {
		t.Fatalf("first run: %+v", r)
	}
	// The least of three batches: the race detector's sync.Pool drops a
	// quarter of what is put back at random, and a collection empties it,
	// so that one batch on a loaded machine can come out over the bound
	// (one did, at 33 KB a run) while the buffers are pooled; without the
	// pool every batch allocates 64 KB a run.
	const n, bound = 40, 32 << 10
	least := uint64(1 << 62)
	for range 3 {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range n {
			if r := c.Run(ctx); r.Err != nil || r.ExitCode != 0 || r.Stdout != "out\n" || r.Stderr != "err\n" {
				t.Fatalf("run: %+v", r)
			}
		}
		runtime.ReadMemStats(&m1)
		least = min(least, (m1.TotalAlloc-m0.TotalAlloc)/n)
	}
	if least > bound {
		t.Errorf("a run of a command allocated %d bytes on average (the least of three batches), want at most %d", least, bound)
	}
}
