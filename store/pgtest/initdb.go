package pgtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// initdbArgs are initdb's options but the data directory.
var initdbArgs = []string{"-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions"}

// initCluster makes data a new cluster whose superuser is user, with
// bin's initdb run as cred. initdb takes a second or more of CPU for the
// same 40 MB of files every time, so the first test binary of a machine
// keeps its cluster, untouched, in clusterParent (initCache), and the
// next ones copy it: for the same binaries, options and user, they get
// the same files.
func initCluster(bin, dir, data, user string, cred *syscall.Credential) error {
	cache, err := initCache(bin, user)
	if err == nil {
		if _, err := os.Stat(cache); err == nil {
			if err := copyTree(cache, data); err == nil {
				return nil
			}
			os.RemoveAll(data) // made anew below
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), append([]string{"-D", data, "-U", user}, initdbArgs...)...)
	initdb.Dir = dir
	initdb.Env = serverEnv()
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	if cache != "" {
		keepCluster(data, cache)
	}
	return nil
}

// initCache is where the cluster initdb made is kept: a directory named
// by what makes its files (the binaries, by path, size and time, the
// options, the superuser, and who runs the test, who owns the copy).
func initCache(bin, user string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, bin, user, os.Geteuid(), strings.Join(initdbArgs, " "))
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(bin, name))
		if err != nil {
			return "", err
		}
		fmt.Fprintln(h, name, fi.Size(), fi.ModTime().UnixNano())
	}
	return filepath.Join(clusterParent(), "hookd-pgtest-initdb-"+hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// keepCluster copies the new cluster in data to cache, whole or not at
// all: copied beside it, then renamed (a test binary that got there
// first keeps its copy). It is best effort: without a copy, the next
// test binary runs initdb.
func keepCluster(data, cache string) {
	tmp, err := os.MkdirTemp(filepath.Dir(cache), filepath.Base(cache)+".new-")
	if err != nil {
		return
	}
	defer os.RemoveAll(tmp)
	if copyTree(data, filepath.Join(tmp, "data")) == nil {
		_ = os.Rename(filepath.Join(tmp, "data"), cache)
	}
}

// copyTree copies directory src to dst, which must not exist, with its
// files' modes and owners.
func copyTree(src, dst string) error {
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("copy %s: %w\n%s", src, err, out)
	}
	return nil
}
