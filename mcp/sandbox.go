package mcp

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/sandbox"
)

// sandboxTransport starts a stdio server under its sandbox policy and
// talks to it over stdin and stdout, as the SDK's CommandTransport does;
// the server's cgroup lives as long as the server, and closing the
// connection ends everything the server started.
type sandboxTransport struct {
	cmd       *exec.Cmd
	policy    *sandbox.Policy
	terminate time.Duration
	clock     clock.Clock
}

func (t *sandboxTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	proc, err := sandbox.Default().Start(t.cmd, t.policy)
	if err != nil {
		return nil, err
	}
	w := &serverStdin{WriteCloser: stdin, cmd: t.cmd, proc: proc, terminate: t.terminate, clock: t.clock}
	return (&sdk.IOTransport{Reader: io.NopCloser(stdout), Writer: w}).Connect(ctx)
}

// serverStdin is the server's standard input; closing it stops the
// server as the MCP specification says (close stdin, wait, SIGTERM,
// wait, SIGKILL), then kills whatever the server left in its tree.
type serverStdin struct {
	io.WriteCloser
	cmd       *exec.Cmd
	proc      *sandbox.Process
	terminate time.Duration
	clock     clock.Clock
	once      sync.Once
	err       error
}

func (s *serverStdin) Close() error {
	s.once.Do(func() { s.err = s.stop() })
	return s.err
}

func (s *serverStdin) stop() error {
	defer s.proc.Release(false)
	_ = s.WriteCloser.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	wait := func() (error, bool) {
		t := s.clock.NewTimer(s.terminate)
		defer t.Stop()
		select {
		case err := <-done:
			return err, true
		case <-t.C():
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return exitErr(err)
	}
	s.proc.Signal(syscall.SIGTERM)
	if err, ok := wait(); ok {
		return exitErr(err)
	}
	s.proc.Kill()
	if err, ok := wait(); ok {
		return exitErr(err)
	}
	return fmt.Errorf("mcp server pid %d does not exit", s.proc.Pid())
}

// exitErr drops the exit status of a server that was stopped: ending
// it is what was asked.
func exitErr(err error) error {
	if _, ok := err.(*exec.ExitError); ok {
		return nil
	}
	return err
}
