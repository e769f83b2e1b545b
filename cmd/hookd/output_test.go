package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/api/client"
	"github.com/hookd/hookd/engine"
)

// writeCounter counts the writes made through it to w.
type writeCounter struct {
	w      io.Writer
	writes int
}

func (c *writeCounter) Write(p []byte) (int, error) {
	c.writes++
	return c.w.Write(p)
}

// TestListOutputBuffered lists 300 hooks in-process and counts the
// writes that reach stdout: the table arrives in one write (it was one
// write per table cell or padding, 4,815 here), and a note on stderr comes
// before the table, as it was printed.
func TestListOutputBuffered(t *testing.T) {
	dir := t.TempDir()
	hooks := filepath.Join(dir, "hooks.d")
	if err := os.Mkdir(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 300
	for i := range n {
		if err := os.WriteFile(filepath.Join(hooks, fmt.Sprintf("h%03d.yaml", i)), []byte(quickHook), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var both bytes.Buffer
	stdout, stderr := &writeCounter{w: &both}, &writeCounter{w: &both}
	code := runMain([]string{"list", "--hooks", hooks, "--db", filepath.Join(dir, "hookd.db")}, stdout, stderr)
	if code != exitOK {
		t.Fatalf("list: exit %d\n%s", code, both.String())
	}
	out := both.String()
	if lines := strings.Count(out, "\n"); lines != n+2 {
		t.Fatalf("want a note, a header and %d rows, got %d lines:\n%s", n, lines, out)
	}
	if !strings.HasPrefix(out, "hookd is not running") || !strings.Contains(out, "\nNAME ") || !strings.Contains(out, "h299 ") {
		t.Errorf("want the note on stderr first, then the table:\n%s", out[:min(len(out), 500)])
	}
	if stdout.writes > 1 {
		t.Errorf("the table of %d hooks took %d writes to stdout, want 1", n, stdout.writes)
	}
}

// TestOutputFlushedOnError checks that what a command printed before it
// failed still arrives, before its error: validate prints its count on
// stdout and exits 1.
func TestOutputFlushedOnError(t *testing.T) {
	dir := t.TempDir()
	hooks := filepath.Join(dir, "hooks.d")
	if err := os.Mkdir(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hooks, "bad.yaml"), []byte("tigger: {every: 1h}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"validate", hooks}, &stdout, &stderr); code != exitError {
		t.Fatalf("validate: exit %d, want 1\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "0 hook(s) valid") || !strings.Contains(stdout.String(), "1 error(s)") {
		t.Errorf("stdout lost on exit 1: %q (stderr %q)", stdout.String(), stderr.String())
	}
}

// BenchmarkListTable writes list's table of 10,000 hooks to /dev/null
// (a real file: every write is a system call) through the buffered
// stdout every command gets, and, in the same run, the same table laid
// out by text/tabwriter as it was before; it prints the milliseconds and
// writes of each and their ratio (target: 50 ms).
//
//	go test -run '^$' -bench 'BenchmarkListTable$' -benchtime 10x ./cmd/hookd/
func BenchmarkListTable(b *testing.B) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
	now := time.Now()
	hooks := make([]engine.HookStatus, 10_000)
	for i := range hooks {
		hooks[i] = engine.HookStatus{Name: fmt.Sprintf("hook-%05d", i), Trigger: "every 5m", Enabled: true,
			NextDue: now.Add(time.Duration(i) * time.Second), LastStatus: engine.StatusCompleted,
			LastStart: now.Add(-time.Minute), File: fmt.Sprintf("hooks.d/hook-%05d.yaml", i), Version: "0123456789ab"}
	}
	var table, tw time.Duration
	var tableWrites, twWrites int
	for b.Loop() {
		cw := &writeCounter{w: devNull}
		start := time.Now()
		out := newOutput(cw)
		c := &cli{stdout: out}
		if err := c.writeHookTable(hooks, now); err != nil {
			b.Fatal(err)
		}
		if err := out.Flush(); err != nil {
			b.Fatal(err)
		}
		table += time.Since(start)
		tableWrites += cw.writes

		cw = &writeCounter{w: devNull}
		start = time.Now()
		out = newOutput(cw)
		if err := hookTable(hooks, now).tabwriter(out); err != nil {
			b.Fatal(err)
		}
		if err := out.Flush(); err != nil {
			b.Fatal(err)
		}
		tw += time.Since(start)
		twWrites += cw.writes
	}
	n := float64(b.N)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(table.Seconds()*1000/n, "ms/list")
	b.ReportMetric(float64(tableWrites)/n, "writes/list")
	b.ReportMetric(tw.Seconds()*1000/n, "tabwriter-ms/list")
	b.ReportMetric(float64(twWrites)/n, "tabwriter-writes/list")
	b.ReportMetric(table.Seconds()/tw.Seconds(), "ratio")
}

// BenchmarkListCommand runs `hookd list` as a user does, a new process
// each time, against a running `hookd serve` with 10,000 hooks: the
// command asks the daemon (GET /v1/hooks), formats the table and writes
// it to /dev/null. It prints the milliseconds per command (target: 50
// ms), and, measured in the same run, the milliseconds of `hookd version`
// (a process start that does nothing else): the floor any command pays.
// It prints the CPU milliseconds of each list too, the command's and the
// daemon's (user+system: on a shared machine the steadier figures; the
// daemon's are counted in clock ticks, 10 ms each, over all the lists).
//
//	go test -run '^$' -bench 'BenchmarkListCommand$' -benchtime 10x ./cmd/hookd/
func BenchmarkListCommand(b *testing.B) {
	const n = 10_000
	hooks := make([]string, 0, 2*n)
	for i := range n {
		hooks = append(hooks, fmt.Sprintf("h%05d.yaml", i),
			fmt.Sprintf("trigger: {every: %dh}\nsteps:\n  - type: shell\n    command: echo %d\nskip_llm: true\n", 1+i%24, i))
	}
	_, dir, stop := benchDaemonDir(b, hooks...)
	defer stop()
	var hl api.Health
	if cl := client.Dial(filepath.Join(dir, ".hookd", "hookd.db")); cl == nil {
		b.Fatal("no daemon answers on the socket")
	} else if err := cl.Do(context.Background(), "GET", "/healthz", nil, &hl); err != nil || hl.PID == 0 {
		b.Fatalf("healthz: %v (pid %d)", err, hl.PID)
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
	var cpu time.Duration // of the commands
	run := func(stdout io.Writer, args ...string) time.Duration {
		cmd := exec.Command(hookdBin, args...)
		cmd.Dir = dir
		cmd.Env = childEnv()
		cmd.Stdout = stdout
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("hookd %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		took := time.Since(start)
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return took
	}
	// Once into a buffer: the table lists every hook, from the daemon.
	var out bytes.Buffer
	run(&out, "list")
	if lines := strings.Count(out.String(), "\n"); lines != n+2 {
		b.Fatalf("list printed %d lines, want %d (a header and %d hooks, one more for hooked.yaml)", lines, n+2, n+1)
	}
	var list, floor, listCPU time.Duration
	daemon0 := procCPU(b, hl.PID)
	for b.Loop() {
		cpu0 := cpu
		list += run(devNull, "list")
		listCPU += cpu - cpu0
		floor += run(devNull, "version")
	}
	daemon := procCPU(b, hl.PID) - daemon0
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(list), "ms/list")
	b.ReportMetric(ms(floor), "ms/version")
	b.ReportMetric(ms(listCPU), "cpu-ms/list")
	b.ReportMetric(ms(daemon), "daemon-cpu-ms/list")
	b.Logf("hookd list of %d hooks from the daemon: %.1f ms a command (CPU: %.1f ms its own, %.1f ms the daemon's); hookd version: %.1f ms (target 50 ms)",
		n+1, ms(list), ms(listCPU), ms(daemon), ms(floor))
}

// procCPU returns the CPU time (user+system) process pid has used, in
// clock ticks of 10 ms.
func procCPU(b *testing.B, pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	f := strings.Fields(rest) // from field 3, state; utime and stime are fields 14 and 15
	if len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %q", pid, stat)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, stat)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
