package config_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/config"
	_ "github.com/hookd/hookd/steps" // the shell step kind
	"github.com/robfig/cron/v3"
)

// BenchmarkLoadHookFiles loads a hooks.d of 10,000 realistic hook files
// (a trigger, a shell step with placeholders, a prompt that names the
// step) with LoadDir, and reports the seconds per load (target: 0.8 s),
// files loaded per second, the CPU seconds the process spent per load
// (user+system, all threads: on a shared machine the steadier figure),
// the process's resident set size after loading (VmRSS, with the loaded
// hooks alive), and the live heap after a collection (HeapInuse) in MB.
//
// In the same run, alternating with the loads, it measures the limit the
// issue names: supercronic's parse of a crontab holding the same 10,000
// jobs (its crontab.ParseCrontab loop: one file read, two regexps a line
// and the cron parser tried at 7, 6 and 5 fields, here robfig/cron's
// as hookd uses it), and reports the ratio of hookd's load to it
// (target 1.0).
//
//	go test -run '^$' -bench 'BenchmarkLoadHookFiles$' -benchtime 3x -count 3 ./config/
func BenchmarkLoadHookFiles(b *testing.B) {
	const n = 10_000
	dir := filepath.Join(b.TempDir(), "hooks.d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		name := filepath.Join(dir, fmt.Sprintf("hook-%05d.yaml", i))
		if err := os.WriteFile(name, benchHookFile(i), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	crontab := filepath.Join(b.TempDir(), "crontab")
	if err := os.WriteFile(crontab, benchCrontab(n), 0o644); err != nil {
		b.Fatal(err)
	}
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
	b.Logf("supercronic-equivalent parse of a crontab of the same %d jobs: %v each (%.0f jobs/s); hookd / crontab: %.2f (target 1.0)",
		n, baseline/time.Duration(b.N), float64(n*b.N)/baseline.Seconds(), elapsed.Seconds()/baseline.Seconds())
}

// benchCrontab returns a crontab of n jobs like the hooks of benchHookFile:
// a comment and a cron line a job, and the environment line supercronic
// reads once.
func benchCrontab(n int) []byte {
	out := []byte("SHELL=/bin/sh\nCRON_TZ=Europe/Berlin\n")
	for i := range n {
		out = fmt.Appendf(out, "# job %[1]d: check service %[2]d\n%[3]d */%[4]d * * * systemctl status svc%[2]d 2>&1 | head -n 20\n",
			i, i%100, i%60, 1+i%6)
	}
	return out
}

// Supercronic's crontab reading, as its crontab.ParseCrontab does it.
var (
	cronJobFields  = regexp.MustCompile(`\S+`)
	cronEnvLine    = regexp.MustCompile(`^([^\s=]+)\s*=\s*(.*)$`)
	cronWithSecond = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	cronStandard   = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
)

// supercronicParse reads the crontab file and parses it as supercronic
// does (without its logging): each line that is not blank, a comment or
// an environment line is a job, whose schedule is its first 7, 6, 5 or 1
// fields, the first count that parses. It returns the number of jobs.
func supercronicParse(file string) (int, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	env := map[string]string{}
	var jobs []cron.Schedule
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimLeft(sc.Text(), " \t")
		if line == "" || line[0] == '#' {
			continue
		}
		if m := cronEnvLine.FindAllStringSubmatch(line, -1); len(m) == 1 && len(m[0]) == 3 {
			env[m[0][1]] = m[0][2]
			continue
		}
		idx := cronJobFields.FindAllStringIndex(line, -1)
		var sched cron.Schedule
		for _, count := range []int{7, 6, 5, 1} {
			if len(idx) <= count {
				continue
			}
			p := cronStandard // 5 fields, or a descriptor (@hourly)
			if count > 5 {
				p = cronWithSecond // robfig has no year field: 7 fails as in supercronic
			}
			if sched, err = p.Parse(line[:idx[count-1][1]]); err == nil {
				break
			}
		}
		if sched == nil {
			return 0, fmt.Errorf("bad crontab line: %q", line)
		}
		jobs = append(jobs, sched)
	}
	return len(jobs), sc.Err()
}

// benchHookFile returns the i-th hook file, in one of four shapes like the
// examples in hooks.d: an interval, a cron schedule, an event with a
// payload filter, and an event from another hook.
func benchHookFile(i int) []byte {
	var trigger string
	switch i % 4 {
	case 0:
		trigger = fmt.Sprintf("  every: %dm\n  jitter: 30s\n", 5+i%55)
	case 1:
		trigger = fmt.Sprintf("  cron: \"%d */%d * * *\"\n  timezone: Europe/Berlin\n  on_missed: skip\n", i%60, 1+i%6)
	case 2:
		trigger = fmt.Sprintf("  event: deploy.svc%d.*\n  where: {env: prod, region: [eu, us]}\n", i%100)
	default:
		trigger = "  event: hook.run.failed\n"
	}
	return fmt.Appendf(nil, `# Hook %[1]d: gather the state of service %[2]d and let the model judge it.
description: Check service %[2]d and report what changed
trigger:
%[3]scooldown: 1m
overlap: queue
timeout: 5m
env: {SERVICE: svc%[2]d, PORT: %[4]d}
secrets: [GITHUB_TOKEN]
steps:
  - name: gather
    type: shell
    command: |
      printf 'service %%s (%%s) at %%s\n' svc%[2]d {{event.env}} {{now}}
      systemctl status "svc%[2]d" 2>&1 | head -n 20
    timeout: 30s
    skip_llm_if_exit_zero: true
  - name: logs
    type: shell
    command: [journalctl, -u, "svc%[2]d", -n, "50", --since, "{{last_run_time}}"]
    skip_llm_if_unchanged: true
system: You are the on-call engineer for svc%[2]d.
prompt: |
  Service svc%[2]d ({{hook}}, run {{run}}) reported:
  {{steps.gather.output}}
  Recent logs:
  {{step_1}}
  Say whether anything needs attention, and what.
llm:
  model: gpt-4o-mini
  max_rounds: 4
budget: {max_tokens_per_run: 20000}
tools: [read_file, list_files]
`, i, i%100, trigger, 8000+i%1000)
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
