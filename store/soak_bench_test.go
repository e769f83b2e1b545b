//go:build linux && cgo

package store

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/store/churntest"
)

// BenchmarkStoreSoak is opt-in (HOOKD_SOAK=10m; not run otherwise, CI
// included): for that long, 20 runs a second, from 8 writers, each a
// shell step's 1 MB of base64 text, stored, indexed by the background
// indexer and read back (as the dashboard and API read a run), with
// retention keeping 6 runs pruning every 2 s (churntest.Churn's Soak). It samples the process's
// RSS every 5 s and prints its slope after the first 2 minutes (target
// <= 20 MB/h), its peak (target <= 100 MB), the Go heap beside it, and
// the database file over the live rows at the end (target <= 1.5). Linux
// only: it reads the RSS from /proc.
//
//	HOOKD_SOAK=10m go test ./store -run '^$' -bench BenchmarkStoreSoak -benchtime=1x -timeout 30m
func BenchmarkStoreSoak(b *testing.B) {
	soak, err := time.ParseDuration(os.Getenv("HOOKD_SOAK"))
	if err != nil || soak <= 0 {
		b.Skip("opt-in: set HOOKD_SOAK to how long to soak (10m)")
	}
	for b.Loop() {
		storeSoak(b, soak)
	}
}

func storeSoak(b *testing.B, soak time.Duration) {
	d, _ := openTest(b)
	type sample struct {
		at        time.Duration
		rss, heap float64 // MB
		gomem     float64 // MB the Go runtime holds from the OS (Sys less released)
		cheld     float64 // MB glibc's malloc holds from the OS (arenas and mapped blocks)
		cuse      float64 // MB allocated from it
		sqlite    float64 // MB of it SQLite counts as its own
	}
	var samples []sample
	profile := os.Getenv("HOOKD_SOAK_HEAPPROFILE") // a heap profile at the RSS peak
	peakSoFar := 0.0
	take := func(at time.Duration) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		held, inUse, sq := cMemory()
		s := sample{at, testtool.RSSMB(b, 0), float64(ms.HeapInuse) / 1e6, float64(ms.Sys-ms.HeapReleased) / 1e6,
			float64(held) / 1e6, float64(inUse) / 1e6, float64(sq) / 1e6}
		samples = append(samples, s)
		if profile != "" && s.rss > peakSoFar {
			peakSoFar = s.rss
			writeHeapProfile(b, profile)
		}
	}
	res := churn(b, d).Soak(b, churntest.Soak{For: soak, Writers: 8, PerSecond: 20, PruneEvery: 2 * time.Second,
		SampleEvery: 5 * time.Second, Sample: take})

	warm := min(2*time.Minute, soak/5)
	var xs, ys []float64
	peak, heapPeak, goPeak := 0.0, 0.0, 0.0
	var atPeak sample
	for _, s := range samples {
		if s.rss > peak {
			atPeak = s
		}
		peak, heapPeak, goPeak = max(peak, s.rss), max(heapPeak, s.heap), max(goPeak, s.gomem)
		if s.at >= warm {
			xs, ys = append(xs, s.at.Hours()), append(ys, s.rss)
		}
	}
	slope := testtool.Slope(xs, ys)
	last := samples[len(samples)-1]
	b.ReportMetric(slope, "rss-MB/h")
	b.ReportMetric(peak, "peak-rss-MB")
	b.Logf("glibc malloc settings hookd set at start: %d of 2; %d runs of 1 MB in %s (%.1f/s): RSS slope after %s %.0f MB/h (target <= 20), peak %.0f MB (target <= 100), at the end %.0f MB; "+
		"Go heap in use peak %.0f MB, at the end %.0f MB; the Go runtime's memory (Sys less released) peak %.0f MB, at the end %.0f MB",
		mallocTuned, res.Runs, soak, float64(res.Runs)/soak.Seconds(), warm, slope, peak, last.rss, heapPeak, last.heap, goPeak, last.gomem)
	b.Logf("at the end: %s", res.End)
	b.Logf("at the RSS peak (%s): RSS %.0f MB = the Go runtime %.0f MB (heap in use %.0f) + glibc's malloc %.0f MB held (%.0f allocated, SQLite's count %.0f) + the rest (program text, stacks of C threads) %.0f",
		atPeak.at.Round(time.Second), atPeak.rss, atPeak.gomem, atPeak.heap, atPeak.cheld, atPeak.cuse, atPeak.sqlite, atPeak.rss-atPeak.gomem-atPeak.cheld)
	for _, s := range samples {
		if testing.Verbose() {
			b.Logf("%6s rss %5.1f go %5.1f heap %5.1f cheld %5.1f cuse %5.1f sqlite %5.1f", s.at.Round(time.Second), s.rss, s.gomem, s.heap, s.cheld, s.cuse, s.sqlite)
		}
	}
}

// writeHeapProfile writes the heap profile to path, after a collection.
func writeHeapProfile(tb testing.TB, path string) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		tb.Fatal(err)
	}
}
