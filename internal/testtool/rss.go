package testtool

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"
)

// RSSMB is the resident set (VmRSS) of process pid in MB (0: this
// process), from /proc: what the soak benchmarks sample. A test skips
// where there is no /proc.
func RSSMB(tb testing.TB, pid int) float64 {
	tb.Helper()
	path := "/proc/self/status"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	f, err := os.Open(path)
	if err != nil {
		tb.Skipf("no %s: %v", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			kb, err := strconv.ParseFloat(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 64)
			if err != nil {
				tb.Fatalf("read VmRSS of %s: %v", path, err)
			}
			return kb / 1e3
		}
	}
	tb.Fatalf("no VmRSS in %s", path)
	return 0
}

// Slope is the slope of the least-squares line through the points (0
// for fewer than two).
func Slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}
