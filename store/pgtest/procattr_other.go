//go:build unix && !linux

package pgtest

import "syscall"

// serverAttr runs the server as cred. Only Linux has Pdeathsig: here a
// test binary that dies without running Main's cleanup leaves its server
// running.
func serverAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
