//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package main

import "golang.org/x/sys/unix"

// getTermios is the ioctl that reads a terminal's settings (TCGETS on
// Linux).
const getTermios = unix.TIOCGETA
