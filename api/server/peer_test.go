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
		select {
		case c := <-got:
			c.Close()
			_ = cmd.Wait()
			return true
		case <-time.After(2 * time.Second):
			proc.Kill()
			_ = cmd.Wait()
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
