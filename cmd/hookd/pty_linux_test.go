package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// runOnPTY runs cmd with its stdout and stderr on a new pseudo-terminal
// of cols columns, and returns what it printed there (line ends as
// "\n": the terminal writes "\r\n").
func runOnPTY(t *testing.T, cmd *exec.Cmd, cols int) (string, error) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("the pseudo-terminal's number: %v", err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open the pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: uint16(cols)}); err != nil {
		slave.Close()
		t.Fatalf("set the pseudo-terminal's size: %v", err)
	}
	cmd.Stdout, cmd.Stderr = slave, slave
	err = cmd.Start()
	slave.Close() // the child holds it; reading ends (EIO) when it exits
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, _ = io.Copy(&out, master) // ends with EIO once the child is gone
	err = cmd.Wait()
	return strings.ReplaceAll(out.String(), "\r\n", "\n"), err
}

// sgr matches the colour sequences hookd's tables use.
var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// TestListColourOnTerminal: `hookd list` of the real binary on an
// 80-column terminal colours its table with real escape sequences (not
// termSafe's printed \u001b, which also made every row overflow) and
// fits the width, measured without them.
func TestListColourOnTerminal(t *testing.T) {
	long := "a-hook-whose-name-says-rather-too-much-about-it"
	e := newEnv(t, "", map[string]string{
		long + ".yaml": "trigger: {every: 5m}\nsteps:\n  - type: shell\n    command: echo hi\nskip_llm: true\n",
		"another.yaml": "trigger: {cron: \"0 3 * * *\"}\nsteps:\n  - type: shell\n    command: echo hi\nskip_llm: true\n",
	})
	e.must(0, "fire", long, "--wait")
	if r := e.must(0, "list"); !strings.Contains(r.stdout, long) || maxWidth(r.stdout) <= 80 {
		t.Fatalf("piped, the list must be wider than 80 columns for this test:\n%s", r)
	}
	cmd := e.newCommand(context.Background(), "list")
	cmd.Env = append(cmd.Env, "TERM=xterm", "NO_COLOR=")
	out, err := runOnPTY(t, cmd, 80)
	if err != nil {
		t.Fatalf("hookd list on a terminal: %v\n%q", err, out)
	}
	if strings.Contains(out, `\u001b`) || !strings.Contains(out, "\x1b[32mcompleted") || !strings.Contains(out, "\x1b[1mNAME") {
		t.Errorf("the table is not coloured with real escape sequences:\n%q", out)
	}
	if n := maxWidth(sgr.ReplaceAllString(out, "")); n > 80 {
		t.Errorf("a line of %d columns on an 80-column terminal:\n%s", n, out)
	}
	if !strings.Contains(out, "…") {
		t.Errorf("nothing was cut to fit 80 columns:\n%s", out)
	}
}
