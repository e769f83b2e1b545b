package triggers

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store"
)

// BenchmarkWatchLatency measures how long after a file changes its hook's
// run starts, minus the quiet period: inotify, the watcher, the engine's
// gates and the run's start record in SQLite. Each iteration is one
// sample; run it with -benchtime=200x for stable percentiles:
//
//	go test -run '^$' -bench WatchLatency -benchtime=200x ./triggers/
func BenchmarkWatchLatency(b *testing.B) {
	const debounce = 50 * time.Millisecond
	dir := b.TempDir()
	db, err := store.Open(filepath.Join(b.TempDir(), "hookd.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	hook := &engine.Hook{Name: "bench", Enabled: true, Overlap: engine.OverlapSkip, SkipLLM: true,
		Trigger: engine.Trigger{Kind: engine.TriggerWatch, Watch: &engine.WatchSpec{Paths: []string{dir}, Debounce: debounce}}}
	eng, err := engine.New(engine.Config{Store: db, Logger: quiet}, []*engine.Hook{hook})
	if err != nil {
		b.Fatal(err)
	}
	started := make(chan time.Time, 16)
	finished := make(chan struct{}, 16)
	eng.Subscribe(func(ev *engine.Event) {
		switch ev.Type {
		case engine.EventRunStarted:
			started <- time.Now()
		case engine.EventRunCompleted, engine.EventRunFailed, engine.EventRunSkipped:
			finished <- struct{}{}
		}
	})
	if err := eng.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer eng.Stop()
	w := NewWatcher(WatcherOptions{Target: eng, Logger: quiet})
	if err := w.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	if err := w.SetHooks(context.Background(), []*engine.Hook{hook}); err != nil {
		b.Fatal(err)
	}

	var lat []time.Duration
	p := filepath.Join(dir, "file.txt")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := os.WriteFile(p, []byte(strconv.Itoa(i)), 0o644); err != nil {
			b.Fatal(err)
		}
		select {
		case t1 := <-started:
			lat = append(lat, t1.Sub(t0)-debounce)
		case <-time.After(time.Minute):
			b.Fatal("the run never started")
		}
		<-finished
	}
	b.StopTimer()
	slices.Sort(lat)
	p50, p99 := percentile(lat, 50), percentile(lat, 99)
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
	b.Logf("file change -> run start, minus the %s quiet period, %d samples: p50 %s, p99 %s, max %s",
		debounce, len(lat), p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond))
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

// BenchmarkWatchTree10k measures starting a recursive watch of a tree of
// 10,000 folders (with a file in each): the time SetHooks takes until
// every folder is watched, and the process's resident memory then.
//
//	go test -run '^$' -bench WatchTree10k -benchtime=1x ./triggers/
func BenchmarkWatchTree10k(b *testing.B) {
	const dirs = 10_000
	if limit := readSysctl("max_user_watches"); limit != "unknown" {
		if n, _ := strconv.Atoi(limit); n < dirs+1000 {
			b.Skipf("fs.inotify.max_user_watches is %d, too low to watch %d folders; raise it with `sysctl -w fs.inotify.max_user_watches=524288`", n, dirs)
		}
	}
	root := b.TempDir()
	made := 0
	for i := 0; made < dirs; i++ {
		top := filepath.Join(root, fmt.Sprintf("d%03d", i))
		for j := 0; j < 100 && made < dirs; j++ {
			sub := top
			if j > 0 {
				sub = filepath.Join(top, fmt.Sprintf("s%02d", j))
			}
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, "f.txt"), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
			made++
		}
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	hook := &engine.Hook{Name: "tree", Enabled: true,
		Trigger: engine.Trigger{Kind: engine.TriggerWatch, Watch: &engine.WatchSpec{Paths: []string{root}, Recursive: true, Debounce: time.Second}}}
	runtime.GC()
	rssBefore := rssBytes()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := NewWatcher(WatcherOptions{Target: newTarget(), Logger: quiet})
		if err := w.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if err := w.SetHooks(context.Background(), []*engine.Hook{hook}); err != nil {
			b.Fatal(err)
		}
		took := time.Since(t0)
		b.StopTimer()
		st, err := w.Stats(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if st.Dirs != dirs+1 || len(st.Polling) > 0 {
			b.Fatalf("watching %d folders (want %d), polling %v", st.Dirs, dirs+1, st.Polling)
		}
		rss := rssBytes()
		b.ReportMetric(took.Seconds(), "s-to-watch")
		b.ReportMetric(float64(rss)/(1<<20), "MB-rss")
		b.Logf("watching %d folders took %s; RSS %.1f MB (%.1f MB before the watch)",
			st.Dirs, took.Round(time.Millisecond), float64(rss)/(1<<20), float64(rssBefore)/(1<<20))
		w.Stop()
		b.StartTimer()
	}
}

// rssBytes is the process's resident set size.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
