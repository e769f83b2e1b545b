package config

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

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
	const hint = "; fix it, or set allow_insecure_hooks: true in hookd.yaml to load it anyway"
	if fi.Mode().Perm()&0o002 != 0 {
		what := "file"
		if fi.IsDir() {
			what = "directory"
		}
		return fmt.Errorf("refusing to load: the %s is writable by every user (mode %04o; chmod o-w %s)%s",
			what, fi.Mode().Perm(), path, hint)
	}
	if uid := uint32(os.Getuid()); st.Uid != uid && st.Uid != 0 {
		return fmt.Errorf("refusing to load: it is owned by uid %d, not by hookd's user (uid %d) or root%s", st.Uid, uid, hint)
	}
	return nil
}
