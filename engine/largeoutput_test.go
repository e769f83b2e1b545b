package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// leastAllocated is the fewest bytes f allocated in 5 calls, each after
// two collections.
func leastAllocated(f func()) uint64 {
	least := uint64(1 << 62)
	for range 5 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// megabyteStep is a shell step that printed 1 MiB of base64 text, its
// stdout field repeating the output, as the daemon soak's steps.
func megabyteStep() *StepResult {
	line := strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo", 2) + "\n"
	out := strings.Repeat(line, (1<<20)/len(line))
	return &StepResult{Index: 0, Name: "dump", Type: "shell", Output: out, ExitCode: new(0),
		Fields: map[string]any{"stdout": out, "stderr": "", "command": "cat dump"}}
}

// TestStepMarshalJSONAllocatesItsAnswerOnce: the API's answer for a step
// that printed 1 MiB (its output and its stdout field, 2 MiB quoted) is
// written into one buffer with room for both; with room for the output
// only it allocated 8.7 MB.
func TestStepMarshalJSONAllocatesItsAnswerOnce(t *testing.T) {
	// Not t.Parallel: it measures the process's allocated bytes (runtime.MemStats), which a test running beside it would add to.
	r := megabyteStep()
	var size int
	least := leastAllocated(func() {
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		size = len(b)
	})
	t.Logf("%d bytes allocated for %d bytes of JSON", least, size)
	if least > uint64(size)*5/4 {
		t.Errorf("MarshalJSON of %d bytes allocated %d bytes; want at most 1.25 times the answer", size, least)
	}
}

// TestFingerprintDoesNotCopyOutputs: fingerprint hashes the steps'
// outputs as they are, the same bytes fmt.Fprintf wrote to the hash
// before, without a copy of a 1 MiB output.
func TestFingerprintDoesNotCopyOutputs(t *testing.T) {
	// Not t.Parallel: it measures the process's allocated bytes (runtime.MemStats), which a test running beside it would add to.
	steps := []*StepResult{megabyteStep(), {Index: 1, Type: "shell", Output: "é\x00x", Error: "exit 3"}, {Index: 12}}
	h := sha256.New()
	for _, s := range steps {
		fmt.Fprintf(h, "%d\x00%d\x00%s\x00%d\x00%s\x00", s.Index, len(s.Output), s.Output, len(s.Error), s.Error)
	}
	if got, want := fingerprint(steps), hex.EncodeToString(h.Sum(nil)[:16]); got != want {
		t.Errorf("fingerprint %s, want %s (the bytes it hashed before)", got, want)
	}
	least := leastAllocated(func() { fingerprint(steps) })
	if least > 64<<10 {
		t.Errorf("fingerprint of 1 MiB of output allocated %d bytes; want under 64 KiB", least)
	}
}
