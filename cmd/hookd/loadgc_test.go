package main

import (
	"runtime/debug"
	"testing"
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
