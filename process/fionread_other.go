//go:build unix && !linux

package process

// fionread asks how many bytes a pipe holds: FIONREAD, _IOR('f', 127,
// int) in <sys/filio.h>, which is 0x4004667f on macOS, the BSDs, illumos
// and AIX alike. golang.org/x/sys/unix does not name it there.
const fionread = 0x4004667f
