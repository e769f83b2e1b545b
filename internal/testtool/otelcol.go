package testtool

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// OtelcolEnv names the variable that holds the OpenTelemetry Collector
// binary the trace tests use (internal/otelcol, which .ci/run builds once).
const OtelcolEnv = "HOOKD_OTELCOL"

var otelcol struct {
	once sync.Once
	path string
	err  error
}

// Otelcol returns the OpenTelemetry Collector binary: $HOOKD_OTELCOL, or
// under HOOKD_TEST_LONG=1 internal/otelcol built once per test process (a
// few minutes the first time, the module cache and build cache after).
// With neither, t skips, naming both (a long test). A build that fails
// (no module proxy) skips t, or fails it under HOOKD_REQUIRE_TOOLS.
func Otelcol(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(OtelcolEnv); p != "" {
		return p
	}
	NeedLong(t, "runs the OpenTelemetry Collector (internal/otelcol, built here, or $"+OtelcolEnv+" to use a built one)")
	otelcol.once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		src := filepath.Join(filepath.Dir(file), "..", "otelcol")
		dir, err := os.MkdirTemp("", "hookd-otelcol-")
		if err != nil {
			otelcol.err = err
			return
		}
		bin := filepath.Join(dir, "otelcol")
		cmd := exec.Command("go", "build", "-o", bin, ".")
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			otelcol.err = fmt.Errorf("build the collector in %s: %v\n%s", src, err, out)
			return
		}
		otelcol.path = bin
	})
	if otelcol.err != nil {
		msg := fmt.Sprintf("the OpenTelemetry Collector (internal/otelcol, or $%s) is not available: %v", OtelcolEnv, otelcol.err)
		if os.Getenv(RequireEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return otelcol.path
}
