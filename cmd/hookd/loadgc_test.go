package main

import (
	"fmt"
	"io"
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

// TestLoadAllRaisesGC: every command's load of hooks.d (loadAll: validate,
// render, an offline list) runs at loadGCPercent, seen in the collections
// it makes against a load of the same files at the default GOGC, and sets
// GOGC back after.
func TestLoadAllRaisesGC(t *testing.T) {
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
	c := &cli{name: "validate", stdout: io.Discard, stderr: io.Discard, hooksDir: hooks,
		configPath: filepath.Join(dir, "hookd.yaml"), dbPath: filepath.Join(dir, ".hookd", "hookd.db")}
	d, err := c.settings()
	if err != nil {
		t.Fatal(err)
	}
	collections := func(load func()) uint32 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		n := m.NumGC
		load()
		runtime.ReadMemStats(&m)
		return m.NumGC - n
	}
	var plain, raised uint32
	for range 3 { // the least of three: a collection another test's garbage started counts too
		p := collections(func() {
			if hs, _, errs := config.LoadDirAll(hooks, d.HookOptions()); len(hs) != 600 || len(errs) > 0 {
				t.Fatalf("LoadDirAll: %d hooks, %v", len(hs), errs)
			}
		})
		r := collections(func() {
			if hs, _, errs, err := c.loadAll(d); err != nil || len(hs) != 600 || len(errs) > 0 {
				t.Fatalf("loadAll: %d hooks, %v %v", len(hs), errs, err)
			}
		})
		if plain == 0 || p < plain {
			plain = p
		}
		if raised == 0 || r < raised {
			raised = r
		}
	}
	if got := gcPercent(); got != 100 {
		t.Errorf("GOGC after loadAll: %d, want 100 back", got)
	}
	if raised*2 > plain {
		t.Errorf("loadAll made %d collections, LoadDirAll at GOGC 100 %d: want at most half", raised, plain)
	}
	t.Logf("collections: %d at GOGC 100, %d in loadAll", plain, raised)
}
