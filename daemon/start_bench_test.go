package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/store"
)

// BenchmarkServeStart starts what `hookd serve` starts, on a fresh
// database each time, with a hooks.d of 10,000 hooks (interval, cron,
// and two kinds of event trigger): the lock, the database, loading the
// files, the engine (hook states, schedules, event index), the dispatch
// of pending events, and the watcher of the hooks directory. It prints
// the seconds to ready (target: 1 s) and, of them, the seconds after
// loading (engine and watcher), and the CPU seconds the process spent
// (user+system, all threads: on a shared machine the steadier figure).
//
//	go test -run '^$' -bench 'BenchmarkServeStart$' -benchtime 3x ./daemon/
func BenchmarkServeStart(b *testing.B) {
	const n = 10_000
	dir := b.TempDir()
	hooks := filepath.Join(dir, "hooks.d")
	if err := os.Mkdir(hooks, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		trigger := [...]string{
			fmt.Sprintf("{every: %dh}", 1+i%24),
			fmt.Sprintf("{cron: \"%d */%d * * *\", timezone: Europe/Berlin}", i%60, 1+i%6),
			fmt.Sprintf("{event: deploy.svc%d.*, where: {env: prod}}", i%100),
			"{event: hook.run.failed}",
		}[i%4]
		hook := fmt.Sprintf("trigger: %s\nsteps:\n  - type: shell\n    command: echo %d\nskip_llm: true\n", trigger, i)
		if err := os.WriteFile(filepath.Join(hooks, fmt.Sprintf("h%05d.yaml", i)), []byte(hook), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var total, engine, cpu time.Duration
	i := 0
	for b.Loop() {
		i++
		d, err := config.LoadDaemonFile(os.DevNull)
		if err != nil {
			b.Fatal(err)
		}
		d.HooksDir = hooks
		d.SetDatabase(filepath.Join(dir, fmt.Sprintf("db%d", i), "hookd.db"))
		if err := os.MkdirAll(filepath.Dir(d.DB), 0o700); err != nil {
			b.Fatal(err)
		}
		cpu0 := testtool.SelfCPU(b)
		start := time.Now()
		l, err := Open(context.Background(), d, store.Daemon, log, false)
		if err != nil {
			b.Fatal(err)
		}
		if len(l.Hooks) != n {
			b.Fatalf("loaded %d hooks, want %d", len(l.Hooks), n)
		}
		ctx := context.Background()
		if _, err := l.SQLite.EnableIncrementalVacuum(ctx); err != nil {
			b.Fatal(err)
		}
		estart := time.Now()
		if err := l.Engine.Start(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := l.Engine.DispatchPending(ctx); err != nil {
			b.Fatal(err)
		}
		rl, err := startReloader(d, l, log)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		cpu += testtool.SelfCPU(b) - cpu0
		total += now.Sub(start)
		engine += now.Sub(estart)
		rl.stop()
		l.Close()
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(total.Seconds()/float64(b.N), "s/start")
	b.ReportMetric(engine.Seconds()/float64(b.N), "after-load-s/start")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/start")
}
