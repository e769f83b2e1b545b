package pgtest

import "syscall"

// serverAttr runs the server as cred. Pdeathsig: a test binary that dies
// (a panic, a timeout, SIGKILL) takes its server with it. SIGQUIT is
// PostgreSQL's immediate stop.
func serverAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
}
