package sandbox

import (
	"os"
	"sync"
	"testing"
)

// TestTmpRootSurvivesSweep: a hookd that starts sweeps away the
// temporary directories no hookd holds; one starting at the same time
// (a daemon and a command, the nodes of a cluster on one machine) has
// made its directory and not yet locked it. It must end up with a
// directory of its own that exists, not with none (every step refused:
// "no directory for the processes' TMPDIRs") or with one removed under
// it.
func TestTmpRootSurvivesSweep(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					sweepTmp()
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for i := range 300 {
		r, err := newTmpRoot()
		if err != nil {
			t.Fatalf("try %d: newTmpRoot beside a sweep: %v", i, err)
		}
		if _, err := os.Stat(r.dir); err != nil {
			t.Fatalf("try %d: the directory newTmpRoot made is gone: %v", i, err)
		}
		r.close()
	}
}
