package testtool

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a test ended.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skip(args ...any)                  { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// TestNeed: a program on the PATH is found; a missing one skips the test
// naming its package, or fails it under HOOKD_REQUIRE_TOOLS=1.
func TestNeed(t *testing.T) {
	if p := Need(t, "sh"); !strings.HasSuffix(p, "/sh") {
		t.Errorf("sh: path %q", p)
	}
	t.Setenv("PATH", t.TempDir()) // nothing on it
	t.Setenv(RequireEnv, "")
	r := &recorder{TB: t}
	Need(r, "node")
	if !strings.Contains(r.skipped, "node is not installed (Debian package nodejs)") || r.failed != "" {
		t.Errorf("missing program: skipped %q, failed %q; want a skip naming nodejs", r.skipped, r.failed)
	}
	t.Setenv(RequireEnv, "1")
	r = &recorder{TB: t}
	Need(r, "git")
	if !strings.Contains(r.failed, "git is not installed (Debian package git)") || !strings.Contains(r.failed, RequireEnv+"=1") || r.skipped != "" {
		t.Errorf("missing program under %s=1: skipped %q, failed %q; want a failure naming git", RequireEnv, r.skipped, r.failed)
	}
}
