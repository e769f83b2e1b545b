package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
// stdout every command gets, and, in the same run, unbuffered as it was;
// it prints the milliseconds and writes of each and their ratio
// (target: 50 ms).
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
	var buffered, unbuffered time.Duration
	var bufWrites, rawWrites int
	for b.Loop() {
		cw := &writeCounter{w: devNull}
		start := time.Now()
		out := newOutput(cw)
		writeHookTable(out, hooks, now)
		if err := out.Flush(); err != nil {
			b.Fatal(err)
		}
		buffered += time.Since(start)
		bufWrites += cw.writes

		cw = &writeCounter{w: devNull}
		start = time.Now()
		writeHookTable(cw, hooks, now)
		unbuffered += time.Since(start)
		rawWrites += cw.writes
	}
	n := float64(b.N)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(buffered.Seconds()*1000/n, "ms/list")
	b.ReportMetric(float64(bufWrites)/n, "writes/list")
	b.ReportMetric(unbuffered.Seconds()*1000/n, "unbuffered-ms/list")
	b.ReportMetric(float64(rawWrites)/n, "unbuffered-writes/list")
	b.ReportMetric(buffered.Seconds()/unbuffered.Seconds(), "ratio")
}

// BenchmarkListCommand runs `hookd list` as a user does, a new process
// each time, against a running `hookd serve` with 10,000 hooks: the
// command asks the daemon (GET /v1/hooks), formats the table and writes
// it to /dev/null. It prints the milliseconds per command (target: 50
// ms), and, measured in the same run, the milliseconds of `hookd version`
// (a process start that does nothing else): the floor any command pays.
//
//	go test -run '^$' -bench 'BenchmarkListCommand$' -benchtime 20x ./cmd/hookd/
func BenchmarkListCommand(b *testing.B) {
	const n = 10_000
	hooks := make([]string, 0, 2*n)
	for i := range n {
		hooks = append(hooks, fmt.Sprintf("h%05d.yaml", i),
			fmt.Sprintf("trigger: {every: %dh}\nsteps:\n  - type: shell\n    command: echo %d\nskip_llm: true\n", 1+i%24, i))
	}
	_, dir, stop := benchDaemonDir(b, hooks...)
	defer stop()
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
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
		return time.Since(start)
	}
	// Once into a buffer: the table lists every hook, from the daemon.
	var out bytes.Buffer
	run(&out, "list")
	if lines := strings.Count(out.String(), "\n"); lines != n+2 {
		b.Fatalf("list printed %d lines, want %d (a header and %d hooks, one more for hooked.yaml)", lines, n+2, n+1)
	}
	var list, floor time.Duration
	for b.Loop() {
		list += run(devNull, "list")
		floor += run(devNull, "version")
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(list), "ms/list")
	b.ReportMetric(ms(floor), "ms/version")
	b.Logf("hookd list of %d hooks from the daemon: %.1f ms a command; hookd version: %.1f ms (target 50 ms)", n+1, ms(list), ms(floor))
}
