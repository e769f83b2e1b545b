package sandbox

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Landlock system calls, on the calling thread only. (go-landlock's
// syscall package has the same wrappers, but it links libcap's psx,
// which wraps pthread_create in the whole binary, for the all-threads
// restriction hookd must never use: it would confine the daemon.)

// landlock access rights (linux/landlock.h).
const (
	llExecute   = unix.LANDLOCK_ACCESS_FS_EXECUTE
	llWriteFile = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	llReadFile  = unix.LANDLOCK_ACCESS_FS_READ_FILE
	llReadDir   = unix.LANDLOCK_ACCESS_FS_READ_DIR
	llMakeSym   = unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	llRefer     = unix.LANDLOCK_ACCESS_FS_REFER
	llTruncate  = unix.LANDLOCK_ACCESS_FS_TRUNCATE
	llIoctlDev  = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	llBindTCP   = unix.LANDLOCK_ACCESS_NET_BIND_TCP
	llConnTCP   = unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	llScopeAbs  = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
	llScopeSig  = unix.LANDLOCK_SCOPE_SIGNAL
	llRuleNet   = 2 // LANDLOCK_RULE_NET_PORT
)

// rulesetAttr is struct landlock_ruleset_attr up to ABI 9 (scoped).
type rulesetAttr struct {
	fs, net, scoped uint64
}

// netPortAttr is struct landlock_net_port_attr.
type netPortAttr struct {
	allowed, port uint64
}

func landlockABI() (int, error) {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0, e
	}
	return int(v), nil
}

func landlockCreate(attr *rulesetAttr, abi int) (int, error) {
	size := unsafe.Sizeof(*attr)
	if abi < 6 {
		size = 16 // no scoped field before ABI 6
	}
	if abi < 4 {
		size = 8 // no network field before ABI 4
	}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(attr)), size, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

func landlockAddPath(rs, fd int, access uint64) error {
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rs), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func landlockAddPort(rs int, port uint16, access uint64) error {
	attr := netPortAttr{allowed: access, port: uint64(port)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rs), llRuleNet, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// landlockRestrict enforces the ruleset on the calling thread.
func landlockRestrict(rs int) error {
	_, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rs), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
