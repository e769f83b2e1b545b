package process

import "golang.org/x/sys/unix"

// fionread asks how many bytes a pipe holds (FIONREAD is named TIOCINQ
// on Linux).
const fionread = unix.TIOCINQ
