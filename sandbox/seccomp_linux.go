package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filters here are a few instructions each: the network part
// of a policy where no network namespace can be had, and the MPTCP
// refusal that Landlock's TCP port rules need (Landlock does not see
// IPPROTO_MPTCP sockets on ABI 7). A system call of another architecture
// (i386's int 0x80, x32) kills the process: the filter cannot judge it.

// auditArch is the AUDIT_ARCH of the running binary's architecture.
func auditArch() (uint32, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, true
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, true
	}
	return 0, false
}

func seccompSupported() bool {
	_, ok := auditArch()
	if !ok {
		return false
	}
	// PR_GET_SECCOMP answers where the kernel has seccomp at all.
	_, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	return err == nil
}

// seccomp_data offsets (little-endian: an argument's low half first).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg2 = 32
	x32Bit  = 0x40000000
	mptcp   = 262
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// seccompFilter is the program for a process without network (none: no
// socket but AF_UNIX, no io_uring) or with TCP ports (no MPTCP socket).
func seccompFilter(none bool) []unix.SockFilter {
	arch, ok := auditArch()
	if !ok {
		return nil
	}
	const (
		ld    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge   = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		allow = unix.SECCOMP_RET_ALLOW
		deny  = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
		kill  = unix.SECCOMP_RET_KILL_PROCESS
	)
	p := []unix.SockFilter{
		stmt(ld, offArch),
		jump(jeq, arch, 1, 0),
		stmt(ret, kill),
		stmt(ld, offNr),
	}
	if runtime.GOARCH == "amd64" {
		p = append(p, jump(jge, x32Bit, 0, 1), stmt(ret, kill))
	}
	if none {
		p = append(p,
			jump(jeq, uint32(unix.SYS_IO_URING_SETUP), 0, 1), stmt(ret, deny),
			jump(jeq, uint32(unix.SYS_SOCKET), 1, 0), stmt(ret, allow),
			stmt(ld, offArg0),
			jump(jeq, unix.AF_UNIX, 0, 1), stmt(ret, allow),
			stmt(ret, deny),
		)
		return p
	}
	return append(p,
		jump(jeq, uint32(unix.SYS_SOCKET), 1, 0), stmt(ret, allow),
		stmt(ld, offArg2),
		jump(jeq, mptcp, 0, 1), stmt(ret, deny),
		stmt(ret, allow),
	)
}

// loadSeccomp installs prog on the calling thread (no TSYNC: only the
// thread, and what it forks); no_new_privs must be set.
func loadSeccomp(prog []unix.SockFilter) error {
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fp))); e != 0 {
		return fmt.Errorf("sandbox: seccomp: %w", e)
	}
	return nil
}
