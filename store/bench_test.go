package store

import (
	"context"
	"fmt"
	"strings"
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
