package server

import (
	"io"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/sandbox"
)

// TestAPISocketRefusesContainedPeer: a process a hook started reaches
// the API socket (nothing hides it from a path-socket connect but the
// mount namespace, which a non-root hookd has not); the listener drops
// it. Shown live first: the same connection through the bare listener
// is accepted.
func TestAPISocketRefusesContainedPeer(t *testing.T) {
	t.Parallel()
	py := testtool.Need(t, "python3")
	sb := sandbox.Default()
	testtool.NeedSandbox(t, sb.Status(), testtool.CgroupTrees)
	dir := t.TempDir()
	sock := filepath.Join(dir, "api.sock")
	connect := `import socket,sys
s=socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b"hello")
s.recv(10)`
	// accepted reports whether ln hands the peer's connection over. The
	// peer blocks on its read until the connection is closed: it exits
	// on its own only when the listener dropped it, so both answers are
	// events, not a wait that a loaded machine could outlast.
	accepted := func(ln net.Listener) bool {
		cmd := exec.Command(py, "-c", connect, sock)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		cmd.Dir = dir
		proc, err := sb.Start(cmd, &sandbox.Policy{Workdir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer proc.Release(false)
		got := make(chan net.Conn, 1)
		go func() {
			c, err := ln.Accept()
			if err == nil {
				got <- c
			}
		}()
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		select {
		case c := <-got:
			c.Close()
			<-exited
			return true
		case <-exited:
			return false // dropped: its read saw the connection closed
		case <-time.After(time.Minute):
			proc.Kill()
			<-exited
			t.Fatal("the peer neither was accepted nor ended in a minute")
			return false
		}
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if !accepted(ln) {
		t.Fatal("the bare listener did not accept the contained peer: the test shows nothing")
	}
	guarded := sandboxedPeerListener{Listener: ln, sb: sb, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if accepted(guarded) {
		t.Error("the API listener accepted a process a hook started")
	}
}
