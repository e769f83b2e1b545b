package store

import (
	"context"
	"runtime"
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

// TestStepsArgAllocatesOutputOnce: encoding the steps of a run whose
// shell step printed 1 MiB of text with line breaks (escaped in JSON)
// allocates about the encoding's size once, not several copies of it
// (json.Marshal's copy of the quoted output, the buffer outgrown by the
// escapes, the text copied from the bytes: 4.4 MB for 1 MiB). Each try
// follows two collections, which empty sync.Pools, as collections do
// under load: encoding/json's Encoder quoted the output into a pooled
// buffer that was then a fresh one (2.5 MB for 1 MiB). The fewest bytes
// of five tries count, should another goroutine allocate meanwhile.
func TestStepsArgAllocatesOutputOnce(t *testing.T) {
	line := strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo", 2) + "\n"
	out := strings.Repeat(line, (1<<20)/len(line))
	steps := []*engine.StepResult{{Index: 0, Name: "dump", Type: "shell", Output: out, ExitCode: new(0),
		Fields: map[string]any{"stdout": out, "stderr": "", "command": "cat dump"}}}
	least := uint64(1 << 62)
	var size int
	for range 5 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&before)
		v, err := StepsArg(steps)
		runtime.ReadMemStats(&after)
		mustRun(t, err)
		size = len(v.(string))
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	t.Logf("%d bytes allocated for %d bytes of steps", least, size)
	if least > uint64(size)*3/2 {
		t.Errorf("encoding %d bytes of steps allocated %d bytes; want at most 1.5 times the encoding", size, least)
	}
}

// TestLargeRunTrimsCHeap: the write of a run whose step printed 1 MiB is
// followed by a trim of the C heap (trim.go), that of a small run not,
// and a second large run within trimEvery not either.
func TestLargeRunTrimsCHeap(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	finish := func(out string) {
		r := &engine.Run{ID: engine.NewID(), Hook: "dump", Trigger: "manual", Status: engine.StatusRunning, StartedAt: t0, QueuedAt: t0}
		mustRun(t, d.StartRun(ctx, r))
		r.Status, r.FinishedAt = engine.StatusCompleted, t0.Add(time.Second)
		r.Steps = []*engine.StepResult{{Index: 0, Name: "dump", Type: "shell", Output: out, ExitCode: new(0)}}
		mustRun(t, d.FinishRun(ctx, r))
	}
	finish("small")
	if n := d.tr.count.Load(); n != 0 {
		t.Errorf("%d trims after a small run, want none", n)
	}
	finish(strings.Repeat("0123456789abcdef\n", 1<<16)) // 1.06 MiB
	if n := d.tr.count.Load(); n != 1 {
		t.Errorf("%d trims after a run of 1 MiB, want 1", n)
	}
	if d.sinceOpen() < time.Duration(d.tr.next.Load()) {
		finish(strings.Repeat("0123456789abcdef\n", 1<<16))
		if n := d.tr.count.Load(); n != 1 {
			t.Errorf("%d trims after two runs of 1 MiB within %v, want 1", n, trimEvery)
		}
	}
}

// TestGetRunAllocatesOutputTwice: reading back a run whose shell step
// printed 1 MiB of text with line breaks allocates about two copies of
// it, the driver's text of the column and the output decoded from it,
// not four (a byte copy of the text to decode, encoding/json's unquoted
// buffer and the string copied from it). The fewest bytes of five tries
// count, should another goroutine allocate meanwhile.
func TestGetRunAllocatesOutputTwice(t *testing.T) {
	d, _ := openTest(t)
	ctx := context.Background()
	line := strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo", 2) + "\n"
	out := strings.Repeat(line, (1<<20)/len(line))
	r := &engine.Run{ID: engine.NewID(), Hook: "dump", Trigger: "manual", Status: engine.StatusRunning, StartedAt: t0, QueuedAt: t0}
	mustRun(t, d.StartRun(ctx, r))
	r.Status, r.FinishedAt = engine.StatusCompleted, t0.Add(time.Second)
	r.Steps = []*engine.StepResult{{Index: 0, Name: "dump", Type: "shell", Output: out, ExitCode: new(0),
		Fields: map[string]any{"stdout": out, "stderr": "", "command": "cat dump"}}}
	mustRun(t, d.FinishRun(ctx, r))
	least := uint64(1 << 62)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := d.GetRun(ctx, r.ID)
		runtime.ReadMemStats(&after)
		mustRun(t, err)
		if got.Steps[0].Output != out || got.Steps[0].Fields["stdout"] != out {
			t.Fatalf("read back another output (%d bytes, stdout %T)", len(got.Steps[0].Output), got.Steps[0].Fields["stdout"])
		}
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	t.Logf("%d bytes allocated to read back %d bytes of output", least, len(out))
	if least > uint64(len(out))*5/2 {
		t.Errorf("reading back %d bytes of output allocated %d bytes; want at most 2.5 times the output", len(out), least)
	}
}

// TestReadersKeepSmallPageCache: the reading connections keep a page
// cache of readerCacheKiB, not SQLite's 2 MB (db.go says why); the writer
// keeps SQLite's default.
func TestReadersKeepSmallPageCache(t *testing.T) {
	d, _ := openTest(t)
	var r, w int
	mustRun(t, d.r.QueryRow("PRAGMA cache_size").Scan(&r))
	mustRun(t, d.w.QueryRow("PRAGMA cache_size").Scan(&w))
	if r != -readerCacheKiB || w != -2000 {
		t.Errorf("cache_size: readers %d, writer %d; want %d and -2000", r, w, -readerCacheKiB)
	}
}
