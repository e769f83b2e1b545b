package daemon

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/hookd/hookd/config"
)

// gcPercent reads the collector's GOGC.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestLoadGC: loading raises GOGC to loadGCPercent and sets it back after,
// but leaves a GOGC set higher, or off, as the user set it.
func TestLoadGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct{ before, during int }{{100, loadGCPercent}, {50, loadGCPercent}, {-1, -1}, {800, 800}} {
		debug.SetGCPercent(tc.before)
		done := loadGC()
		if got := gcPercent(); got != tc.during {
			t.Errorf("GOGC %d: %d while loading, want %d", tc.before, got, tc.during)
		}
		done()
		done() // once
		if got := gcPercent(); got != tc.before {
			t.Errorf("GOGC %d: %d after loading", tc.before, got)
		}
	}
}

// TestLoadAllRaisesGC: every command's load of hooks.d (loadAll: render,
// an offline list) runs at loadGCPercent, and validate's check (checkAll)
// under checkGC, seen in the collections each makes against a load of the
// same files at the default GOGC; both set GOGC (and the memory limit)
// back after.
func TestLoadAllRaisesGC(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	dir := t.TempDir()
	hooks := filepath.Join(dir, "hooks.d")
	if err := os.Mkdir(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 600 {
		hook := fmt.Sprintf("trigger: {event: load.t%d}\nsteps:\n  - type: shell\n    command: echo {{event.v}} %d | tr a-z A-Z\nskip_llm: true\n", i, i)
		if err := os.WriteFile(filepath.Join(hooks, fmt.Sprintf("h%03d.yaml", i)), []byte(hook), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "hookd.yaml"), []byte("max_concurrent: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := config.LoadDaemonFile(filepath.Join(dir, "hookd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d.HooksDir = hooks
	d.SetDatabase(filepath.Join(dir, ".hookd", "hookd.db"))
	collections := func(load func()) uint32 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		n := m.NumGC
		load()
		runtime.ReadMemStats(&m)
		return m.NumGC - n
	}
	var plain, raised, checked uint32
	for i := range 3 { // the least of three: a collection another test's garbage started counts too
		p := collections(func() {
			if hs, _, errs := config.LoadDirAll(hooks, d.HookOptions()); len(hs) != 600 || len(errs) > 0 {
				t.Fatalf("LoadDirAll: %d hooks, %v", len(hs), errs)
			}
		})
		r := collections(func() {
			if hs, _, errs, err := LoadAll(d); err != nil || len(hs) != 600 || len(errs) > 0 {
				t.Fatalf("loadAll: %d hooks, %v %v", len(hs), errs, err)
			}
		})
		k := collections(func() {
			if names, _, errs, err := CheckAll(d); err != nil || len(names) != 600 || len(errs) > 0 {
				t.Fatalf("checkAll: %d hooks, %v %v", len(names), errs, err)
			}
		})
		if i == 0 || p < plain {
			plain = p
		}
		if i == 0 || r < raised {
			raised = r
		}
		if i == 0 || k < checked {
			checked = k
		}
	}
	if got := gcPercent(); got != 100 {
		t.Errorf("GOGC after loadAll and checkAll: %d, want 100 back", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit after checkAll: %d, want none back", got)
	}
	if raised*2 > plain {
		t.Errorf("loadAll made %d collections, LoadDirAll at GOGC 100 %d: want at most half", raised, plain)
	}
	if checked*2 > plain {
		t.Errorf("checkAll made %d collections, LoadDirAll at GOGC 100 %d: want at most half", checked, plain)
	}
	t.Logf("collections: %d at GOGC 100, %d in loadAll, %d in checkAll", plain, raised, checked)
}

// TestCheckGC: a check of hooks.d runs with GOGC off under the memory
// limit of its workers, and sets both back after; a GOGC of off or a
// memory limit the user set is theirs (GOGC raised as for a load).
func TestCheckGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	want := int64(checkMemoryBase + checkMemoryPerWorker*runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		gogc, during int
		limit        int64
		duringLimit  int64
	}{
		{100, -1, math.MaxInt64, want},
		{800, -1, math.MaxInt64, want},
		{-1, -1, math.MaxInt64, math.MaxInt64},
		{100, loadGCPercent, 1 << 30, 1 << 30},
		{-1, -1, 1 << 30, 1 << 30},
	} {
		debug.SetGCPercent(tc.gogc)
		debug.SetMemoryLimit(tc.limit)
		restore := checkGC()
		gogc, limit := gcPercent(), debug.SetMemoryLimit(-1)
		restore()
		if gogc != tc.during || limit != tc.duringLimit {
			t.Errorf("GOGC %d, limit %d: GOGC %d and limit %d while checking, want %d and %d", tc.gogc, tc.limit, gogc, limit, tc.during, tc.duringLimit)
		}
		if gogc, limit := gcPercent(), debug.SetMemoryLimit(-1); gogc != tc.gogc || limit != tc.limit {
			t.Errorf("GOGC %d, limit %d: GOGC %d and limit %d after checking", tc.gogc, tc.limit, gogc, limit)
		}
	}
}
