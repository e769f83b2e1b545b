//go:build linux

package tools

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hookd/hookd/internal/testtool"
	"golang.org/x/sys/unix"
)

// TestReadFileSwapRace performs the read race: while the model reads an
// ordinary file in a loop, another goroutine swaps, atomically
// (renameat2 RENAME_EXCHANGE) and as fast as it can, the directory that
// holds it or the file itself with a symbolic link to a credential store
// or hookd's state directory inside the workdir, and back. Not one read
// returns any part of a secret. Each case reads 150 times by default,
// 500 under HOOKD_TEST_LONG=1: opening the path checked component by
// component (in place of one os.Root each) leaks in the state directory
// case about every other read, in the .ssh case about one read in a
// hundred (a guard there catches most).
func TestReadFileSwapRace(t *testing.T) {
	reads := testtool.Count(150, 500)
	for _, tc := range []struct{ name, path, swap, target string }{
		{"directory to .ssh", "data/sub/x.txt", "data/sub", "../.ssh"},
		{"directory to the state directory", "data/sub/x.txt", "data/sub", "../.hookd"},
		{"file to .aws/credentials", "data/f.txt", "data/f.txt", "../.aws/credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, work := secretLayout(t)
			writeTree(t, work, map[string]string{
				"data/sub/x.txt": "public\n",
				"data/f.txt":     "public\n",
				".ssh/x.txt":     readKey + "\n",
				".hookd/x.txt":   readDB + "\n",
			})
			swap := filepath.Join(work, tc.swap)
			link := swap + ".link"
			if err := os.Symlink(tc.target, link); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			swaps := 0
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := unix.Renameat2(unix.AT_FDCWD, swap, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
						t.Errorf("swap: %v", err)
						return
					}
					swaps++
				}
			}()
			public := 0
			for range reads {
				out, err := call(t, env, "read_file", `{"path":"`+tc.path+`"}`)
				noSecret(t, "read_file "+tc.path, out)
				if err != nil {
					noSecret(t, "read_file "+tc.path+" error", err.Error())
				} else if out == "public\n" {
					public++
				} else {
					t.Errorf("read_file %s = %q", tc.path, out)
				}
			}
			close(stop)
			wg.Wait()
			t.Logf("%d reads, %d returned the public file, %d swaps", reads, public, swaps)
		})
	}
}

// TestReadFileLinksRefused: read_file follows no symbolic link, even
// one to an ordinary file inside the workdir, and reads no file with a
// second hard link (a credential file linked in from outside).
func TestReadFileLinksRefused(t *testing.T) {
	env, work := secretLayout(t)
	outside := realDir(t)
	writeTree(t, outside, map[string]string{"credentials": "aws_secret_access_key=" + readToken + "\n"})
	writeTree(t, work, map[string]string{"docs/other.md": "other\n"})
	if err := os.Symlink("../docs/other.md", filepath.Join(work, "data", "other")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(outside, "credentials"), filepath.Join(work, "data", "creds.txt")); err != nil {
		t.Skipf("cannot hard-link across temp directories here: %v", err)
	}
	for path, want := range map[string]string{
		"data/other":     "is a symbolic link",
		"data/creds.txt": "has 2 hard links",
	} {
		out, err := call(t, env, "read_file", `{"path":"`+path+`"}`)
		noSecret(t, "read_file "+path, out)
		if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), want) {
			t.Errorf("read_file %s: got %q, %v; want a refusal saying %q", path, out, err, want)
		}
	}
	if got := mustCall(t, env, "read_file", `{"path":"docs/other.md"}`); got != "other\n" {
		t.Errorf("docs/other.md = %q", got)
	}
}
