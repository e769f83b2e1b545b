//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

// BenchmarkDaemonSoak is BenchmarkStoreSoak (package store) as a user
// sees it, opt-in the same way (HOOKD_SOAK=10m; not run otherwise, CI
// included): `hookd serve`, the real binary, with 8 hooks whose shell
// step prints 1 MB of base64 text (`head -c 786432 /dev/urandom |
// base64`), retention keeping 6 runs a hook, pruning every 2 s, and
// sandbox: off; 8 publishers POST an event to their hook over the API
// socket, 20 a second in all, and read the run back when it ends (GET
// /v1/runs/ID/wait answers the run with its steps). It samples the
// daemon's RSS (/proc/PID/status) every 5 s and prints its slope after
// the first 2 minutes (target <= 20 MB/h), its peak (target <= 100 MB),
// the database file at the end, and the daemon's Go heap beside them
// (from GODEBUG=gctrace=1). Linux only.
//
//	HOOKD_SOAK=10m go test ./cmd/hookd -run '^$' -bench BenchmarkDaemonSoak -benchtime=1x -timeout 30m
func BenchmarkDaemonSoak(b *testing.B) {
	soak, err := time.ParseDuration(os.Getenv("HOOKD_SOAK"))
	if err != nil || soak <= 0 {
		b.Skip("opt-in: set HOOKD_SOAK to how long to soak (10m)")
	}
	for b.Loop() {
		daemonSoak(b, soak)
	}
}

func daemonSoak(b *testing.B, soak time.Duration) {
	const pubs, perSecond = 8, 20
	dir, err := os.MkdirTemp("", "hks") // not b.TempDir: the socket path must stay short
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Mkdir(filepath.Join(dir, "hooks.d"), 0o755); err != nil {
		b.Fatal(err)
	}
	files := map[string]string{"hookd.yaml": fmt.Sprintf("max_concurrent: %d\nsandbox: off\nretention: {runs: 1s, keep_last: 6, every: 2s}\n", pubs)}
	for i := range pubs {
		files[fmt.Sprintf("hooks.d/p%d.yaml", i)] = fmt.Sprintf("trigger: {event: soak.p%d}\nsteps:\n"+
			"  - type: shell\n    command: head -c 786432 /dev/urandom | base64\n    max_output: 2097152\nskip_llm: true\n", i)
	}
	for rel, body := range files {
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	log := &logBuffer{}
	pid := os.Getpid()
	// HOOKD_SOAK_HEAPPROFILE=FILE runs the daemon in this process, not
	// the binary, and writes its heap profile to FILE when its heap in use
	// is at its largest (sampled every second): what holds the heap under
	// the load. The RSS figures are then the test's own as well.
	profile := os.Getenv("HOOKD_SOAK_HEAPPROFILE")
	if profile != "" {
		sigs, done := make(chan os.Signal, 2), make(chan struct{})
		go func() {
			runIn(host{dir: dir, stdin: strings.NewReader(""), signals: sigs}, []string{"serve"}, log, log)
			close(done)
		}()
		defer func() {
			sigs <- syscall.SIGTERM
			sigs <- syscall.SIGTERM
			<-done
		}()
	} else {
		cmd := exec.Command(hookdBin, "serve")
		// gctrace: the daemon's Go heap at each collection, on its stderr,
		// tells its own heap from the rest of its RSS (SQLite's C heap).
		cmd.Dir, cmd.Env = dir, append(childEnv(), "GODEBUG=gctrace=1")
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}()
		pid = cmd.Process.Pid
	}
	call := benchAPI(b, dir, log, pubs)

	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var runs atomic.Int64
	for p := range pubs {
		body, _ := json.Marshal(api.EmitRequest{Type: fmt.Sprintf("soak.p%d", p)})
		wg.Go(func() {
			tick := time.NewTicker(time.Second * pubs / perSecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				var ans api.EmitAnswer
				if err := call("POST", "/v1/events", body, &ans); err != nil || len(ans.Runs) != 1 {
					b.Errorf("emit: %d runs, %v", len(ans.Runs), err)
					return
				}
				var final engine.Run
				if err := call("GET", "/v1/runs/"+ans.Runs[0].ID+"/wait", nil, &final); err != nil {
					b.Error(err)
					return
				}
				if final.Status != engine.StatusCompleted || len(final.Steps) != 1 || len(final.Steps[0].Output) < 1<<20 {
					b.Errorf("run %s: %s, %d steps, %v", final.ID, final.Status, len(final.Steps), final.Error)
					return
				}
				runs.Add(1)
			}
		})
	}
	type sample struct {
		at  time.Duration
		rss float64 // MB
	}
	var samples []sample
	if profile != "" {
		wg.Go(func() { heapProfileAtPeak(b, profile, stop) })
	}
	tick := time.NewTicker(5 * time.Second)
	for samples = append(samples, sample{0, testtool.RSSMB(b, pid)}); time.Since(start) < soak && !b.Failed(); {
		<-tick.C
		samples = append(samples, sample{time.Since(start), testtool.RSSMB(b, pid)})
	}
	tick.Stop()
	close(stop)
	wg.Wait()
	fi, err := os.Stat(filepath.Join(dir, ".hookd", "hookd.db"))
	if err != nil {
		b.Fatal(err)
	}

	warm := min(2*time.Minute, soak/5)
	var xs, ys []float64
	peak := 0.0
	for _, s := range samples {
		peak = max(peak, s.rss)
		if s.at >= warm {
			xs, ys = append(xs, s.at.Hours()), append(ys, s.rss)
		}
	}
	slope := testtool.Slope(xs, ys)
	n := runs.Load()
	b.ReportMetric(slope, "rss-MB/h")
	b.ReportMetric(peak, "peak-rss-MB")
	b.Logf("hookd serve: %d runs of 1 MB in %s (%.1f/s): RSS slope after %s %.0f MB/h (target <= 20), peak %.0f MB (target <= 100), at the start %.0f MB, at the end %.0f MB; database file %.2f MB",
		n, soak, float64(n)/soak.Seconds(), warm, slope, peak, samples[0].rss, samples[len(samples)-1].rss, float64(fi.Size())/1e6)
	heapMax, liveMax, goalMax, gcs := goHeapOfTrace(log.String())
	b.Logf("the daemon's Go heap (GODEBUG=gctrace=1): at most %d MB when a collection started, %d MB live after one, heap goal at most %d MB; %d collections", heapMax, liveMax, goalMax, gcs)
	if testing.Verbose() {
		for _, s := range samples {
			b.Logf("%6s rss %5.1f", s.at.Round(time.Second), s.rss)
		}
	}
}

// gcTraceLine is a line gctrace prints: its heap at the collection's
// start, end and live, and the goal: "4->5->1 MB, 8 MB goal".
var gcTraceLine = regexp.MustCompile(`(\d+)->(\d+)->(\d+) MB, (\d+) MB goal`)

// goHeapOfTrace is the largest heap at the start of a collection, live
// after one and goal in the gctrace lines of log, and how many there
// were.
func goHeapOfTrace(log string) (heapMax, liveMax, goalMax, n int) {
	for _, m := range gcTraceLine.FindAllStringSubmatch(log, -1) {
		start, _ := strconv.Atoi(m[1])
		live, _ := strconv.Atoi(m[3])
		goal, _ := strconv.Atoi(m[4])
		heapMax, liveMax, goalMax, n = max(heapMax, start), max(liveMax, live), max(goalMax, goal), n+1
	}
	return heapMax, liveMax, goalMax, n
}

// heapProfileAtPeak samples this process's heap in use every second until
// stop and writes a heap profile to file whenever it is the largest yet.
func heapProfileAtPeak(b *testing.B, file string, stop <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var peak uint64
	for {
		select {
		case <-stop:
			b.Logf("heap profile at the peak of the heap in use (%d MB) in %s", peak>>20, file)
			return
		case <-tick.C:
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse <= peak {
			continue
		}
		peak = ms.HeapInuse
		f, err := os.Create(file)
		if err != nil {
			b.Error(err)
			return
		}
		// debug 0 with a collection first (WriteHeapProfile's figures are
		// those of the last collection): what is live at this moment.
		runtime.GC()
		err = pprof.Lookup("heap").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			b.Error(err)
			return
		}
	}
}
