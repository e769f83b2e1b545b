package process

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// pipeCloexec makes a pipe whose ends close on exec. macOS has no pipe2:
// the ends are marked close-on-exec under syscall.ForkLock, as os.Pipe
// does there, so that no child forked meanwhile inherits them.
func pipeCloexec(fds *[2]int) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err := unix.Pipe(fds[:]); err != nil {
		return fmt.Errorf("pipe: %w", err)
	}
	unix.CloseOnExec(fds[0])
	unix.CloseOnExec(fds[1])
	return nil
}
