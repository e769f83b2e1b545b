//go:build unix && !darwin

package process

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// pipeCloexec makes a pipe whose ends close on exec, in one system call.
func pipeCloexec(fds *[2]int) error {
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("pipe2: %w", err)
	}
	return nil
}
