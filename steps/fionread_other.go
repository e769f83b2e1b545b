//go:build unix && !linux

package steps

import "golang.org/x/sys/unix"

// fionread asks how many bytes a pipe holds.
const fionread = unix.FIONREAD
