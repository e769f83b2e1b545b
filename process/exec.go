package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/redact"
	"github.com/hookd/hookd/sandbox"
)

// DefaultMaxOutput is how many bytes of stdout, and separately of stderr,
// a Command keeps when MaxOutput is zero.
const DefaultMaxOutput = 64 << 10

// DefaultKillGrace is how long a Command waits after SIGTERM before it
// sends SIGKILL to the process group, when KillGrace is zero.
const DefaultKillGrace = 2 * time.Second

// ErrTimeout is wrapped by CommandResult.Err when a command ran past its
// Timeout.
var ErrTimeout = errors.New("steps: command timed out")

// Command describes one process to run: how, where, for how long and how
// much of its output to keep. The zero value of every field but Argv is
// usable. A Command without Stdin may be run more than once, also
// concurrently; Run does not modify it.
type Command struct {
	// Argv is the program and its arguments. Argv[0] without a slash is
	// looked up in the PATH of Env (the process's PATH when Env has none).
	Argv []string
	// Dir is the working directory; empty means the current one.
	Dir string
	// Env is the environment as KEY=VALUE; nil means the allowlisted part
	// of the process's own (engine.ChildEnv). When a key repeats, the last
	// value wins.
	Env []string
	// Stdin is read as the command's standard input; nil means /dev/null.
	Stdin io.Reader
	// Timeout bounds the run; zero means only ctx does.
	Timeout time.Duration
	// KillGrace is the pause between SIGTERM and SIGKILL when the command
	// is stopped; zero means DefaultKillGrace. It also bounds how long Run
	// waits, after the command itself has exited, for the end of output
	// held open by a background process. What the command wrote before it
	// exited is read whatever the grace: it is in the pipe by then.
	KillGrace time.Duration
	// MaxOutput caps stdout and stderr each, in bytes; zero or less means
	// DefaultMaxOutput. Past the cap the head and the tail are kept, with a
	// marker saying how much was dropped between them.
	MaxOutput int
	// MergeOutput sends stderr into the stdout stream, interleaved as the
	// command wrote them (like 2>&1); CommandResult.Stderr stays empty and
	// hookd's own notes go to Stdout.
	MergeOutput bool
	// Redactor, when set, replaces secrets in stdout and stderr as they
	// stream, before Tee and before the cap, so that a cut never leaves a
	// piece of a secret behind.
	Redactor *redact.Redactor
	// Detach leaves the processes the command started in the background
	// running when it exits of its own accord (they are reported in
	// CommandResult.Detached, and not tracked). Without it, whatever is
	// left of the command's process group when the command exits is
	// stopped (SIGTERM, then SIGKILL after KillGrace) and reported in
	// CommandResult.Killed. A timeout or a cancel kills the whole group
	// either way.
	Detach bool
	// Track, when set and Detach is not, is told the command's process
	// group as soon as it started, so that a hookd started after a crash
	// finds it (engine.ProcJournal). The command runs meanwhile (another
	// goroutine waits for it), and Run returns only after Track returned.
	// The function Track returns (nil: none) is called once the group has
	// ended: after the sweep of what the command left, or the kill.
	Track func(engine.ProcGroup) (done func())
	// Tee, when set, receives everything the command writes to stdout
	// (and stderr, with MergeOutput), uncapped and as it arrives, from one
	// goroutine at a time. It is how a caller parses output longer than
	// MaxOutput. Its errors are ignored.
	Tee io.Writer
	// Live, when set, is called with the output as it arrives, redacted
	// (after Redactor, which holds back at most the longest secret's
	// length minus one byte), stream "stdout" or "stderr" ("stdout" for
	// both with MergeOutput), from two goroutines at once. It gets at most
	// MaxOutput bytes of each stream, then a note that the rest is not
	// shown live. It is how a run's followers see a step's output as it
	// runs (engine.StepEnv.Output); it must not block.
	Live func(stream string, p []byte)
	// LiveRedactor, when set, replaces secrets in what Live gets only,
	// holding back as Redactor does, per stream: the result keeps the
	// output as the command wrote it. It is for a command whose output
	// its caller must read as written (a lifecycle handler's answer may
	// carry a secret on purpose) while its followers must not see the
	// secret.
	LiveRedactor *redact.Redactor
	// Policy, when set, contains the command (sandbox.Default): it reaches
	// only the files and network the policy declares, and every process it
	// starts lives in its cgroup, so that setsid'd and double-forked ones
	// are found and stopped with it too. Nil runs it with hookd's own
	// rights, in its process group.
	Policy *sandbox.Policy
}

// CommandResult is what a Command run produced.
type CommandResult struct {
	Stdout    string
	Stderr    string
	ExitCode  int  // -1 when the command did not start, timed out or was cancelled; 128+N when killed by signal N
	TimedOut  bool // the Timeout ran out and the process group was killed
	Truncated bool // stdout or stderr went past MaxOutput
	Duration  time.Duration
	// Killed lists the processes of the command's group still running
	// after it exited, which were then stopped; Detached those left
	// running because of Detach.
	Killed, Detached []Process
	// Containment says what confined the command ("landlock ABI 7, mount
	// namespace, network: none (namespace), cgroup"); "" when nothing did.
	Containment string
	// Err is nil when the command ran to an exit of its own, whatever its
	// exit code. It is set when the command could not start, timed out
	// (wrapping ErrTimeout) or was cancelled (wrapping the context's error).
	Err error
}

// Run starts the command in its own process group and waits for it. When
// the timeout runs out or ctx is done, the whole process group gets
// SIGTERM and, after KillGrace, SIGKILL, so children and grandchildren go
// with it; a background process that keeps the output pipes open cannot
// make Run hang. When the command exits of its own accord, what is left of
// its group is stopped the same way, unless Detach. Memory stays bounded by MaxOutput whatever the command
// writes.
func (c *Command) Run(ctx context.Context) CommandResult {
	var res CommandResult
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		res.ExitCode = -1
		res.Err = errors.New("run command: empty argv")
		return res
	}
	if err := ctx.Err(); err != nil {
		res.ExitCode = -1
		res.Err = fmt.Errorf("run %s: %w", c.Argv[0], err)
		return res
	}
	limit := c.MaxOutput
	if limit <= 0 {
		limit = DefaultMaxOutput
	}
	grace := c.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}

	env := c.Env
	if env == nil {
		env = engine.ChildEnv(os.Environ(), nil, nil)
	}
	path, err := lookPath(c.Argv[0], env)
	if err != nil {
		res.ExitCode = -1
		res.Err = fmt.Errorf("start %s: %w", c.Argv[0], err)
		return res
	}
	stdout, stderr := NewCapBuffer(limit), NewCapBuffer(limit)
	var outW, errW io.Writer = stdout, stderr
	if c.Tee != nil {
		outW = &teeWriter{stdout, c.Tee}
	}
	var liveRed []io.Closer // what LiveRedactor holds back, written at the end
	if c.Live != nil {
		live := func(next io.Writer, stream string) io.Writer {
			sink := liveSink{c.Live, stream}
			if c.LiveRedactor == nil {
				return &liveWriter{next: next, live: sink, stream: stream, left: limit, max: limit}
			}
			rw := c.LiveRedactor.Writer(sink)
			liveRed = append(liveRed, rw)
			return &liveWriter{next: next, live: rw, stream: stream, left: limit, max: limit}
		}
		outW, errW = live(outW, "stdout"), live(errW, "stderr")
	}
	redOut, redErr := c.Redactor.Writer(outW), c.Redactor.Writer(errW)
	// The output pipes are Run's own, not os/exec's: os/exec stops reading
	// WaitDelay after the exit even when what it has left to read is the
	// command's own output, which a slow reader on a loaded machine had
	// not reached yet.
	pipes, err := newOutputPipes(c.MergeOutput)
	if err != nil {
		res.ExitCode = -1
		res.Err = fmt.Errorf("start %s: %w", c.Argv[0], err)
		return res
	}
	var stdin io.Reader = c.Stdin
	if stdin == nil {
		if f := devNull(); f != nil {
			stdin = f // what os/exec opens for every command without one
		}
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        c.Argv,
		Dir:         c.Dir,
		Env:         env,
		Stdin:       stdin,
		Stdout:      pipes.outW,
		Stderr:      pipes.errW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		WaitDelay:   grace, // for the copy of Stdin
	}

	runCtx := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}

	track := c.Track != nil && !c.Detach
	var before uint64
	var clockOK bool
	if track {
		before, clockOK = bootTick() // the leader starts after this (procGroupOf)
	}
	start := time.Now()
	var proc *sandbox.Process
	if c.Policy != nil {
		policy := c.Policy
		if c.Detach {
			p := *policy
			p.Detach = true
			policy = &p
		}
		proc, err = sandbox.Default().Start(cmd, policy)
		if err == nil {
			res.Containment = proc.Containment()
			defer proc.Release(c.Detach)
		}
	} else {
		err = cmd.Start()
	}
	tree := proc != nil && proc.Tracked() // every process the command starts is in its cgroup
	pipes.closeWriteEnds()                // the command holds its own
	if err != nil {
		pipes.closeReadEnds()
		res.Duration = time.Since(start)
		res.ExitCode = -1
		res.Err = fmt.Errorf("start %s: %w", c.Argv[0], err)
		return res
	}
	pgid := cmd.Process.Pid // Setpgid with Pgid 0: the group is named after the leader
	var group engine.ProcGroup
	if track {
		group = procGroupOf(pgid, before, clockOK) // now, while the leader cannot have been reaped: its start time
	}
	drains := pipes.drain(redOut, redErr)
	var (
		mu      sync.Mutex
		waited  bool // Wait returned: the leader is reaped, signal no more
		killed  bool // the group was sent SIGTERM before that
		waitErr error
	)
	exited := make(chan struct{})
	wait := func() {
		waitErr = cmd.Wait()
		res.Duration = time.Since(start)
		mu.Lock()
		waited = true
		mu.Unlock()
		close(exited)
	}
	stop := context.AfterFunc(runCtx, func() {
		mu.Lock()
		if waited {
			mu.Unlock()
			return
		}
		killed = true
		if errors.Is(context.Cause(runCtx), engine.ErrForcedStop) {
			// hookd is exiting at once: no grace for the group.
			killTree(proc, pgid)
			mu.Unlock()
			return
		}
		if tree {
			proc.Signal(syscall.SIGTERM)
		} else {
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
		}
		mu.Unlock()
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
			killTree(proc, pgid)
		case <-exited:
		}
	})
	var untrack func()
	if track {
		// The group is recorded now, as soon as it started (a crash
		// before the record is made leaves it unknown, so that moment
		// comes first), while another goroutine waits for the command:
		// the record (a pwrite to the engine's journal, or a commit)
		// and the command run at the same time, and Run goes on, to its
		// result, only once both are done.
		go wait()
		untrack = c.Track(group)
		<-exited
	} else {
		wait()
	}
	stop()
	switch {
	case killed:
		// The leader is gone; sweep whatever in its group (its cgroup)
		// ignored SIGTERM.
		killTree(proc, pgid)
	case c.Detach && tree:
		res.Detached = treeMembers(proc)
	case c.Detach:
		res.Detached = listGroup(pgid)
	case tree:
		res.Killed = sweepTree(proc, grace)
	default:
		res.Killed = sweepGroup(pgid, grace)
	}
	if untrack != nil {
		untrack() // the group has ended (or was killed): its record goes
	}
	heldOpen := waitDrains(drains, grace)

	_, _ = redOut.Close(), redErr.Close() // what the redactors held back
	for _, rw := range liveRed {
		_ = rw.Close()
	}
	res.Stdout, res.Truncated = stdout.String()
	var errTrunc bool
	res.Stderr, errTrunc = stderr.String()
	res.Truncated = res.Truncated || errTrunc
	note := func(s string) {
		if c.MergeOutput {
			res.Stdout = appendNote(res.Stdout, s)
		} else {
			res.Stderr = appendNote(res.Stderr, s)
		}
	}

	switch {
	case killed:
		res.ExitCode = -1
		var what string
		switch err := ctx.Err(); {
		case err == nil: // our own timeout
			res.TimedOut = true
			what = fmt.Sprintf("timed out after %s", c.Timeout)
			res.Err = fmt.Errorf("%w after %s; process group killed", ErrTimeout, c.Timeout)
		case errors.Is(err, context.DeadlineExceeded): // the caller's deadline
			res.TimedOut = true
			what = fmt.Sprintf("timed out after %s", res.Duration.Round(time.Millisecond))
			if cause := context.Cause(ctx); cause != err {
				what += fmt.Sprintf(" (%v)", cause)
			}
			res.Err = fmt.Errorf("%w after %s; process group killed: %w", ErrTimeout, res.Duration.Round(time.Millisecond), context.Cause(ctx))
		default:
			what = fmt.Sprintf("stopped (%v)", context.Cause(ctx))
			res.Err = fmt.Errorf("run %s: stopped; process group killed: %w", c.Argv[0], context.Cause(ctx))
		}
		note("hookd: command " + what + "; process group killed")
	default:
		res.ExitCode = exitCode(cmd.ProcessState)
		if heldOpen {
			note(fmt.Sprintf("hookd: a background process kept the output open after the command exited; stopped reading after %s", grace))
		}
		if waitErr != nil && !errors.Is(waitErr, exec.ErrWaitDelay) {
			var ee *exec.ExitError
			if !errors.As(waitErr, &ee) {
				res.Err = fmt.Errorf("run %s: %w", c.Argv[0], waitErr)
			}
		}
		if len(res.Killed) > 0 {
			note(fmt.Sprintf("hookd: killed %d background process(es) still running after the command exited: %s "+
				"(a shell step sets detach: true to leave them running)", len(res.Killed), processList(res.Killed)))
		}
		if len(res.Detached) > 0 {
			note(fmt.Sprintf("hookd: left %d background process(es) running (detach: true): %s",
				len(res.Detached), processList(res.Detached)))
		}
	}
	if c.Policy != nil && !killed && res.ExitCode != 0 {
		if n := sandboxNote(c.Policy, res.Stdout+res.Stderr); n != "" {
			note(n)
		}
	}
	return res
}

// devNull is /dev/null opened once for reading, the standard input of
// every command without one (nil when it cannot be opened: os/exec then
// opens it itself). os/exec would open and close it for each command: two
// system calls and a poller registration a step, for the same file.
var devNull = sync.OnceValue(func() *os.File {
	f, err := os.Open(os.DevNull)
	if err != nil {
		return nil
	}
	return f
})

// processList is "123 (sleep), 124 (tail)".
func processList(ps []Process) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// exitCode is the exit status, or 128+N for a process killed by signal N,
// as shells report it.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// appendNote adds a line of hookd's own to the end of a stream.
func appendNote(s, note string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s + note + "\n"
}

// lookPath finds name in the PATH of env (the process's when env has no
// PATH). A name with a slash is used as it is.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathVar, found := "", false
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "PATH="); ok {
			pathVar, found = v, true
			break
		}
	}
	if !found {
		return exec.LookPath(name)
	}
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // relative PATH entries would depend on the working directory
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// teeWriter writes to a capBuffer and copies to w, whose errors it
// ignores so that the command never sees a broken pipe because of it.
type teeWriter struct {
	buf *CapBuffer
	w   io.Writer
}

func (t *teeWriter) Write(p []byte) (int, error) {
	_, _ = t.w.Write(p)
	return t.buf.Write(p)
}

// liveWriter passes what is written on to next and, up to left bytes,
// to live.
type liveWriter struct {
	next   io.Writer
	live   io.Writer
	stream string
	left   int // bytes still shown; -1 once the note said it stopped
	max    int
}

func (l *liveWriter) Write(p []byte) (int, error) {
	switch {
	case len(p) <= l.left:
		l.left -= len(p)
		_, _ = l.live.Write(p)
	case l.left >= 0:
		if l.left > 0 {
			_, _ = l.live.Write(p[:l.left])
		}
		fmt.Fprintf(l.live, "\n[hookd: live %s stops at max_output (%d bytes); the record keeps the end]\n", l.stream, l.max)
		l.left = -1
	}
	return l.next.Write(p)
}

// liveSink hands what is written to it to a Command's Live, as stream.
type liveSink struct {
	live   func(stream string, p []byte)
	stream string
}

func (s liveSink) Write(p []byte) (int, error) {
	s.live(s.stream, p)
	return len(p), nil
}

// CapBuffer keeps the first and the last bytes written to it, at most
// limit in all, and counts the rest. Memory stays below limit whatever is
// written.
type CapBuffer struct {
	headCap int
	// head holds the first bytes in chunks that are filled and never
	// copied: a buffer grown by doubling copied itself at every size
	// (4.2 MB allocated to keep 1 MB and return it as a string, 2.1 MB
	// now: TestCapBufferCopiesOutputOnce).
	head    [][]byte
	headLen int
	tailCap int
	tail    []byte // ring buffer, allocated when the head is full
	tailPos int    // next write position in tail once it is full
	total   int64
}

// The head's chunks: the first of 512 bytes (or what the head has room
// for), each next one as large as the head so far, up to maxHeadChunk.
const minHeadChunk, maxHeadChunk = 512, 64 << 10

func NewCapBuffer(limit int) *CapBuffer {
	h := limit / 2
	return &CapBuffer{headCap: h, tailCap: limit - h}
}

// Write never fails, so the command never sees a broken pipe because of
// the cap.
func (b *CapBuffer) Write(p []byte) (int, error) {
	n := len(p)
	b.total += int64(n)
	for len(p) > 0 && b.headLen < b.headCap {
		if len(b.head) == 0 || len(b.head[len(b.head)-1]) == cap(b.head[len(b.head)-1]) {
			size := min(b.headCap-b.headLen, max(minHeadChunk, min(b.headLen, maxHeadChunk)))
			b.head = append(b.head, make([]byte, 0, size))
		}
		last := &b.head[len(b.head)-1]
		k := min(cap(*last)-len(*last), len(p))
		*last = append(*last, p[:k]...)
		b.headLen += k
		p = p[k:]
	}
	if len(p) == 0 || b.tailCap == 0 {
		return n, nil
	}
	if len(p) >= b.tailCap {
		// p alone fills the tail.
		if cap(b.tail) < b.tailCap {
			b.tail = make([]byte, 0, b.tailCap)
		}
		b.tail = append(b.tail[:0], p[len(p)-b.tailCap:]...)
		b.tailPos = 0
		return n, nil
	}
	if len(b.tail) < b.tailCap {
		room := b.tailCap - len(b.tail)
		if len(p) <= room {
			b.tail = appendCapped(b.tail, p, b.tailCap)
			return n, nil
		}
		b.tail = appendCapped(b.tail, p[:room], b.tailCap)
		p = p[room:]
		b.tailPos = 0
	}
	// The ring is full: overwrite from tailPos, wrapping.
	k := copy(b.tail[b.tailPos:], p)
	if k < len(p) {
		copy(b.tail, p[k:])
		b.tailPos = len(p) - k
	} else {
		b.tailPos += k
		if b.tailPos == b.tailCap {
			b.tailPos = 0
		}
	}
	return n, nil
}

// appendCapped appends p to dst, growing it to at most limit bytes of
// capacity; len(dst)+len(p) must not exceed limit.
func appendCapped(dst, p []byte, limit int) []byte {
	if need := len(dst) + len(p); need > cap(dst) {
		c := min(limit, max(need, 2*cap(dst), 512))
		grown := make([]byte, len(dst), c)
		copy(grown, dst)
		dst = grown
	}
	return append(dst, p...)
}

// String returns what was kept and whether anything was dropped. Cuts are
// moved to UTF-8 boundaries so that no character is split. The text is
// copied once, into the string.
func (b *CapBuffer) String() (string, bool) {
	kept := int64(b.headLen + len(b.tail))
	tail := b.tail
	if len(b.tail) == b.tailCap && b.tailPos > 0 {
		tail = make([]byte, 0, len(b.tail))
		tail = append(tail, b.tail[b.tailPos:]...)
		tail = append(tail, b.tail[:b.tailPos]...)
	}
	var s strings.Builder
	if b.total == kept {
		s.Grow(int(kept))
		b.writeHead(&s, b.headLen)
		s.Write(tail)
		return s.String(), false
	}
	// Drop a partial rune at the end of the head and at the start of the tail.
	var end [utf8.UTFMax]byte
	n := 0
	for i := len(b.head) - 1; i >= 0 && n < len(end); i-- {
		c := b.head[i]
		k := min(len(c), len(end)-n)
		copy(end[len(end)-n-k:], c[len(c)-k:])
		n += k
	}
	headLen := b.headLen - (n - len(TrimPartialRune(end[len(end)-n:])))
	for i := 0; i < utf8.UTFMax-1 && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	dropped := b.total - int64(headLen) - int64(len(tail))
	s.Grow(headLen + len(tail) + 40)
	b.writeHead(&s, headLen)
	fmt.Fprintf(&s, "\n[hookd: %d bytes truncated]\n", dropped)
	s.Write(tail)
	return s.String(), true
}

// writeHead writes the first n bytes of the head to s.
func (b *CapBuffer) writeHead(s *strings.Builder, n int) {
	for _, c := range b.head {
		k := min(len(c), n)
		s.Write(c[:k])
		n -= k
	}
}
