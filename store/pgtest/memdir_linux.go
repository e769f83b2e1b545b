package pgtest

import (
	"os"
	"syscall"
)

// tmpfsMagic is the f_type statfs reports for a tmpfs.
const tmpfsMagic = 0x01021994

// minMemFree is the free space a memory file system must have for the
// cluster to go there: its initdb takes 40 MB, each test database about
// 8 MB, and the write-ahead log up to max_wal_size.
const minMemFree = 2 << 30

// clusterParent is the directory the cluster's directory is made in: the
// temporary directory, or /dev/shm, whichever is first a memory file
// system (tmpfs) with room, else the temporary directory. The cluster's
// files are made and removed with every test database (CREATE and DROP
// DATABASE copy and delete a few hundred files): on a disk file system
// that costs the server about a third more CPU, all of it in the kernel,
// and nothing of a throwaway cluster needs a disk.
func clusterParent() string {
	for _, dir := range []string{os.TempDir(), "/dev/shm"} {
		var st syscall.Statfs_t
		if syscall.Statfs(dir, &st) != nil || st.Type != tmpfsMagic {
			continue
		}
		if uint64(st.Bavail)*uint64(st.Bsize) >= minMemFree && syscall.Access(dir, 0o3) == nil {
			return dir
		}
	}
	return os.TempDir()
}
