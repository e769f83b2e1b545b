package main

// Each test of this package gets its own directory (hookd.yaml, hooks.d/,
// the database under .hookd/) and runs hookd's commands in it: in this
// process (runIn, with the directory as its host's), in parallel with
// the other tests, unless the test needs what only a process shows (its
// pid, SIGKILL, an environment of its own, the real binary): then with
// the binary TestMain builds, through exec.Command (env.process, or
// HOOKD_TEST_PROCESS=1 for every test). They wait on signals (log
// lines, command results), never on fixed sleeps.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/store/pgtest"
)

// hookdBin is the binary under test, built by TestMain, plain even when
// the tests run with -race: a race-built hookd process costs 2.5 times
// the CPU (this package's hookd processes took 153 CPU-s race-built, 62
// plain), and the daemon's code runs under the race detector in every
// test that runs it in this process; the processes are for what only a
// process shows (signals, SIGKILL, exec).
var hookdBin string

// builtWithVCS says TestMain built hookdBin with -buildvcs=true: when it
// has no revision, Go cannot stamp one in this checkout.
var builtWithVCS bool

// Bounds of the waits. They are generous: the tests must pass on a loaded
// two-core machine, and a wait that succeeds returns at once.
const (
	waitLong = 60 * time.Second // anything that ends on its own
	pollStep = 20 * time.Millisecond
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

// parallelFactor is how many of this package's parallel tests run at
// once per CPU, unless -parallel says otherwise: they spend much of their
// time waiting on real time (a schedule a second apart, a PostgreSQL
// lock's 3 s wait for a killed holder's session, a lease's expiry), so
// go test's default of one per CPU leaves the CPUs idle. (Four per CPU,
// with race-built hookd processes, overloaded a two-core machine.)
const parallelFactor = 2

// raiseParallel sets -test.parallel to parallelFactor times GOMAXPROCS
// unless the command line set it.
func raiseParallel() error {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if set {
		return nil
	}
	return flag.Set("test.parallel", strconv.Itoa(parallelFactor*runtime.GOMAXPROCS(0)))
}

func testMain(m *testing.M) int {
	if err := raiseParallel(); err != nil {
		fmt.Fprintln(os.Stderr, "set -test.parallel:", err)
		return 1
	}
	dir, ok := keptBinDir()
	if !ok {
		var err error
		if dir, err = os.MkdirTemp("", "hookd-bin"); err != nil {
			fmt.Fprintln(os.Stderr, "make temp dir:", err)
			return 1
		}
		defer os.RemoveAll(dir)
	}
	hookdBin = filepath.Join(dir, "hookd")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	args := []string{"build", "-o", hookdBin}
	// With the revision stamped where Go can (TestVersionRevision reads
	// it, and builds hookd again only without it); where it cannot (no
	// git), the build goes on without.
	build := exec.Command(goTool, append(append(args, "-buildvcs=true"), ".")...)
	builtWithVCS = true
	if _, err := build.CombinedOutput(); err != nil {
		builtWithVCS = false
		build = exec.Command(goTool, append(args, ".")...)
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build hookd: %v\n%s", err, out)
			return 1
		}
	}
	// What childEnv gives a hookd process, for the commands run in this
	// one: no model settings from the developer's environment, UTC times.
	for _, k := range []string{"HOOKD_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"} {
		os.Unsetenv(k)
	}
	time.Local = time.UTC
	defer stopChromium()
	return pgtest.Main(m) // m.Run, then stop the PostgreSQL server if a test started one
}

// keptBinDir is the directory TestMain builds hookd in, kept from one
// run of the tests to the next, one per checkout and user: go build
// finds the binary there up to date and does not link it again. (Go
// caches packages, not binaries: linking hookd into a new directory cost
// ~8 CPU-s, and 5 to 25 s before the first test, on every run.) ok is
// false when the directory is not this user's alone (another could have
// put a binary there): then TestMain builds in a new one.
func keptBinDir() (dir string, ok bool) {
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256([]byte(wd))
	dir = filepath.Join(os.TempDir(), fmt.Sprintf("hookd-test-bin-%d-%x", os.Getuid(), sum[:8]))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", false
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", false
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	// (TestStepCannotReadHookdEnviron makes it 0755, for nobody to run hookd.)
	if !fi.IsDir() || st == nil || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o022 != 0 {
		return "", false
	}
	return dir, true
}

// allProcess runs every test's commands as processes (HOOKD_TEST_PROCESS=1).
var allProcess = os.Getenv("HOOKD_TEST_PROCESS") == "1"

// parallel marks the tests that called t.Parallel through newEnv.
var parallel sync.Map

// env is one test's hookd installation: a directory with hookd.yaml,
// hooks.d/ and the state directory .hookd/.
type env struct {
	t   *testing.T
	dir string

	badHooksOK bool     // serve: a hook file that does not load is expected
	environ    []string // KEY=VALUE added to the environment of hookd processes (which makes them processes)
	process    bool     // run hookd as processes of the real binary
	// cmdsInProcess: the commands run to their end (run, must, exec) run
	// in this process, reading environ as their environment, although
	// the daemons are processes. For tests where only the daemon must be
	// one (its pid, SIGKILL, the environment its steps see) and the
	// commands talk to it or read the store: each command as a process
	// costs a process start (~75 ms of CPU), and tests poll with them.
	cmdsInProcess bool

	cgMu   sync.Mutex // the cgroups of its hookd processes (placeInCgroup)
	cgroup string
	cgSeq  int
}

// inProcess says whether e's commands and daemons run in this process.
// A daemon with sandbox: off runs as a process: the sandbox is the
// process's, shared by the daemons of the tests in this one.
func (e *env) inProcess() bool {
	if e.process || allProcess || e.environ != nil {
		return false
	}
	b, _ := os.ReadFile(e.path("hookd.yaml"))
	return !strings.Contains(string(b), "sandbox: off")
}

// host is the host of e's commands run in process, reading environ
// before this process's environment.
func (e *env) host() host {
	h := host{dir: e.dir, stdin: strings.NewReader("")}
	if len(e.environ) > 0 {
		environ := slices.Clone(e.environ)
		h.getenv = func(key string) string {
			for i := len(environ) - 1; i >= 0; i-- {
				if v, ok := strings.CutPrefix(environ[i], key+"="); ok {
					return v
				}
			}
			return os.Getenv(key)
		}
	}
	return h
}

// newEnv makes a directory for a test with the daemon settings given (""
// for none) and the hook files given (file name -> YAML).
func newEnv(t *testing.T, settings string, hooks map[string]string) *env {
	t.Helper()
	if _, done := parallel.LoadOrStore(t, true); !done {
		t.Parallel()
	}
	// Not t.TempDir: the socket path must stay under 107 bytes.
	dir, err := os.MkdirTemp("", "hk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e := &env{t: t, dir: dir}
	if err := os.Mkdir(e.path("hooks.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if settings == "" {
		// An empty settings file: without one, the sandbox keeps steps
		// from making new files at the top of the workdir that would
		// hold it (a step must not write a hookd.yaml hookd would load).
		settings = "# defaults\n"
	}
	e.write("hookd.yaml", settings)
	for name, body := range hooks {
		e.write(filepath.Join("hooks.d", name), body)
	}
	// Step processes run in their own process groups; a daemon killed by
	// a test leaves them behind. Steps that run long write their pid to
	// a *.pid file in the workdir, so they can be ended here.
	t.Cleanup(e.killSteps)
	return e
}

func (e *env) path(rel string) string { return filepath.Join(e.dir, rel) }

func (e *env) write(rel, body string) {
	e.t.Helper()
	if err := os.WriteFile(e.path(rel), []byte(body), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) exists(rel string) bool {
	_, err := os.Stat(e.path(rel))
	return err == nil
}

// killSteps kills the process groups named by *.pid files in the test
// directory.
func (e *env) killSteps() {
	files, _ := filepath.Glob(e.path("*.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
}

// result is what a hookd command did.
type result struct {
	args   []string
	code   int
	stdout string
	stderr string
}

func (r result) String() string {
	return fmt.Sprintf("hookd %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// command builds a hookd command run in the test's directory, in a
// cgroup of its own (placeInCgroup), for the caller to start.
func (e *env) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := e.newCommand(ctx, args...)
	e.t.Cleanup(e.placeInCgroup(cmd))
	return cmd
}

// newCommand builds a hookd command run in the test's directory.
func (e *env) newCommand(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, hookdBin, args...)
	cmd.Dir = e.dir
	cmd.Env = append(childEnv(), e.environ...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// childEnv is the environment of hookd processes: no model settings leak
// in from the developer's environment, and times print in UTC.
func childEnv() []string {
	return append(os.Environ(), "HOOKD_MODEL=", "OPENAI_BASE_URL=", "OPENAI_API_KEY=", "TZ=UTC")
}

// run runs a hookd command to its end.
func (e *env) run(args ...string) result {
	e.t.Helper()
	r, err := e.exec(args...)
	if err != nil {
		e.t.Fatalf("%v\n%s", err, r)
	}
	return r
}

// exec runs a hookd command to its end; safe to call from any goroutine.
// The error is set when the command did not run to an exit of its own.
func (e *env) exec(args ...string) (result, error) {
	if e.inProcess() || e.cmdsInProcess {
		return runHost(e.host(), args...), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	cmd := e.newCommand(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	placed := e.placeInCgroup(cmd)
	err := cmd.Run()
	placed()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.Exited():
		r.code = exit.ExitCode()
	default:
		return r, fmt.Errorf("hookd %s: %w", strings.Join(args, " "), err)
	}
	return r, nil
}

// runHost runs a command in process in h and returns its result.
func runHost(h host, args ...string) result {
	var stdout, stderr bytes.Buffer
	code := runIn(h, args, &stdout, &stderr)
	return result{args: args, code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// must runs a hookd command and fails the test unless it exits with code.
func (e *env) must(code int, args ...string) result {
	e.t.Helper()
	r := e.run(args...)
	if r.code != code {
		e.t.Fatalf("want exit %d, got:\n%s", code, r)
	}
	return r
}

// runID returns the run id a fire printed on its first stdout line.
func runID(t *testing.T, r result) string {
	t.Helper()
	id := strings.TrimSpace(strings.SplitN(r.stdout, "\n", 2)[0])
	if len(id) < 10 || strings.ContainsAny(id, " \t") {
		t.Fatalf("no run id on stdout:\n%s", r)
	}
	return id
}

// getRun returns a run through `hookd run ID --json`.
func (e *env) getRun(id string) *engine.Run {
	e.t.Helper()
	r := e.must(0, "run", id, "--json")
	var run engine.Run
	if err := json.Unmarshal([]byte(r.stdout), &run); err != nil {
		e.t.Fatalf("decode run: %v\n%s", err, r)
	}
	return &run
}

// listRuns returns runs through `hookd runs --json` with args.
func (e *env) listRuns(args ...string) []*engine.Run {
	e.t.Helper()
	r := e.must(0, append([]string{"runs", "--json"}, args...)...)
	var runs []*engine.Run
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil {
		e.t.Fatalf("decode runs: %v\n%s", err, r)
	}
	return runs
}

// waitRun polls until the run's status is want.
func (e *env) waitRun(id string, want engine.Status) *engine.Run {
	e.t.Helper()
	var run *engine.Run
	waitFor(e.t, fmt.Sprintf("run %s to be %s", id, want), func() bool {
		run = e.getRun(id)
		return run.Status == want
	}, func() string {
		return fmt.Sprintf("last status %s, reason %q, error %q", run.Status, run.Reason, run.Error)
	})
	return run
}

// waitFor polls cond until it holds, failing the test after waitLong.
// explain, if not nil, adds to the failure message.
func waitFor(t *testing.T, what string, cond func() bool, explain func() string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			msg := "timed out waiting for " + what
			if explain != nil {
				msg += ": " + explain()
			}
			t.Fatal(msg)
		}
		time.Sleep(pollStep)
	}
}

// logBuffer collects a daemon's stderr; safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// served is a running `hookd serve` process.
type served struct {
	e    *env
	cmd  *exec.Cmd
	log  *logBuffer
	done chan struct{} // closed when the process has exited
	code int           // exit code, valid after done; -1 when killed by a signal

	sigs chan os.Signal // in process: what stops it, as signals stop a process
}

// serve starts `hookd serve` with args and waits until it answers on its
// socket. The daemon is killed when the test ends, if still running.
func (e *env) serve(args ...string) *served {
	e.t.Helper()
	d := e.startServe(args...)
	d.waitLog("hookd serving")
	if !e.badHooksOK && strings.Contains(d.log.String(), "hook file not loaded") {
		e.t.Fatalf("a hook file of the test did not load:\n%s", d.log)
	}
	// The socket answers: status talks to the daemon through it.
	status := []string{"status"}
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--db", "--config", "--hooks":
			status = append(status, args[i], args[i+1])
		}
	}
	// (status exits 1 while a hook file does not load, which a test that
	// expects one allows.)
	if r := e.run(status...); r.code != 0 && !(e.badHooksOK && r.code == exitError && strings.Contains(r.stdout, "hookd is running")) {
		e.t.Fatalf("hookd serve does not answer on its socket:\n%s", r)
	}
	return d
}

// startServe starts `hookd serve` and returns at once.
func (e *env) startServe(args ...string) *served {
	e.t.Helper()
	d := &served{e: e, log: &logBuffer{}, done: make(chan struct{})}
	if e.inProcess() {
		d.sigs = make(chan os.Signal, 2)
		h := e.host()
		h.signals = d.sigs
		go func() {
			d.code = runIn(h, append([]string{"serve"}, args...), d.log, d.log)
			close(d.done)
		}()
		// A daemon still running at the end is stopped as a second
		// signal stops it: its runs are cancelled.
		e.t.Cleanup(func() {
			if !d.exited() {
				d.sigs <- syscall.SIGTERM
				d.sigs <- syscall.SIGTERM
			}
			<-d.done
		})
		return d
	}
	return e.startProcess(exec.Command(hookdBin, append([]string{"serve"}, args...)...))
}

// startProcess starts cmd, a `hookd serve` of the real binary (or a
// program that execs one), in the test's directory and returns at once.
func (e *env) startProcess(cmd *exec.Cmd) *served {
	e.t.Helper()
	d := &served{e: e, log: &logBuffer{}, done: make(chan struct{}), cmd: cmd}
	d.cmd.Dir = e.dir
	d.cmd.Env = append(childEnv(), e.environ...)
	d.cmd.Stdout = d.log
	d.cmd.Stderr = d.log
	placed := e.placeInCgroup(d.cmd)
	err := d.cmd.Start()
	placed()
	if err != nil {
		e.t.Fatalf("start hookd serve: %v", err)
	}
	go func() {
		_ = d.cmd.Wait()
		d.code = d.cmd.ProcessState.ExitCode()
		close(d.done)
	}()
	e.t.Cleanup(d.kill)
	return d
}

// needProcess fails a test that asked an in-process daemon for what only
// a process has.
func (d *served) needProcess(what string) {
	if d.cmd == nil {
		d.e.t.Fatalf("%s needs hookd serve as a process: set env.process before it starts", what)
	}
}

func (d *served) pid() int {
	d.needProcess("the daemon's pid")
	return d.cmd.Process.Pid
}

func (d *served) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// kill kills the daemon with SIGKILL, if it still runs, and waits for it.
func (d *served) kill() {
	d.needProcess("SIGKILL")
	if !d.exited() {
		_ = d.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-d.done
}

// signal sends sig to the daemon.
func (d *served) signal(sig syscall.Signal) {
	d.e.t.Helper()
	if d.sigs != nil && (sig == syscall.SIGTERM || sig == syscall.SIGINT) {
		d.sigs <- sig
		return
	}
	if err := syscall.Kill(d.pid(), sig); err != nil {
		d.e.t.Fatalf("signal hookd: %v", err)
	}
}

// wait waits for the daemon to exit and returns its exit code.
func (d *served) wait() int {
	d.e.t.Helper()
	select {
	case <-d.done:
		return d.code
	case <-time.After(waitLong):
		d.e.t.Fatalf("hookd serve did not exit; its log:\n%s", d.log)
		return 0
	}
}

// waitLog waits until the daemon's log holds text, failing the test when
// the daemon exits first.
func (d *served) waitLog(text string) {
	d.e.t.Helper()
	deadline := time.After(waitLong)
	for !strings.Contains(d.log.String(), text) {
		select {
		case <-d.done:
			if strings.Contains(d.log.String(), text) {
				return
			}
			d.e.t.Fatalf("hookd serve exited (code %d) before logging %q; its log:\n%s", d.code, text, d.log)
		case <-deadline:
			d.e.t.Fatalf("hookd serve did not log %q; its log:\n%s", text, d.log)
		case <-time.After(pollStep):
		}
	}
}

// newProcEnv is newEnv for a test that needs hookd as processes of the
// real binary: its daemon's pid, SIGKILL, signals, its exit, or messages
// that name files relative to the working directory.
func newProcEnv(t *testing.T, settings string, hooks map[string]string) *env {
	t.Helper()
	e := newEnv(t, settings, hooks)
	e.process = true
	return e
}

// newDaemonProcEnv is newProcEnv for a test where only the daemons must
// be processes (SIGKILL, their pids): the commands run to their end run
// in this process (cmdsInProcess).
func newDaemonProcEnv(t *testing.T, settings string, hooks map[string]string) *env {
	t.Helper()
	e := newProcEnv(t, settings, hooks)
	e.cmdsInProcess = true
	return e
}
