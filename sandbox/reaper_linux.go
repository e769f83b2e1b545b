package sandbox

import (
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Where hookd cannot give a process tree a cgroup of its own, it starts
// the tree under a reaper: hookd's own binary, started again with
// reaperArg, marks itself a child subreaper (PR_SET_CHILD_SUBREAPER), so
// that whatever the tree leaves behind, setsid'd and double-forked
// processes too, is reparented to it rather than to PID 1; it runs the
// command, and when the command has exited it kills and reaps every
// descendant left (unless the step detaches them). SIGUSR1 makes it do
// that at once, command included: how hookd ends a tree on a timeout.
//
// The reaper is dispatched from this package's init, before main or
// TestMain, so every binary that can start a sandboxed process (hookd,
// and the tests of the packages that use this one) can be its own.
const reaperArg = "__hookd-reaper"

func init() {
	if len(os.Args) > 3 && os.Args[1] == reaperArg {
		os.Exit(reaperMain(os.Args[2] == "detach", os.Args[3], os.Args[4:]))
	}
}

// reaperArgv rewrites cmd to run under the reaper exe.
func reaperArgv(exe string, cmd *exec.Cmd, detach bool) {
	mode := "sweep"
	if detach {
		mode = "detach"
	}
	args := append([]string{exe, reaperArg, mode, cmd.Path}, cmd.Args...)
	cmd.Path, cmd.Args = exe, args
}

func reaperMain(detach bool, path string, argv []string) int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		os.Stderr.WriteString("hookd reaper: " + err.Error() + "\n")
		return 126
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP) // they reach the command through the group
	cmd := &exec.Cmd{Path: path, Args: argv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	if err := cmd.Start(); err != nil {
		os.Stderr.WriteString("hookd reaper: " + err.Error() + "\n")
		return 127
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	killed := false
	select {
	case <-done:
	case <-usr1:
		killed = true
		killDescendants()
		<-done
	}
	code := 0
	if killed {
		code = 128 + int(syscall.SIGKILL) // reaped here, maybe before cmd.Wait saw it
	}
	if ps := cmd.ProcessState; ps != nil {
		code = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	if !detach {
		killDescendants()
	}
	return code
}

// killDescendants kills every process below the reaper and reaps it:
// they are all its children or theirs, and orphans come to it.
func killDescendants() {
	for range 200 {
		kids := descendants(os.Getpid())
		if len(kids) == 0 {
			return
		}
		for _, pid := range kids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// descendants lists the processes below pid (/proc/PID/task/*/children).
func descendants(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
				out = append(out, descendants(c)...)
			}
		}
	}
	return out
}
