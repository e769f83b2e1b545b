package config

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"sync"
	"syscall"
)

// noOwner is the owner of a file on a platform without owners.
const noOwner = math.MaxUint32

// checkOwnership refuses a hooks directory or hook file that someone else
// could have written, as sshd's StrictModes does: one writable by every
// user, or owned by a user other than hookd's own and root. fi describes
// path (symbolic links followed). It returns nil when the file is safe to
// trust, or when the platform has no owners.
func checkOwnership(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return checkOwner(path, fi.IsDir(), fi.Mode().Perm(), st.Uid)
}

// ownUID is hookd's user id, read once for the thousands of files a load
// checks: a process's user does not change under it.
var ownUID = sync.OnceValue(func() uint32 { return uint32(os.Getuid()) })

// checkOwner is checkOwnership of a file or directory (isDir) with
// permissions perm owned by uid (noOwner: the platform has no owners).
func checkOwner(path string, isDir bool, perm fs.FileMode, uid uint32) error {
	if uid == noOwner {
		return nil
	}
	const hint = "; fix it, or set allow_insecure_hooks: true in hookd.yaml to load it anyway"
	if perm&0o002 != 0 {
		what := "file"
		if isDir {
			what = "directory"
		}
		return fmt.Errorf("refusing to load: the %s is writable by every user (mode %04o; chmod o-w %s)%s",
			what, perm, path, hint)
	}
	if own := ownUID(); uid != own && uid != 0 {
		return fmt.Errorf("refusing to load: it is owned by uid %d, not by hookd's user (uid %d) or root%s", uid, own, hint)
	}
	return nil
}
