package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hookd/hookd/internal/testtool"
)

// fixture is a module whose tests pass (ok), skip one (skips), fail one
// with a failed subtest (fails) and panic (panics).
var fixture = map[string]string{
	"go.mod": "module fixture\n\ngo 1.24\n",
	"ok/ok_test.go": `package ok
import "testing"
func TestPass(t *testing.T) { t.Log("passing output is not printed") }
`,
	"skips/skip_test.go": `package skips
import "testing"
func TestPass(t *testing.T) {}
func TestNeedsThing(t *testing.T) { t.Skip("needs a thing this machine lacks") }
`,
	"fails/fail_test.go": `package fails
import "testing"
func TestPass(t *testing.T) {}
func TestParent(t *testing.T) {
	t.Log("parent says hello")
	t.Run("good", func(t *testing.T) { t.Log("good subtest output is not printed") })
	t.Run("bad", func(t *testing.T) { t.Error("subtest boom") })
}
`,
	"panics/panic_test.go": `package panics
import "testing"
func TestPanics(t *testing.T) { t.Log("before the panic"); panic("kaboom") }
`,
	"notests/notests.go": "package notests\n",
}

// goTestJSON returns what `go test -json` printed on standard output for
// the fixture's packages pkgs (as "./ok"), in the order it printed it.
// The fixture is tested once per test binary, all its packages in one
// go test (each test asked for its own before: three go commands
// building ok three times, most of the package's time); each test gets
// the lines of its packages, as a go test of those alone prints them
// (go test -json prints each package's events in one block).
func goTestJSON(t *testing.T, pkgs ...string) []byte {
	t.Helper()
	goBin := testtool.Need(t, "go")
	fixtureRun.Do(func() { fixtureRun.out, fixtureRun.err = runFixture(goBin) })
	if fixtureRun.err != nil {
		t.Fatal(fixtureRun.err)
	}
	want := map[string]bool{}
	for _, p := range pkgs {
		want["fixture/"+strings.TrimPrefix(p, "./")] = true
	}
	var out []byte
	for _, line := range bytes.SplitAfter(fixtureRun.out, []byte("\n")) {
		var e struct{ Package, ImportPath string }
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		if want[e.Package] || want[e.ImportPath] {
			out = append(out, line...)
		}
	}
	if len(out) == 0 {
		t.Fatalf("go test printed nothing for %v:\n%s", pkgs, fixtureRun.out)
	}
	return out
}

// fixtureRun is the one go test of the fixture, for goTestJSON.
var fixtureRun struct {
	sync.Once
	out []byte
	err error
}

// runFixture writes the fixture to a directory of its own and runs
// `go test -json` on all its packages there (without vet, which checks
// the fixture, not the report).
func runFixture(goBin string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "testreport-fixture-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for name, text := range fixture {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(goBin, "test", "-json", "-count=1", "-vet=off", "./ok", "./skips", "./fails", "./panics", "./notests")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		return nil, fmt.Errorf("go test: %v\n%s", err, stderr.String())
	}
	return out, nil
}

func allowlist(t *testing.T, text string) *Allowlist {
	t.Helper()
	a, err := ParseAllowlist(strings.NewReader(text), "skip-allowlist")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func report(t *testing.T, in []byte, allow *Allowlist) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := Report(bytes.NewReader(in), &out, allow)
	return out.String(), err
}

func contains(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

func lacks(t *testing.T, what, s string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(s, w) {
			t.Errorf("%s has %q:\n%s", what, w, s)
		}
	}
}

// TestReportSkip: a run whose only problem is a skipped test fails unless
// the allowlist names it, and prints the normal output and the times.
func TestReportSkip(t *testing.T) {
	t.Parallel()
	in := goTestJSON(t, "./ok", "./skips", "./notests")

	out, err := report(t, in, nil)
	if err == nil {
		t.Fatalf("a skipped test passed the check:\n%s", out)
	}
	contains(t, "error", err.Error(), "1 test(s) skipped that the allowlist does not name")
	lacks(t, "error", err.Error(), "failed")
	contains(t, "output", out, "ok  \tfixture/ok\t", "ok  \tfixture/skips\t", "?   \tfixture/notests\t[no test files]",
		"SKIPPED, and not on the allowlist:\n--- SKIP: fixture/skips TestNeedsThing\n    skip_test.go:4: needs a thing this machine lacks\n",
		"Test time per package (slowest first): 2 packages", "s  fixture/ok\n", "s  fixture/skips\n")
	lacks(t, "output", out, "=== RUN", "PASS\n", "passing output is not printed", "--- PASS")

	out, err = report(t, in, allowlist(t, "# why\nfixture/skips TestNeedsThing the machine lacks a thing\n"))
	if err != nil {
		t.Fatalf("an allowed skip failed the check: %v\n%s", err, out)
	}
	contains(t, "output", out, "skipped, as skip-allowlist:2 allows: fixture/skips TestNeedsThing (the machine lacks a thing)")

	// An entry whose package ran without the test is out of date; one
	// whose package did not run says nothing.
	_, err = report(t, in, allowlist(t, "fixture/skips TestNeedsThing x\nfixture/ok TestGone renamed since\nfixture/other TestX not run here\n"))
	if err == nil || !strings.Contains(err.Error(), "skip-allowlist:2: fixture/ok TestGone did not run although its package did") ||
		strings.Contains(err.Error(), "TestX") {
		t.Errorf("stale entry: got %v", err)
	}
}

// TestReportFailure: failed tests and a panic fail the run, with their
// output printed as go test prints it.
func TestReportFailure(t *testing.T) {
	t.Parallel()
	in := goTestJSON(t, "./ok", "./fails", "./panics")
	out, err := report(t, in, nil)
	if err == nil {
		t.Fatalf("failures passed the check:\n%s", out)
	}
	contains(t, "error", err.Error(), "2 package(s) failed: ")
	contains(t, "error", err.Error(), "fixture/fails", "fixture/panics")
	lacks(t, "error", err.Error(), "skipped")
	contains(t, "output", out, "--- FAIL: TestParent (", "parent says hello", "--- FAIL: TestParent/bad (", "subtest boom",
		"FAIL\tfixture/fails\t", "kaboom", "before the panic", "FAIL\tfixture/panics\t", "ok  \tfixture/ok\t")
	lacks(t, "output", out, "good subtest output is not printed", "=== RUN")
	// As go test prints it: the verdict, the test's lines, its failed
	// subtests indented.
	// A test's time is as go test measured it: 0.00s on a quiet machine,
	// more on a loaded one.
	for _, want := range []string{
		`--- FAIL: TestParent \(\d+\.\d\ds\)\n    fail_test.go:5: parent says hello\n    --- FAIL: TestParent/bad \(\d+\.\d\ds\)\n        fail_test.go:7: subtest boom\nFAIL\nFAIL\tfixture/fails\t`,
		`--- FAIL: TestPanics \(\d+\.\d\ds\)\n    panic_test.go:3: before the panic\npanic: kaboom`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output does not match %q:\n%s", want, out)
		}
	}
}

// TestReportNoInput: nothing to read is no pass.
func TestReportNoInput(t *testing.T) {
	t.Parallel()
	if _, err := report(t, nil, nil); err == nil || !strings.Contains(err.Error(), "no test results") {
		t.Errorf("empty input: %v", err)
	}
	// A run cut short (the package never ended) fails.
	in := goTestJSON(t, "./ok")
	cut := in[:bytes.LastIndex(in[:len(in)-1], []byte("\n"))+1]
	if _, err := report(t, cut, nil); err == nil || !strings.Contains(err.Error(), "no result for fixture/ok") {
		t.Errorf("cut run: %v", err)
	}
}

func TestParseAllowlist(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ text, want string }{
		{"pkg TestA\n", "skip-allowlist:1: want `package TestName reason`"},
		{"\n# c\npkg A why\n", "skip-allowlist:3: \"A\" is not a test's name"},
		{"pkg TestA why\npkg TestB why\npkg TestA again\n", "skip-allowlist:3: pkg TestA is listed already at skip-allowlist:1"},
	} {
		_, err := ParseAllowlist(strings.NewReader(tt.text), "skip-allowlist")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want %s", tt.text, err, tt.want)
		}
	}
	a := allowlist(t, "pkg TestA/sub one  two\n")
	if !a.allows(testID{"pkg", "TestA/sub"}) || a.allows(testID{"pkg", "TestA"}) || a.entries[0].reason != "one two" {
		t.Errorf("parsed %+v", a.entries)
	}
}
