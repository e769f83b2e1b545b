//go:build !linux

package server

import "net"

// peerPID is unknown here: no process tree is contained on this system.
func peerPID(net.Conn) (int, bool) { return 0, false }
