package bench_test

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sccrontab "github.com/aptible/supercronic/crontab"
	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/internal/benchhooks"
	_ "github.com/hookd/hookd/steps" // the shell step kind
	_ "github.com/hookd/hookd/tools" // the built-in tools the files list
	"github.com/sirupsen/logrus"
)

// BenchmarkLoadHookFiles loads a hooks.d of 10,000 realistic hook files
// (benchhooks.HookFile: a trigger, a shell step with placeholders, a
// prompt that names the step) with LoadDir, and reports the seconds per
// load (target: 0.8 s), files loaded per second, the CPU seconds the
// process spent per load (user+system, all threads: on a shared machine
// the steadier figure), the process's resident set size after loading
// (VmRSS, with the loaded hooks alive), and the live heap after a
// collection (HeapInuse) in MB.
//
// In the same run, alternating with the loads, it measures the limit the
// issue names: supercronic's parse of a crontab holding the same 10,000
// jobs (benchhooks.Crontab), with supercronic's own code — its
// crontab.ParseCrontab, as `supercronic -test` calls it: one file read,
// two regexps a line and its cronexpr parser tried at 7, 6 and 5 fields —
// and reports the seconds per parse (s/crontab) and the ratio of hookd's
// load to it (target 1.0). supercronic is required by this module only:
// neither hookd's module nor its binary has it.
//
//	cd bench && go test -run '^$' -bench 'BenchmarkLoadHookFiles$' -benchtime 3x -count 3 .
func BenchmarkLoadHookFiles(b *testing.B) {
	const n = 10_000
	dir := filepath.Join(b.TempDir(), "hooks.d")
	if err := benchhooks.WriteDir(dir, n); err != nil {
		b.Fatal(err)
	}
	crontab := filepath.Join(b.TempDir(), "crontab")
	if err := benchhooks.WriteCrontab(crontab, n); err != nil {
		b.Fatal(err)
	}
	// ParseCrontab logs its SHELL and CRON_TZ lines at info level, as
	// supercronic does; they are formatted as there, and not printed.
	logrus.SetOutput(io.Discard)
	defer logrus.SetOutput(os.Stderr)
	runtime.GC()
	base := vmRSS(b)

	var hooks any
	var elapsed, baseline, cpu time.Duration
	for b.Loop() {
		hooks = nil // the previous load is garbage, as after a reload
		cpu0 := cpuTime(b)
		start := time.Now()
		hs, errs := config.LoadDir(dir, config.Options{})
		elapsed += time.Since(start)
		cpu += cpuTime(b) - cpu0
		if len(errs) > 0 {
			b.Fatalf("%d errors; the first: %v", len(errs), errs[0])
		}
		if len(hs) != n {
			b.Fatalf("loaded %d hooks, want %d", len(hs), n)
		}
		hooks = hs

		b.StopTimer()
		runtime.GC()
		start = time.Now()
		jobs, err := supercronicParse(crontab)
		baseline += time.Since(start)
		if err != nil || jobs != n {
			b.Fatalf("crontab: %d jobs, %v; want %d", jobs, err, n)
		}
		b.StartTimer()
	}
	rss := vmRSS(b)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(hooks)

	const mb = 1 << 20
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/load")
	b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "files/s")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/load")
	b.ReportMetric(float64(rss)/mb, "rss-MB")
	b.ReportMetric(float64(ms.HeapInuse)/mb, "heap-MB")
	b.ReportMetric(baseline.Seconds()/float64(b.N), "s/crontab")
	b.ReportMetric(elapsed.Seconds()/baseline.Seconds(), "ratio")
	b.Logf("%d loads of %d files: %v each (%.0f files/s, %v CPU), GOMAXPROCS %d; VmRSS %.1f MB (%.1f MB before loading), HeapInuse %.1f MB after GC",
		b.N, n, elapsed/time.Duration(b.N), float64(n*b.N)/elapsed.Seconds(), cpu/time.Duration(b.N), runtime.GOMAXPROCS(0),
		float64(rss)/mb, float64(base)/mb, float64(ms.HeapInuse)/mb)
	b.Logf("supercronic's crontab.ParseCrontab of a crontab of the same %d jobs: %v each (%.0f jobs/s); hookd / supercronic: %.2f (target 1.0)",
		n, baseline/time.Duration(b.N), float64(n*b.N)/baseline.Seconds(), elapsed.Seconds()/baseline.Seconds())
}

// supercronicParse reads the crontab file as `supercronic -test` does
// (its readCrontabAtPath: open the file, crontab.ParseCrontab) and
// returns the number of jobs.
func supercronicParse(file string) (int, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	tab, err := sccrontab.ParseCrontab(f)
	if err != nil {
		return 0, err
	}
	return len(tab.Jobs), nil
}

// cpuTime returns the user and system CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// vmRSS returns the process's resident set size from /proc/self/status.
func vmRSS(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("VmRSS %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
