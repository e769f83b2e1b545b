package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
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
	steps := []*engine.StepResult{{Index: 0, Type: "shell", Output: "ok", Started: t0, Duration: time.Millisecond}}
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

// BenchmarkPrune1M builds a database of 1,000,000 finished runs of 20
// hooks over 60 days (in one transaction with one prepared insert), then
// prints: how long `hookd runs --limit 50` takes (all hooks, and one
// hook), what pruning with the default retention costs, the longest a
// write of the daemon waited meanwhile, and the list query again after.
// It runs only with -bench (go test -run '^$' -bench Prune1M -benchtime 1x ./store).
func BenchmarkPrune1M(b *testing.B) {
	const total, hooks = 1_000_000, 20
	ctx := context.Background()
	d, _ := openTest(b)
	now := t0.Add(60 * 24 * time.Hour)
	step := 60 * 24 * time.Hour / total

	// One transaction, one prepared insert of rowsPerInsert rows, and a
	// page cache that holds the indexes, so pages are not spilled to the
	// WAL and written again.
	const rowsPerInsert = 100
	start := time.Now()
	if _, err := d.w.ExecContext(ctx, "PRAGMA cache_size = -262144"); err != nil {
		b.Fatal(err)
	}
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO runs (id, hook, "trigger", slot, status, reason, steps,
		response, queued_at, started_at, finished_at) VALUES `+
		strings.TrimSuffix(strings.Repeat("(?, ?, 'schedule', ?, ?, ?, ?, ?, ?, ?, ?), ", rowsPerInsert), ", "))
	if err != nil {
		b.Fatal(err)
	}
	steps := `[{"index":1,"type":"shell","output":"ok","started":"2025-03-14T15:09:26Z","duration_ns":1000000}]`
	args := make([]any, 0, rowsPerInsert*10)
	for i := range total {
		at := t0.Add(time.Duration(i) * step).UnixNano()
		status, reason, st, resp := "completed", "", any(steps), "all good"
		if i%10 == 9 {
			status, reason, st, resp = "skipped", "in_flight: run X was still running", nil, ""
		}
		args = append(args, fmt.Sprintf("R%025d", i), fmt.Sprintf("hook%02d", i%hooks), at,
			status, reason, st, resp, at, at, at+int64(time.Millisecond))
		if len(args) == cap(args) {
			if _, err := ins.ExecContext(ctx, args...); err != nil {
				b.Fatal(err)
			}
			args = args[:0]
		}
	}
	mustRun(b, ins.Close())
	mustRun(b, tx.Commit())
	b.ReportMetric(time.Since(start).Seconds(), "build_s")

	list := func(name string, f engine.RunFilter) {
		const n = 50
		var worst, sum time.Duration
		for range n {
			t := time.Now()
			runs, err := d.ListRuns(ctx, f)
			if err != nil || len(runs) != 50 {
				b.Fatalf("list: %d runs, %v", len(runs), err)
			}
			el := time.Since(t)
			sum += el
			worst = max(worst, el)
		}
		b.ReportMetric(float64(sum.Microseconds())/n/1000, name+"_mean_ms")
		b.ReportMetric(float64(worst.Microseconds())/1000, name+"_max_ms")
	}
	list("runs_limit50", engine.RunFilter{Limit: 50})
	list("runs_hook_limit50", engine.RunFilter{Hook: "hook07", Limit: 50})

	// The daemon's writes go on while pruning: each waits for at most one batch.
	stop := make(chan struct{})
	waits := make(chan time.Duration, 1)
	go func() {
		var worst time.Duration
		for i := 0; ; i++ {
			select {
			case <-stop:
				waits <- worst
				return
			case <-time.After(5 * time.Millisecond):
			}
			t := time.Now()
			r := &engine.Run{ID: engine.NewID(), Hook: "writer", Trigger: "manual", Status: engine.StatusSkipped,
				Gate: engine.GateCooldown, Reason: fmt.Sprintf("cooldown: %d", i), QueuedAt: now, FinishedAt: now}
			if err := d.InsertRun(ctx, r); err != nil {
				b.Error(err)
			}
			worst = max(worst, time.Since(t))
		}
	}()
	st, err := d.Prune(ctx, now, PrunePolicy{Retention: engine.Retention{Runs: 30 * 24 * time.Hour, KeepLast: 100,
		Events: 7 * 24 * time.Hour, Skipped: 3 * 24 * time.Hour}})
	close(stop)
	worst := <-waits
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(st.Took.Seconds(), "prune_s")
	b.ReportMetric(float64(st.Runs+st.Skipped), "pruned_rows")
	b.ReportMetric(float64(st.Runs+st.Skipped)/st.Took.Seconds(), "pruned_rows/s")
	b.ReportMetric(float64(st.FreedBytes)/(1<<20), "freed_MB")
	b.ReportMetric(float64(worst.Microseconds())/1000, "max_write_wait_ms")
	list("after_runs_limit50", engine.RunFilter{Limit: 50})
}

// BenchmarkRunPath records one run per iteration the way an event-started
// run of one shell step reaches the store: StartRunWithEvent (the event
// and the run's start, one commit), with the previous run's four
// lifecycle events (hook.run.started, hook.step.started,
// hook.step.finished, hook.run.completed) waiting in AppendEventsLater
// to ride the next commit that takes them, then AddRunProc and FinishRun. It runs on one
// goroutine bar the events' writer, so ns/op is close to the store's CPU
// a run; it prints the process's CPU time, commits, writes and pages
// written to the WAL a run.
func BenchmarkRunPath(b *testing.B) {
	d, path := openTest(b)
	p := &runPath{d: d}
	for i := range 200 { // a table of some size, and a warm cache
		p.run(b, -1-i)
	}
	shm, err := os.Open(path + "-shm")
	if err != nil {
		b.Fatal(err)
	}
	defer shm.Close()
	w0 := d.WriteStats()
	var frames int64
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	for i := range b.N {
		f0 := walFrames(b, shm)
		p.run(b, i)
		b.StopTimer()
		if f1 := walFrames(b, shm); f1 >= f0 {
			frames += int64(f1 - f0)
		} else { // the log restarted after a checkpoint
			frames += int64(f1)
		}
		b.StartTimer()
	}
	b.StopTimer()
	cpu := processCPU(b) - cpu0
	w1 := d.WriteStats()
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/run")
	b.ReportMetric(float64(w1.Commits-w0.Commits)/float64(b.N), "commits/run")
	b.ReportMetric(float64(w1.Writes-w0.Writes)/float64(b.N), "writes/run")
	b.ReportMetric(float64(frames)/float64(b.N), "wal-pages/run")
}

// processCPU is the CPU time the process used so far (user and system):
// unlike ns/op, a figure that other processes on a busy machine change
// little.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// walFrames reads the number of frames in the write-ahead log from the
// WAL index (mxFrame, at byte 16 of the -shm file's header).
func walFrames(b *testing.B, shm *os.File) uint32 {
	var buf [4]byte
	if _, err := shm.ReadAt(buf[:], 16); err != nil {
		b.Fatal(err)
	}
	return binary.NativeEndian.Uint32(buf[:])
}

// runPath records runs as BenchmarkRunPath describes.
type runPath struct {
	d    *DB
	prev []*engine.Event // the previous run's events, stored with the next start
}

// run records run i.
func (p *runPath) run(tb testing.TB, i int) {
	ctx := context.Background()
	exit := 0
	var done chan error
	if p.prev != nil {
		// What AppendEventsLater does, its encoding on this goroutine,
		// so that waiting for the write to queue costs no spinning.
		write, err := p.d.insertEvents(p.prev)
		if err != nil {
			tb.Fatal(err)
		}
		done = make(chan error, 1)
		go func() { done <- p.d.writeLater(ctx, write) }()
	queued:
		for { // wait until they are queued, as the engine's are by then
			p.d.gc.mu.Lock()
			n := len(p.d.gc.later)
			p.d.gc.mu.Unlock()
			if n > 0 {
				break
			}
			select {
			case err := <-done: // a busy machine let LaterDelay pass: committed already
				done <- err
				break queued
			default:
			}
			runtime.Gosched()
		}
	}
	now := t0.Add(time.Duration(i) * time.Millisecond)
	r := &engine.Run{ID: engine.NewID(), Hook: "p0", Trigger: "event:bench.p0", EventType: "bench.p0",
		Event: json.RawMessage(`{}`), QueuedAt: now, StartedAt: now, Status: engine.StatusRunning, Depth: 1}
	ev := &engine.Event{Type: "bench.p0", Source: "bench", Time: now}
	if err := p.d.StartRunWithEvent(ctx, r, ev); err != nil {
		tb.Fatal(err)
	}
	if err := p.d.AddRunProc(ctx, r.ID, engine.ProcGroup{PGID: 4242 + i, Start: 123456789, Boot: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"}); err != nil {
		tb.Fatal(err)
	}
	step := &engine.StepResult{Index: 0, Type: "shell", Started: now, Duration: 2 * time.Millisecond, ExitCode: &exit}
	started := engine.RunEvent(r)
	r.Status, r.Steps, r.FinishedAt = engine.StatusCompleted, []*engine.StepResult{step}, now.Add(3*time.Millisecond)
	stepData := func(fin bool) map[string]any {
		m := map[string]any{"hook": r.Hook, "run_id": r.ID, "index": 0, "name": "", "kind": "shell",
			"started_at": now.UTC().Format(time.RFC3339Nano)}
		if fin {
			m["duration_ms"], m["outcome"], m["exit_code"] = int64(2), "ok", 0
		}
		return m
	}
	if err := p.d.FinishRun(ctx, r); err != nil {
		tb.Fatal(err)
	}
	p.prev = []*engine.Event{started,
		{ID: engine.NewID(), Type: "hook.step.started", Data: stepData(false), Source: "engine", Depth: 2, Time: now},
		{ID: engine.NewID(), Type: "hook.step.finished", Data: stepData(true), Source: "engine", Depth: 2, Time: now},
		engine.RunEvent(r)}
	for _, e := range p.prev {
		e.Time = now
	}
	if done != nil {
		if err := <-done; err != nil {
			tb.Fatal(err)
		}
	}
}
