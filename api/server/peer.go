package server

import (
	"log/slog"
	"net"

	"github.com/hookd/hookd/sandbox"
)

// sandboxedPeerListener refuses connections whose peer runs inside one
// of the sandbox's process trees: a process a hook started must not
// drive hookd (fire hooks, read runs) through the API socket. Path
// sockets are neither covered by Landlock on ABI 7 nor by a network
// namespace, so this check is the wall.
type sandboxedPeerListener struct {
	net.Listener
	sb  *sandbox.Sandbox
	log *slog.Logger
}

func (l sandboxedPeerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		pid, ok := peerPID(c)
		if ok && l.sb.Contains(pid) {
			l.log.Warn("control API: refused a connection from a process a hook started", "pid", pid)
			c.Close()
			continue
		}
		return c, nil
	}
}
