//go:build linux

package tools

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hookd/hookd/internal/testtool"
	"golang.org/x/sys/unix"
)

// TestWriteFileSwapRace performs the race of issue 10: while the model
// writes to data/sub/x.yaml in a loop, another process swaps data/sub,
// atomically (renameat2 RENAME_EXCHANGE), with a symbolic link to
// ../hooks.d (protected) or to ../elsewhere (outside the write_roots), and
// back, as fast as it can. Not one write lands in the link's target, and
// no temporary file is left behind. Each target is written 100 times by
// default, 500 under HOOKD_TEST_LONG=1: opening the path checked
// component by component (in place of one os.Root each) lands writes in
// both targets within the default 100.
func TestWriteFileSwapRace(t *testing.T) {
	writes := testtool.Count(100, 500)
	for _, target := range []string{"hooks.d", "elsewhere"} {
		t.Run(target, func(t *testing.T) {
			env, work := daemonLayout(t, "data")
			sub := filepath.Join(work, "data", "sub")
			link := filepath.Join(work, "data", "sub.link")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../"+target, link); err != nil {
				t.Fatal(err)
			}
			before := tree(t, filepath.Join(work, target))
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
					if err := unix.Renameat2(unix.AT_FDCWD, sub, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
						t.Errorf("swap: %v", err)
						return
					}
					swaps++
				}
			}()
			landed := 0
			for range writes {
				if _, err := call(t, env, "write_file", `{"path":"data/sub/x.yaml","content":"prompt: pwned\n"}`); err == nil {
					landed++
				}
			}
			close(stop)
			wg.Wait()
			if after := tree(t, filepath.Join(work, target)); after != before {
				t.Errorf("writes landed in %s:\nbefore:\n%s\nafter:\n%s", target, before, after)
			}
			noTempFiles(t, work)
			t.Logf("%d writes, %d landed in data/sub, %d swaps", writes, landed, swaps)
		})
	}
}
