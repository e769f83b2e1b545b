package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/testtool"
)

func TestCapBuffer(t *testing.T) {
	stream := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(i%26)
		}
		return b
	}
	want := func(data []byte, limit int) (string, bool) {
		if len(data) <= limit {
			return string(data), false
		}
		h := limit / 2
		t := limit - h
		return string(data[:h]) + fmt.Sprintf("\n[hookd: %d bytes truncated]\n", len(data)-limit) + string(data[len(data)-t:]), true
	}
	tests := []struct {
		name         string
		size, limit  int
		chunkSizes   []int // written in turn, cycling; 0 means all at once
		wantTrunc    bool
		wantContains string
	}{
		{name: "empty", size: 0, limit: 10},
		{name: "under", size: 5, limit: 10},
		{name: "exact", size: 10, limit: 10},
		{name: "one over", size: 11, limit: 10, wantTrunc: true},
		{name: "one write", size: 1000, limit: 10, chunkSizes: []int{0}, wantTrunc: true},
		{name: "bytewise", size: 1000, limit: 10, chunkSizes: []int{1}, wantTrunc: true},
		{name: "mixed chunks", size: 100000, limit: 64, chunkSizes: []int{3, 70, 1, 33, 200}, wantTrunc: true},
		{name: "odd limit", size: 1000, limit: 7, chunkSizes: []int{4}, wantTrunc: true},
		{name: "limit 1", size: 50, limit: 1, chunkSizes: []int{2}, wantTrunc: true},
		{name: "chunk equals tail", size: 100, limit: 20, chunkSizes: []int{10}, wantTrunc: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := stream(tt.size)
			b := NewCapBuffer(tt.limit)
			chunks := tt.chunkSizes
			if len(chunks) == 0 {
				chunks = []int{3}
			}
			for i, k := 0, 0; i < len(data); k++ {
				n := chunks[k%len(chunks)]
				if n == 0 {
					n = len(data)
				}
				n = min(n, len(data)-i)
				if m, err := b.Write(data[i : i+n]); m != n || err != nil {
					t.Fatalf("Write = %d, %v; want %d, nil", m, err, n)
				}
				i += n
			}
			got, trunc := b.String()
			w, wtrunc := want(data, tt.limit)
			if got != w || trunc != wtrunc || trunc != tt.wantTrunc {
				t.Errorf("String() = %q, %v; want %q, %v", got, trunc, w, wtrunc)
			}
			head := 0
			for _, c := range b.head {
				head += cap(c)
			}
			if head > b.headCap || cap(b.tail) > b.tailCap {
				t.Errorf("buffers grew to %d+%d bytes for a limit of %d", head, cap(b.tail), tt.limit)
			}
		})
	}
}

// TestCapBufferCopiesOutputOnce: keeping a 1 MiB output (in 64 KiB
// writes, under a 2 MiB cap) and returning it as a string allocates the
// kept bytes and the string: 2.0 times the output; the head grown by
// doubling, copied at every size, allocated 3.9 times (4.2 MB).
func TestCapBufferCopiesOutputOnce(t *testing.T) {
	line := strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo", 2) + "\n"
	out := []byte(strings.Repeat(line, 1062000/len(line)))
	least := uint64(1 << 62)
	for range 5 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&before)
		b := NewCapBuffer(2 << 20)
		for p := out; len(p) > 0; {
			k := min(len(p), 64<<10)
			b.Write(p[:k])
			p = p[k:]
		}
		s, cut := b.String()
		runtime.ReadMemStats(&after)
		if s != string(out) || cut {
			t.Fatalf("String() = %d bytes, cut %v; want the %d bytes written", len(s), cut, len(out))
		}
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	t.Logf("%d bytes allocated to keep %d bytes", least, len(out))
	if least > uint64(len(out))*23/10 {
		t.Errorf("keeping %d bytes allocated %d bytes; want at most 2.3 times the output", len(out), least)
	}
}

func TestCapBufferRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 500; iter++ {
		limit := 1 + rng.Intn(100)
		data := make([]byte, rng.Intn(400))
		for i := range data {
			data[i] = byte('A' + rng.Intn(26))
		}
		b := NewCapBuffer(limit)
		for i := 0; i < len(data); {
			n := min(1+rng.Intn(2*limit), len(data)-i)
			b.Write(data[i : i+n])
			i += n
		}
		got, trunc := b.String()
		if len(data) <= limit {
			if got != string(data) || trunc {
				t.Fatalf("limit %d, %d bytes: got %q, %v", limit, len(data), got, trunc)
			}
			continue
		}
		h := limit / 2
		w := string(data[:h]) + fmt.Sprintf("\n[hookd: %d bytes truncated]\n", len(data)-limit) + string(data[len(data)-(limit-h):])
		if got != w || !trunc {
			t.Fatalf("limit %d, %d bytes: got %q, want %q", limit, len(data), got, w)
		}
	}
}

func TestCapBufferKeepsRunesWhole(t *testing.T) {
	// "é" is two bytes; a limit of 5 would cut the head after 2 bytes and
	// the tail in the middle of a character.
	data := strings.Repeat("é", 20) // 40 bytes
	b := NewCapBuffer(5)
	b.Write([]byte(data))
	got, trunc := b.String()
	if !trunc {
		t.Fatal("not truncated")
	}
	head, tail, ok := strings.Cut(got, "\n[hookd: ")
	if !ok {
		t.Fatalf("no marker in %q", got)
	}
	_, tail, _ = strings.Cut(tail, "]\n")
	if head != "é" || tail != "é" {
		t.Errorf("head %q, tail %q; want whole characters", head, tail)
	}
	if !strings.Contains(got, "[hookd: 36 bytes truncated]") {
		t.Errorf("marker does not count the bytes dropped to keep characters whole: %q", got)
	}
}

func TestCommandRun(t *testing.T) {
	tests := []struct {
		name       string
		argv       []string
		stdin      string
		wantOut    string
		wantErrOut string
		wantCode   int
	}{
		{name: "success", argv: []string{"sh", "-c", "echo hello"}, wantOut: "hello\n"},
		{name: "exit code", argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, wantOut: "out\n", wantErrOut: "err\n", wantCode: 3},
		{name: "stdin", argv: []string{"cat"}, stdin: "from stdin", wantOut: "from stdin"},
		{name: "no stdin", argv: []string{"cat"}, wantOut: ""},
		{name: "killed by signal", argv: []string{"sh", "-c", "kill -9 $$"}, wantCode: 128 + 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Command{Argv: tt.argv}
			if tt.stdin != "" {
				c.Stdin = strings.NewReader(tt.stdin)
			}
			r := c.Run(context.Background())
			if r.Err != nil {
				t.Fatalf("Err = %v", r.Err)
			}
			if r.Stdout != tt.wantOut || r.Stderr != tt.wantErrOut || r.ExitCode != tt.wantCode {
				t.Errorf("got stdout %q stderr %q exit %d; want %q %q %d", r.Stdout, r.Stderr, r.ExitCode, tt.wantOut, tt.wantErrOut, tt.wantCode)
			}
			if r.TimedOut || r.Truncated || r.Duration <= 0 {
				t.Errorf("TimedOut %v Truncated %v Duration %v", r.TimedOut, r.Truncated, r.Duration)
			}
		})
	}
}

func TestCommandStartFailure(t *testing.T) {
	tests := []struct {
		name string
		c    Command
	}{
		{"no such program", Command{Argv: []string{"hookd-no-such-program"}}},
		{"no such path", Command{Argv: []string{"/nonexistent/prog"}}},
		{"no such dir", Command{Argv: []string{"true"}, Dir: "/nonexistent/dir"}},
		{"empty argv", Command{}},
		{"program not on env PATH", Command{Argv: []string{"sh"}, Env: []string{"PATH=/nonexistent"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.c.Run(context.Background())
			if r.Err == nil || r.ExitCode != -1 {
				t.Errorf("got Err %v, exit %d; want an error and -1", r.Err, r.ExitCode)
			}
		})
	}
}

func TestCommandEnvPath(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "hookd-test-prog")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho found\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Command{Argv: []string{"hookd-test-prog"}, Env: []string{"PATH=/nonexistent:" + dir}}
	r := c.Run(context.Background())
	if r.Err != nil || r.Stdout != "found\n" {
		t.Errorf("got %q, %v; want the program found on Env's PATH", r.Stdout, r.Err)
	}
}

// TestCommandTimeoutKillsGroup runs a shell that starts a background
// grandchild and waits; the timeout must kill both, promptly.
func TestCommandTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	var elapsed time.Duration
	r, timeout := testtool.UntilReady(t, 300*time.Millisecond, func(timeout time.Duration) CommandResult {
		_ = os.Remove(pidFile)
		c := &Command{
			Argv:    []string{"sh", "-c", "sleep 30 & echo $! > " + pidFile + "; echo started; sleep 30"},
			Timeout: timeout,
		}
		start := time.Now()
		r := c.Run(context.Background())
		elapsed = time.Since(start) - timeout
		return r
	}, func(r CommandResult) bool { return r.Stdout != "" && exists(pidFile) })
	if elapsed > testtool.HangBound {
		t.Fatalf("Run took %v after the timeout: it waited for the sleep", elapsed)
	}
	if !r.TimedOut || r.ExitCode != -1 || !errors.Is(r.Err, ErrTimeout) {
		t.Errorf("TimedOut %v, ExitCode %d, Err %v; want true, -1, ErrTimeout", r.TimedOut, r.ExitCode, r.Err)
	}
	if r.Stdout != "started\n" {
		t.Errorf("stdout %q; want the output before the timeout", r.Stdout)
	}
	if !strings.Contains(r.Stderr, fmt.Sprintf("hookd: command timed out after %s; process group killed", timeout)) {
		t.Errorf("stderr %q lacks the timeout note", r.Stderr)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !testtool.WaitGone(pid, 5*time.Second) {
		t.Errorf("grandchild %d still runs after the timeout", pid)
	}
}

// TestCommandTimeoutEscalates checks that a group ignoring SIGTERM gets
// SIGKILL after the grace period.
func TestCommandTimeoutEscalates(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	var elapsed time.Duration
	r, _ := testtool.UntilReady(t, 200*time.Millisecond, func(timeout time.Duration) CommandResult {
		_ = os.Remove(pidFile)
		c := &Command{
			Argv:      []string{"sh", "-c", "trap '' TERM; sleep 30 & echo $! > " + pidFile + "; sleep 30"},
			Timeout:   timeout,
			KillGrace: 300 * time.Millisecond,
		}
		start := time.Now()
		r := c.Run(context.Background())
		elapsed = time.Since(start) - timeout
		return r
	}, func(CommandResult) bool { return exists(pidFile) }) // the trap was set before it
	if elapsed > testtool.HangBound {
		t.Fatalf("Run took %v after the timeout: it waited for the sleep", elapsed)
	}
	if !r.TimedOut {
		t.Errorf("TimedOut false; stderr %q", r.Stderr)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if !testtool.WaitGone(pid, 5*time.Second) {
		t.Errorf("grandchild %d ignoring SIGTERM still runs", pid)
	}
}

func TestCommandCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Command{Argv: []string{"sh", "-c", "echo ready; exec sleep 30"}, Timeout: time.Minute}
	done := make(chan CommandResult)
	go func() { done <- c.Run(ctx) }()
	time.AfterFunc(100*time.Millisecond, cancel)
	select {
	case r := <-done:
		if r.TimedOut || r.ExitCode != -1 || !errors.Is(r.Err, context.Canceled) {
			t.Errorf("TimedOut %v, ExitCode %d, Err %v; want false, -1, context.Canceled", r.TimedOut, r.ExitCode, r.Err)
		}
		if !strings.Contains(r.Stderr, "process group killed") {
			t.Errorf("stderr %q lacks the note", r.Stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}

	// A context done before the start runs nothing.
	r := c.Run(ctx)
	if !errors.Is(r.Err, context.Canceled) || r.ExitCode != -1 {
		t.Errorf("done context: Err %v, ExitCode %d", r.Err, r.ExitCode)
	}
}

func TestCommandCallerDeadlineIsTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	r := (&Command{Argv: []string{"sleep", "30"}, Timeout: time.Minute}).Run(ctx)
	if !r.TimedOut || !errors.Is(r.Err, ErrTimeout) || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Errorf("TimedOut %v, Err %v; want a timeout", r.TimedOut, r.Err)
	}
}

// TestCommandBackgroundHoldsPipes: the command exits but leaves a process
// behind (detach) that keeps stdout open; Run must return after the grace
// period with what the command wrote. (Without detach the process is
// stopped when the command exits, and the pipe closes with it.)
func TestCommandBackgroundHoldsPipes(t *testing.T) {
	c := &Command{
		Argv:      []string{"sh", "-c", "sleep 30 & echo $!"},
		KillGrace: 200 * time.Millisecond,
		Detach:    true,
	}
	start := time.Now()
	r := c.Run(context.Background())
	if d := time.Since(start); d > testtool.HangBound {
		t.Fatalf("Run took %v: it waited for the sleep", d)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(r.Stdout))
	if err != nil {
		t.Fatalf("stdout %q: %v", r.Stdout, err)
	}
	t.Cleanup(func() {
		if p, err := os.FindProcess(pid); err == nil {
			p.Kill()
		}
	})
	if r.Err != nil || r.ExitCode != 0 || r.TimedOut {
		t.Errorf("Err %v, ExitCode %d, TimedOut %v; want a normal exit", r.Err, r.ExitCode, r.TimedOut)
	}
	if !strings.Contains(r.Stderr, "kept the output open") {
		t.Errorf("stderr %q lacks the note", r.Stderr)
	}
}

func TestCommandOutputCap(t *testing.T) {
	// 200 numbered lines on stdout and on stderr, 8 bytes each.
	script := `i=0; while [ $i -lt 200 ]; do printf 'line%03d\n' $i; printf 'errr%03d\n' $i >&2; i=$((i+1)); done`
	var out, errOut bytes.Buffer
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&out, "line%03d\n", i)
		fmt.Fprintf(&errOut, "errr%03d\n", i)
	}
	wantCut := func(s string, limit int) string {
		return s[:limit/2] + fmt.Sprintf("\n[hookd: %d bytes truncated]\n", len(s)-limit) + s[len(s)-(limit-limit/2):]
	}
	r := (&Command{Argv: []string{"sh", "-c", script}, MaxOutput: 100}).Run(context.Background())
	if r.Err != nil || !r.Truncated {
		t.Fatalf("Err %v, Truncated %v", r.Err, r.Truncated)
	}
	if w := wantCut(out.String(), 100); r.Stdout != w {
		t.Errorf("stdout\n%q\nwant\n%q", r.Stdout, w)
	}
	if w := wantCut(errOut.String(), 100); r.Stderr != w {
		t.Errorf("stderr\n%q\nwant\n%q", r.Stderr, w)
	}
	if !strings.HasPrefix(r.Stdout, "line000\n") || !strings.HasSuffix(r.Stdout, "line199\n") {
		t.Errorf("head or tail lost: %q", r.Stdout)
	}
}

func TestCommandLargeOutputStaysBounded(t *testing.T) {
	// 32 MiB through a 64 KiB cap.
	r := (&Command{Argv: []string{"head", "-c", "33554432", "/dev/zero"}}).Run(context.Background())
	if r.Err != nil || r.ExitCode != 0 || !r.Truncated {
		t.Fatalf("Err %v, ExitCode %d, Truncated %v", r.Err, r.ExitCode, r.Truncated)
	}
	if len(r.Stdout) > DefaultMaxOutput+100 {
		t.Errorf("kept %d bytes; want about %d", len(r.Stdout), DefaultMaxOutput)
	}
	if !strings.Contains(r.Stdout, fmt.Sprintf("[hookd: %d bytes truncated]", 33554432-DefaultMaxOutput)) {
		t.Errorf("marker missing or wrong")
	}
}

// slowTee is a Tee that takes its time over every write, as a parser on
// a loaded machine does, and counts the lines it saw.
type slowTee struct {
	pause time.Duration
	lines int
}

func (s *slowTee) Write(p []byte) (int, error) {
	time.Sleep(s.pause)
	s.lines += bytes.Count(p, []byte("\n"))
	return len(p), nil
}

// TestCommandSlowReaderGetsAllOutput: a command that exits with its
// output still in the pipe loses none of it, however long reading it
// takes: the grace bounds only the wait for output a background process
// holds open. (Under load the run_tests parser read the last 64 KB more
// slowly than the grace, and the lines that named the failure were lost.)
func TestCommandSlowReaderGetsAllOutput(t *testing.T) {
	for _, merge := range []bool{false, true} {
		tee := &slowTee{pause: 100 * time.Millisecond}
		// 20000 lines (109 KB): more than the pipe holds, so the command
		// exits with the pipe full, and reading the rest outlasts the
		// grace by far.
		c := &Command{Argv: []string{"sh", "-c", "seq 1 20000; echo done >&2"}, KillGrace: 10 * time.Millisecond,
			Tee: tee, MergeOutput: merge, MaxOutput: 1 << 20}
		r := c.Run(context.Background())
		if r.Err != nil || r.ExitCode != 0 {
			t.Fatalf("merge %v: Err %v, ExitCode %d", merge, r.Err, r.ExitCode)
		}
		if want := 20000 + map[bool]int{true: 1}[merge]; tee.lines != want {
			t.Errorf("merge %v: the tee saw %d lines, want %d", merge, tee.lines, want)
		}
		var want strings.Builder
		for i := 1; i <= 20000; i++ {
			fmt.Fprintf(&want, "%d\n", i)
		}
		if out := r.Stdout + r.Stderr; out != want.String()+"done\n" {
			t.Errorf("merge %v: %d bytes of output, want %d; it ends %q", merge, len(out), want.Len()+5, out[max(0, len(out)-200):])
		}
	}
}

// TestCommandStdinDevNull: a command without Stdin reads /dev/null (at
// once at its end), also when several run at the same time and one after
// another: the one /dev/null hookd opens for them stays open.
func TestCommandStdinDevNull(t *testing.T) {
	c := &Command{Argv: []string{"sh", "-c", "readlink /proc/$$/fd/0; cat; echo end"}}
	for round := range 2 {
		var wg sync.WaitGroup
		results := make([]CommandResult, 4)
		for i := range results {
			wg.Go(func() { results[i] = c.Run(context.Background()) })
		}
		wg.Wait()
		for i, r := range results {
			if r.Err != nil || r.ExitCode != 0 || !strings.HasSuffix(r.Stdout, "end\n") {
				t.Fatalf("round %d, command %d: %+v", round, i, r)
			}
			if first, _, _ := strings.Cut(r.Stdout, "\n"); first != "/dev/null" {
				t.Errorf("round %d, command %d: stdin is %q, want /dev/null", round, i, first)
			}
		}
	}
	if f := devNull(); f != nil {
		if _, err := f.Stat(); err != nil {
			t.Errorf("the shared /dev/null was closed: %v", err)
		}
	}
}

// TestCommandOutputBlocking: the command's stdout and stderr are blocking
// write ends of pipes, as a program expects of them (O_NONBLOCK belongs to
// the open file description, which hookd's end and the child's share): a
// program that writes more than a pipe holds must not get EAGAIN. hookd
// reads its ends without blocking, with a deadline.
func TestCommandOutputBlocking(t *testing.T) {
	for _, merge := range []bool{false, true} {
		// grep's fd 1 and 2 are the shell's: the same open file descriptions.
		c := &Command{Argv: []string{"sh", "-c", "grep ^flags: /proc/self/fdinfo/1; grep ^flags: /proc/self/fdinfo/2 >&2"}, MergeOutput: merge}
		r := c.Run(context.Background())
		if r.Err != nil || r.ExitCode != 0 {
			t.Fatalf("merge %v: %+v", merge, r)
		}
		lines := strings.Fields(r.Stdout + r.Stderr)
		if len(lines) != 4 {
			t.Fatalf("merge %v: want two flags lines, got stdout %q stderr %q", merge, r.Stdout, r.Stderr)
		}
		for i, fd := range []string{"stdout", "stderr"} {
			flags, err := strconv.ParseUint(lines[2*i+1], 8, 64)
			if err != nil {
				t.Fatalf("merge %v: %s flags %q: %v", merge, fd, lines[2*i+1], err)
			}
			if flags&syscall.O_NONBLOCK != 0 {
				t.Errorf("merge %v: the command's %s is non-blocking (flags %o)", merge, fd, flags)
			}
			if flags&syscall.O_ACCMODE != syscall.O_WRONLY {
				t.Errorf("merge %v: the command's %s is not a write-only pipe end (flags %o)", merge, fd, flags)
			}
		}
	}
	// A command writing much more than a pipe holds, with hookd reading
	// slowly, gets all of it through without a write error.
	const size = 1 << 20
	c := &Command{Argv: []string{"sh", "-c", fmt.Sprintf("head -c %d /dev/zero; echo done >&2", size)},
		MaxOutput: 2 * size, Tee: &slowTee{pause: time.Millisecond}}
	r := c.Run(context.Background())
	if r.Err != nil || r.ExitCode != 0 || len(r.Stdout) != size || r.Stderr != "done\n" {
		t.Errorf("large write: exit %d, %d bytes, stderr %q, err %v", r.ExitCode, len(r.Stdout), r.Stderr, r.Err)
	}
}

// TestCommandClosesItsDescriptors: Run leaves no descriptor of its pipes
// open, whether the command ran, merged its output or failed to start.
func TestCommandClosesItsDescriptors(t *testing.T) {
	count := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("no /proc/self/fd: %v", err)
		}
		return len(ents)
	}
	cmds := []*Command{
		{Argv: []string{"sh", "-c", "echo out; echo err >&2"}},
		{Argv: []string{"sh", "-c", "echo out; echo err >&2"}, MergeOutput: true},
		{Argv: []string{"true"}, Dir: "/nonexistent/dir"}, // Start fails
	}
	// An *os.File left open is closed by its finalizer: no collection
	// while counting, so that only Run closes what it opened.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, c := range cmds {
		c.Run(context.Background()) // what the first run opens once (/dev/null)
	}
	before := count()
	for range 20 {
		for _, c := range cmds {
			c.Run(context.Background())
		}
	}
	// Wait for the condition: a descriptor the runtime opens for itself
	// meanwhile may come and go.
	deadline := time.Now().Add(5 * time.Second)
	for n := count(); n > before; n = count() {
		if time.Now().After(deadline) {
			t.Fatalf("%d descriptors open after 60 runs, %d before", n, before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestCapBufferKeepsRunesWholeAcrossChunks: a head of 1025 bytes ends in
// its own 1-byte chunk, inside a two-byte character that began there; the
// cut drops that byte, as it would in one buffer.
func TestCapBufferKeepsRunesWholeAcrossChunks(t *testing.T) {
	data := strings.Repeat("é", 3000) // 6000 bytes
	b := NewCapBuffer(2051)           // head 1025, tail 1026
	for p := []byte(data); len(p) > 0; {
		k := min(len(p), 100)
		b.Write(p[:k])
		p = p[k:]
	}
	if len(b.head) < 2 {
		t.Fatalf("the head is in %d chunk(s); the test needs several", len(b.head))
	}
	got, cut := b.String()
	want := data[:1024] + "\n[hookd: 3950 bytes truncated]\n" + data[6000-1026:]
	if got != want || !cut {
		t.Errorf("String() = %d bytes %q...%q, cut %v; want %d bytes", len(got), got[1020:1060], got[len(got)-8:], cut, len(want))
	}
}
