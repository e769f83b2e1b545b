package process

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

// TestCommandKillsBackgroundChildren: whatever a command leaves running in
// its process group when it exits is killed, and the result says so,
// whether or not the child holds the output pipes, and when it ignores
// SIGTERM.
func TestCommandKillsBackgroundChildren(t *testing.T) {
	for _, tc := range []struct{ name, script string }{
		{"detached output", "sleep 100 >/dev/null 2>&1 & echo $!"},
		{"holds stdout", "sleep 100 & echo $!; echo started"},
		{"ignores SIGTERM", "(trap '' TERM; sleep 100) >/dev/null 2>&1 & echo $!"},
		{"grandchild", "sh -c 'sleep 100 >/dev/null 2>&1 & echo $!'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Command{Argv: []string{"sh", "-c", tc.script}, KillGrace: 300 * time.Millisecond}
			r := c.Run(context.Background())
			pid := testtool.FirstPID(t, r.Stdout)
			if r.Err != nil || r.ExitCode != 0 {
				t.Fatalf("Err %v, ExitCode %d; want a normal exit", r.Err, r.ExitCode)
			}
			if !testtool.ProcessGone(pid) {
				t.Errorf("background process %d still runs after the command ended", pid)
			}
			if len(r.Killed) == 0 {
				t.Errorf("Killed is empty; want the background process reported")
			}
			if !strings.Contains(r.Stderr, "hookd: killed") || !strings.Contains(r.Stderr, "still running after the command exited") {
				t.Errorf("stderr %q lacks the note", r.Stderr)
			}
		})
	}
}

// TestCommandWithoutBackgroundReportsNothing: a command that leaves
// nothing behind gets no note.
func TestCommandWithoutBackgroundReportsNothing(t *testing.T) {
	r := (&Command{Argv: []string{"sh", "-c", "echo hi; sleep 0.01 & wait"}}).Run(context.Background())
	if r.Err != nil || len(r.Killed) != 0 || r.Stderr != "" {
		t.Errorf("Err %v, Killed %v, stderr %q; want nothing to report", r.Err, r.Killed, r.Stderr)
	}
}

// TestCommandDetachLeavesDaemon: with Detach the background process
// outlives the command and is reported; it is not tracked.
func TestCommandDetachLeavesDaemon(t *testing.T) {
	var tracked []engine.ProcGroup
	// The shell ends only once its child runs sleep: a child still between
	// fork and exec is named sh, which a busy machine gave the report.
	c := &Command{Argv: []string{"sh", "-c", `sleep 100 >/dev/null 2>&1 & p=$!; echo $p
until read -r name </proc/$p/comm && [ "$name" = sleep ]; do :; done`}, Detach: true,
		Track: func(g engine.ProcGroup) func() { tracked = append(tracked, g); return nil }}
	r := c.Run(context.Background())
	pid := testtool.FirstPID(t, r.Stdout)
	if testtool.ProcessGone(pid) {
		t.Fatalf("detached process %d was killed", pid)
	}
	if len(r.Detached) != 1 || r.Detached[0].PID != pid || r.Detached[0].Name != "sleep" || len(r.Killed) != 0 {
		t.Errorf("Detached %v, Killed %v; want [%d (sleep)]", r.Detached, r.Killed, pid)
	}
	if !strings.Contains(r.Stderr, "left 1 background process(es) running (detach: true): "+strconv.Itoa(pid)+" (sleep)") {
		t.Errorf("stderr %q lacks the note", r.Stderr)
	}
	if len(tracked) != 0 {
		t.Errorf("a detached command was tracked: %v", tracked)
	}
}

// TestCommandDetachStillKilledOnTimeout: detach does not survive a
// timeout: the whole group goes.
func TestCommandDetachStillKilledOnTimeout(t *testing.T) {
	r, _ := testtool.UntilReady(t, 300*time.Millisecond, func(timeout time.Duration) CommandResult {
		c := &Command{Argv: []string{"sh", "-c", "sleep 100 >/dev/null 2>&1 & echo $!; sleep 100"}, Detach: true,
			Timeout: timeout, KillGrace: 300 * time.Millisecond}
		return c.Run(context.Background())
	}, func(r CommandResult) bool { return strings.Contains(r.Stdout, "\n") })
	pid := testtool.FirstPID(t, r.Stdout)
	if !r.TimedOut || !testtool.WaitGone(pid, 5*time.Second) {
		t.Errorf("TimedOut %v, background gone %v; want the group killed", r.TimedOut, testtool.ProcessGone(pid))
	}
}

// TestCommandTracksGroup: Track hears the group as it starts, with the
// leader's start time and the boot, and the function it returns is called
// once, when nothing of the group is left (after the sweep of the
// command's background child).
func TestCommandTracksGroup(t *testing.T) {
	var got engine.ProcGroup
	dones := 0
	var aliveAtDone bool
	var returned atomic.Bool
	c := &Command{Argv: []string{"sh", "-c", "echo $$; sleep 100 >/dev/null 2>&1 &"}, KillGrace: 5 * time.Second,
		Track: func(g engine.ProcGroup) func() {
			got = g
			return func() {
				dones++
				aliveAtDone, _ = groupAlive(g.PGID)
				if returned.Load() {
					t.Error("the record was dropped after Run returned")
				}
			}
		}}
	r := c.Run(context.Background())
	returned.Store(true)
	pid, _ := strconv.Atoi(strings.TrimSpace(r.Stdout))
	if got.PGID != pid || got.Start == 0 || got.Boot == "" {
		t.Errorf("tracked %+v; want pgid %d with a start time and a boot id", got, pid)
	}
	if dones != 1 || aliveAtDone {
		t.Errorf("record dropped %d times (group alive then: %v); want once, with the group gone", dones, aliveAtDone)
	}
	if len(r.Killed) != 1 {
		t.Errorf("killed %v; want the background sleep", r.Killed)
	}
}

// TestCommandRecordsGroupWhileRunning: the group's record (Track) is made
// as soon as the command started, while Run waits for the command, and
// Run returns its result only after Track returned, however the command
// ends: its own exit, an exit that leaves a process behind to sweep, its
// timeout, a cancel. The command waits at a gate that Track opens (or
// 30 s at most), so it is still there when Track starts; then Track holds the record until the
// leader is reaped (which only Run's wait does) and a moment more: a Run
// that recorded the group after the command ended would find it gone, one
// that waited for the record before waiting for the command would never
// see it reaped, and one that did not wait for the record would return
// without it.
func TestCommandRecordsGroupWhileRunning(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  string
		timeout time.Duration // the command then stays at the gate: Track does not open it
		cancel  bool
	}{
		{name: "exit", script: "exit 3"},
		{name: "background left", script: "sleep 100 >/dev/null 2>&1 & exit 0"},
		{name: "timeout", script: "exit 0", timeout: 300 * time.Millisecond},
		{name: "cancel", script: "exec sleep 100", cancel: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			gate := filepath.Join(t.TempDir(), "gate")
			var recorded atomic.Bool
			var tracked engine.ProcGroup
			var runningAtRecord, reaped bool
			c := &Command{Argv: []string{"sh", "-c", `i=0; until [ -e "$GATE" ] || [ $i -ge 3000 ]; do sleep 0.01; i=$((i+1)); done; ` + tc.script},
				Env: append(os.Environ(), "GATE="+gate), Timeout: tc.timeout, KillGrace: 300 * time.Millisecond,
				Track: func(g engine.ProcGroup) func() {
					tracked = g
					st, err := readStat(g.PGID)
					runningAtRecord = err == nil && leaderStart(g, st.start) && st.live()
					switch {
					case tc.cancel:
						cancel()
					case tc.timeout == 0:
						if err := os.WriteFile(gate, nil, 0o600); err != nil {
							t.Error(err)
						}
					}
					reaped = waitReaped(g, 30*time.Second)
					time.Sleep(50 * time.Millisecond) // a Run that does not wait for Track returns meanwhile
					recorded.Store(true)
					return nil
				}}
			r := c.Run(ctx)
			if !recorded.Load() {
				t.Fatalf("Run returned (exit %d, err %v) before the process group's record was made", r.ExitCode, r.Err)
			}
			if !runningAtRecord && tc.timeout == 0 { // a timeout may pass before Track starts, on a busy machine
				t.Errorf("the leader %d had ended when its group was recorded: the record was not made as soon as the command started", tracked.PGID)
			}
			if !reaped {
				t.Errorf("the leader %d was not reaped while its group was being recorded: Run did not wait for the command meanwhile", tracked.PGID)
			}
			if tracked.Start == 0 || tracked.Boot == "" {
				t.Errorf("tracked %+v; want the leader's start time and the boot, read before it was reaped", tracked)
			}
			wantErr := tc.timeout > 0 || tc.cancel
			if (r.Err != nil) != wantErr || (tc.timeout > 0) != r.TimedOut {
				t.Errorf("err %v, timed out %v; want an error %v, timed out %v", r.Err, r.TimedOut, wantErr, tc.timeout > 0)
			}
			if want := map[string]int{"exit": 3, "background left": 0}; !wantErr && r.ExitCode != want[tc.name] {
				t.Errorf("exit code %d; want %d", r.ExitCode, want[tc.name])
			}
			if tc.name == "background left" && len(r.Killed) != 1 {
				t.Errorf("killed %v; want the background sleep", r.Killed)
			}
		})
	}
}

// waitReaped waits until the leader of g is reaped (its pid is free, or
// names a process started at another time) or d has passed.
func waitReaped(g engine.ProcGroup, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if st, err := readStat(g.PGID); err != nil || st.start != g.Start {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestCommandTrackPanic: a panic of Track's, which runs on a goroutine of
// its own, is raised in Run's caller once the command ended (where the
// engine turns a step's panic into a step error), not in a goroutine
// where it would end hookd.
func TestCommandTrackPanic(t *testing.T) {
	c := &Command{Argv: []string{"sh", "-c", "echo $$"}, Track: func(engine.ProcGroup) func() { panic("track boom") }}
	defer func() {
		if p := recover(); p != "track boom" {
			t.Errorf("recovered %v; want Track's panic", p)
		}
	}()
	c.Run(context.Background())
	t.Error("Run returned although Track panicked")
}

// startGroup starts `sleep 100` leading its own process group.
func startGroup(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "100")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// TestReapGroup: a group recorded by a previous hookd is killed when it
// is the one recorded, and left alone when the record names another boot
// or another process under the same pid.
func TestReapGroup(t *testing.T) {
	cmd := startGroup(t)
	g := procGroupOf(cmd.Process.Pid, 0, false) // the leader's start read from /proc
	for _, tc := range []struct {
		name string
		g    engine.ProcGroup
	}{
		{"other boot", engine.ProcGroup{PGID: g.PGID, Start: g.Start, Boot: "another-boot"}},
		{"reused pid", engine.ProcGroup{PGID: g.PGID, Start: g.Start - 1, Boot: g.Boot}},
		{"leader older than its members", engine.ProcGroup{PGID: g.PGID, Start: g.Start + 1000, Boot: g.Boot}},
		{"reused pid, window before", engine.ProcGroup{PGID: g.PGID, Start: g.Start - 5, StartEnd: g.Start - 1, Boot: g.Boot}},
		{"window after the leader", engine.ProcGroup{PGID: g.PGID, Start: g.Start + 1, StartEnd: g.Start + 5, Boot: g.Boot}},
		{"window upside down", engine.ProcGroup{PGID: g.PGID, Start: g.Start + 1, StartEnd: g.Start - 1, Boot: g.Boot}},
		{"other boot, window", engine.ProcGroup{PGID: g.PGID, Start: g.Start - 1, StartEnd: g.Start + 1, Boot: "another-boot"}},
	} {
		killed, err := ReapGroup(tc.g)
		if err != nil || len(killed) != 0 || testtool.ProcessGone(cmd.Process.Pid) {
			t.Errorf("%s: killed %v, err %v; want the group left alone", tc.name, killed, err)
		}
	}
	killed, err := ReapGroup(g)
	if err != nil || len(killed) != 1 || killed[0] != strconv.Itoa(cmd.Process.Pid)+" (sleep)" {
		t.Fatalf("ReapGroup = %v, %v; want the leader killed", killed, err)
	}
	_ = cmd.Wait()
	if !testtool.ProcessGone(cmd.Process.Pid) {
		t.Errorf("group %d still runs after ReapGroup", g.PGID)
	}
}

func TestParseStat(t *testing.T) {
	line := "4242 (a (b) c) S 1 4240 4240 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 100"
	st, err := parseStat([]byte(line))
	if err != nil || st.pid != 4242 || st.name != "a (b) c" || st.state != 'S' || st.pgid != 4240 || st.start != 987654 {
		t.Errorf("parseStat = %+v, %v", st, err)
	}
	for _, bad := range []string{
		"12 (x) S 1",
		"12 (x) S 1 4240 4240 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0\n", // one field short of starttime
		"12 (x) SS 1 4240 4240 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000",
		"12 (x) S 1 x 4240 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000",
		"12 (x) S 1 4240 4240 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 -5 1000",
		"12 x S 1 4240 4240",
	} {
		if st, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) = %+v; want an error", bad, st)
		}
	}
}

// TestReadStatWhole: readStat reads the whole of /proc/PID/stat (with the
// read that returns nothing left out), as os.ReadFile reads it.
func TestReadStatWhole(t *testing.T) {
	cmd := startGroup(t)
	pid := cmd.Process.Pid
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	want, err := parseStat(b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readStat(pid)
	// The state is the one field that may change between the two reads:
	// a process that has just started runs (R), then sleeps (S).
	if err != nil || got.state == 0 {
		t.Errorf("readStat(%d) = %+v, %v; want %+v", pid, got, err, want)
	}
	if got.state = want.state; got != want {
		t.Errorf("readStat(%d) = %+v; want %+v, whatever the state", pid, got, want)
	}
	if got.name != "sleep" || got.pgid != pid || got.start == 0 {
		t.Errorf("readStat(%d) = %+v; want sleep leading its group", pid, got)
	}
	var small [8]byte // forces reads that fill the buffer: the content still comes whole
	whole, err := readProcFile(fmt.Sprintf("/proc/%d/stat", pid), small[:0])
	if err != nil || string(whole[:len(whole)-1]) == "" || whole[len(whole)-1] != '\n' {
		t.Errorf("readProcFile with a small buffer = %q, %v; want the whole line", whole, err)
	}
}

// TestBootTickWindow: the clock read before and after a fork bounds the
// child's start time as /proc/PID/stat gives it (the unit, USER_HZ, is
// the one bootTick assumes), and a group so recorded is reaped as one
// recorded with the /proc read.
func TestBootTickWindow(t *testing.T) {
	if _, ok := bootTick(); !ok {
		t.Skip("no CLOCK_BOOTTIME")
	}
	for i := 0; i < 20; i++ {
		before, ok := bootTick()
		cmd := exec.Command("sleep", "100")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		g := procGroupOf(cmd.Process.Pid, before, ok)
		st, err := readStat(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if g.StartEnd == 0 || !leaderStart(g, st.start) {
			t.Errorf("leader %d started at tick %d (/proc); recorded window [%d, %d]", cmd.Process.Pid, st.start, g.Start, g.StartEnd)
		}
		if i%2 == 1 {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			continue
		}
		killed, err := ReapGroup(g)
		if err != nil || len(killed) != 1 || killed[0] != strconv.Itoa(cmd.Process.Pid)+" (sleep)" {
			t.Errorf("ReapGroup(%+v) = %v, %v; want the leader killed", g, killed, err)
		}
		_ = cmd.Wait()
	}
}

// TestReapGroupRefusesWideWindow performs the attack of a forged record
// (a hostile or garbage journal slot): the right pid and boot, with a
// window of start ticks that admits every process ([1, 2^64-1]) or one
// far wider than a fork takes. The group, a live `sleep` that hookd did
// not start, is left alone. A fork slower than maxStartWindow is recorded
// with the leader's exact tick read from /proc, and is still reaped.
func TestReapGroupRefusesWideWindow(t *testing.T) {
	cmd := startGroup(t)
	exact := procGroupOf(cmd.Process.Pid, 0, false)
	if exact.Start == 0 {
		t.Fatal("no start tick from /proc")
	}
	for _, g := range []engine.ProcGroup{
		{PGID: exact.PGID, Start: 1, StartEnd: math.MaxUint64, Boot: exact.Boot},
		{PGID: exact.PGID, Start: 1, StartEnd: exact.Start + 1, Boot: exact.Boot},
		{PGID: exact.PGID, Start: exact.Start - maxStartWindow, StartEnd: exact.Start + 1, Boot: exact.Boot},
	} {
		killed, err := ReapGroup(g)
		if err != nil || len(killed) != 0 || testtool.ProcessGone(cmd.Process.Pid) {
			t.Fatalf("ReapGroup(%+v) = %v, %v: a forged window killed a process hookd did not start", g, killed, err)
		}
	}
	// A window as wide as allowed, holding the leader's tick, is reaped;
	// so is a slow fork's record (the window is dropped for /proc's tick).
	slow := procGroupOf(cmd.Process.Pid, exact.Start-10*maxStartWindow, true)
	if slow.StartEnd != 0 || slow.Start != exact.Start {
		t.Errorf("a fork of %d ticks recorded %+v; want the exact tick %d from /proc", 10*maxStartWindow, slow, exact.Start)
	}
	killed, err := ReapGroup(engine.ProcGroup{PGID: exact.PGID, Start: exact.Start - maxStartWindow + 1, StartEnd: exact.Start + 1, Boot: exact.Boot})
	if err != nil || len(killed) != 1 {
		t.Errorf("ReapGroup with a window of %d ticks around the leader = %v, %v; want it killed", maxStartWindow, killed, err)
	}
}
