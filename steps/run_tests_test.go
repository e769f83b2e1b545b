package steps

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/process"
)

func readFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "test-output", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type wantReport struct {
	framework                      string
	failures                       []string
	failed, passed, skipped, tests int
}

func checkReport(t *testing.T, got TestReport, want wantReport) {
	t.Helper()
	if got.Framework != want.framework {
		t.Errorf("framework %q; want %q", got.Framework, want.framework)
	}
	if strings.Join(got.Failures, "|") != strings.Join(want.failures, "|") {
		t.Errorf("failures\n%q\nwant\n%q", got.Failures, want.failures)
	}
	if got.Failed != want.failed || got.Passed != want.passed || got.Skipped != want.skipped || got.Tests != want.tests {
		t.Errorf("failed %d passed %d skipped %d tests %d; want %d %d %d %d",
			got.Failed, got.Passed, got.Skipped, got.Tests, want.failed, want.passed, want.skipped, want.tests)
	}
}

func TestParseTestsFixtures(t *testing.T) {
	tests := []struct {
		file string
		want wantReport
	}{
		{"pytest-mixed.txt", wantReport{framework: "pytest", failures: []string{"tests/test_auth.py::test_login", "tests/test_broken.py"},
			failed: 2, passed: 10, skipped: 2, tests: 13}},
		{"pytest-all-failed.txt", wantReport{framework: "pytest",
			failures: []string{"tests/test_a.py::test_one", "tests/test_a.py::test_two", "tests/test_a.py::test_param[a b]"}, failed: 3, tests: 3}},
		{"pytest-no-tests.txt", wantReport{framework: "pytest", failures: []string{}}},
		{"pytest-verbose.txt", wantReport{framework: "pytest", failures: []string{"tests/test_a.py::test_two"}, failed: 1, passed: 1, tests: 2}},
		{"jest-mixed.txt", wantReport{framework: "jest", failures: []string{"Calculator › adds numbers"}, failed: 2, passed: 15, tests: 17}},
		{"vitest-mixed.txt", wantReport{framework: "jest", failures: []string{"src/sum.test.ts > Calculator > adds numbers"}, failed: 1, passed: 4, tests: 5}},
		{"cargo-mixed.txt", wantReport{framework: "cargo", failures: []string{"tests::it_fails", "tests::another_failure"},
			failed: 2, passed: 3, skipped: 1, tests: 6}},
		{"cargo-build-error.txt", wantReport{framework: "cargo", failures: []string{"could not compile `cargofix` (lib test)"}, failed: 1}},
		{"mocha-mixed.txt", wantReport{framework: "", failures: []string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var out string
			if tt.file == "mocha-mixed.txt" {
				out = "  12 passing (45ms)\n  2 failing\n"
			} else {
				out = readFixture(t, tt.file)
			}
			checkReport(t, ParseTests(FrameworkAuto, out, 0), tt.want)
			if tt.want.framework != "" {
				checkReport(t, ParseTests(tt.want.framework, out, 0), tt.want)
			}
			// CRLF line ends read the same.
			crlf := ParseTests(FrameworkAuto, strings.ReplaceAll(out, "\n", "\r\n"), 0)
			checkReport(t, crlf, tt.want)
		})
	}
}

func TestParseTestsCap(t *testing.T) {
	var b strings.Builder
	for i := range 120 {
		fmt.Fprintf(&b, "--- FAIL: TestN%d (0.00s)\n", i)
	}
	b.WriteString("FAIL\texample.com/m\t0.1s\n")
	r := ParseTests(FrameworkGo, b.String(), 5)
	if len(r.Failures) != 5 || r.Failed != 120 || r.Failures[0] != "example.com/m.TestN0" {
		t.Errorf("failures %q failed %d", r.Failures, r.Failed)
	}
	long := "FAILED tests/t.py::" + strings.Repeat("x", 1000) + " - boom\n1 failed in 0.1s\n"
	r = ParseTests(FrameworkPytest, long, 0)
	if len(r.Failures) != 1 || len(r.Failures[0]) > maxFailureName+3 {
		t.Errorf("long name kept as %d bytes", len(r.Failures[0]))
	}
}

// goModule writes a module with a passing, a failing (with subtests) and
// a broken package.
func goModule(t *testing.T, broken bool) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/fix\n\ngo 1.22\n",
		"good/good_test.go": `package good

import "testing"

func TestOK(t *testing.T) {}
func TestSkip(t *testing.T) { t.Skip("later") }
`,
		"bad/bad_test.go": `package bad

import "testing"

func TestPass(t *testing.T) {}
func TestFail(t *testing.T) { t.Fatal("boom") }
func TestTable(t *testing.T) {
	t.Run("one", func(t *testing.T) {})
	t.Run("two words", func(t *testing.T) { t.Error("nope") })
}
`,
	}
	if broken {
		files["broken/broken_test.go"] = "package broken\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) { var x int = \"s\"; _ = x }\n"
	}
	writeFiles(t, dir, files)
	return dir
}

func goEnv() []string {
	return append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-count=1", "GOWORK=off", "GO111MODULE=on")
}

// TestRunTestsGoReal runs go test for real, plain and -json, and parses
// what it printed.
func TestRunTestsGoReal(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go test")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := goModule(t, true)
	want := wantReport{framework: "go",
		failures: []string{"example.com/fix/bad.TestFail", "example.com/fix/bad.TestTable/two_words", "example.com/fix/broken [build failed]"},
		failed:   3, passed: 3, skipped: 1, tests: 7}
	for _, args := range [][]string{{"test", "-v", "./..."}, {"test", "-json", "./..."}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := exec.Command("go", args...)
			cmd.Dir, cmd.Env = dir, goEnv()
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("go test: %v\n%s", err, out)
			}
			got := ParseTests(FrameworkAuto, string(out), 0)
			// -json and -v name every test; pass and skip counts included.
			// The order of packages differs between the two.
			slices.Sort(got.Failures)
			checkReport(t, got, want)
		})
	}
	t.Run("plain", func(t *testing.T) {
		cmd := exec.Command("go", "test", "./...")
		cmd.Dir, cmd.Env = dir, goEnv()
		out, _ := cmd.CombinedOutput()
		got := ParseTests(FrameworkAuto, string(out), 0)
		// Without -v only failures are named.
		checkReport(t, got, wantReport{framework: "go", failures: want.failures, failed: 3, tests: 3})
	})
}

// TestRunTestsStep runs go test through the step. Only "failing" tests
// the whole module: the other failing forms test the failing package
// alone (TestRunTestsGoReal parses -json over several packages), which
// saves a test binary's link and run each.
func TestRunTestsStep(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go test")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := goModule(t, false)
	tests := []struct {
		name, src    string
		wantPassed   bool
		wantFailures []any
		wantCount    int
		wantExit     int
	}{
		{name: "failing", src: "command: go test ./...", wantFailures: []any{"example.com/fix/bad.TestFail", "example.com/fix/bad.TestTable/two_words"}, wantCount: 2, wantExit: 1},
		{name: "json argv", src: "command: [go, test, -json, ./bad/]\nframework: go", wantFailures: []any{"example.com/fix/bad.TestFail", "example.com/fix/bad.TestTable/two_words"}, wantCount: 2, wantExit: 1},
		{name: "passing", src: "command: go test ./good/", wantPassed: true, wantFailures: []any{}, wantExit: 0},
		{name: "capped failures", src: "command: go test ./bad/\nmax_failures: 1", wantFailures: []any{"example.com/fix/bad.TestFail"}, wantCount: 2, wantExit: 1},
		{name: "workdir", src: "command: go test ./...\nworkdir: good", wantPassed: true, wantFailures: []any{}, wantExit: 0},
		{name: "workspace (agent-queue)", src: "command: go test ./...\nworkspace: good", wantPassed: true, wantFailures: []any{}, wantExit: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustStep(t, "run_tests", tt.src, time.Minute)
			env := stepEnv(t, nil)
			env.Workdir, env.Env = dir, goEnv()
			res, err := runStep(t, s, env)
			if err != nil {
				t.Fatal(err)
			}
			f := res.Fields
			if f["passed"] != tt.wantPassed || field(res, "exit_code") != tt.wantExit || f["framework"] != "go" {
				t.Errorf("passed %v exit %v framework %v\n%s", f["passed"], field(res, "exit_code"), f["framework"], res.Output)
			}
			if !equalAny(f["failures"], tt.wantFailures) || f["failure_count"] != tt.wantCount {
				t.Errorf("failures %v count %v", f["failures"], f["failure_count"])
			}
			if res.Output == "" || res.Output != f["output"] {
				t.Errorf("output %q", res.Output)
			}
		})
	}
}

func TestRunTestsParsesPastTheCap(t *testing.T) {
	src := "command: 'for i in $(seq 1 3000); do echo noise line $i; done; echo \"--- FAIL: TestLate (0.00s)\"; " +
		"for i in $(seq 1 3000); do echo more noise $i; done; printf \"FAIL\\texample.com/m\\t0.1s\\n\" >&2; exit 1'\nmax_output: 200"
	s := mustStep(t, "run_tests", src, 0)
	res, err := runStep(t, s, stepEnv(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !equalAny(res.Fields["failures"], []any{"example.com/m.TestLate"}) || field(res, "truncated") != true {
		t.Errorf("failures %v truncated %v", res.Fields["failures"], field(res, "truncated"))
	}
	if len(res.Output) > 300 || !strings.Contains(res.Output, "bytes truncated]") {
		t.Errorf("output not capped: %d bytes", len(res.Output))
	}
}

func TestRunTestsUnknownOutput(t *testing.T) {
	for code, passed := range map[int]bool{0: true, 3: false} {
		s := mustStep(t, "run_tests", fmt.Sprintf("command: 'echo all good; exit %d'", code), 0)
		res, err := runStep(t, s, stepEnv(t, nil))
		if err != nil {
			t.Fatal(err)
		}
		if res.Fields["framework"] != "unknown" || res.Fields["passed"] != passed || field(res, "exit_code") != code {
			t.Errorf("exit %d: framework %v passed %v", code, res.Fields["framework"], res.Fields["passed"])
		}
	}
	// Exit 0 with failures in the output (a pipe hid the status) is not a pass.
	s := mustStep(t, "run_tests", `command: 'printf "FAILED t.py::x - boom\n1 failed in 0.1s\n"'`, 0)
	res, _ := runStep(t, s, stepEnv(t, nil))
	if res.Fields["passed"] != false || res.Fields["framework"] != "pytest" {
		t.Errorf("passed %v framework %v", res.Fields["passed"], res.Fields["framework"])
	}
}

func TestRunTestsTimeout(t *testing.T) {
	type result struct {
		res *engine.StepResult
		err error
	}
	r, _ := testtool.UntilReady(t, 300*time.Millisecond, func(timeout time.Duration) result {
		s := mustStep(t, "run_tests", `command: "echo '--- FAIL: TestA (0.00s)'; sleep 30"`, timeout)
		res, err := runStep(t, s, stepEnv(t, nil))
		return result{res, err}
	}, func(r result) bool { return strings.Contains(r.res.Output, "--- FAIL: TestA") })
	res, err := r.res, r.err
	if !errors.Is(err, process.ErrTimeout) || field(res, "timed_out") != true || res.Fields["passed"] != false {
		t.Errorf("err %v timed_out %v passed %v", err, field(res, "timed_out"), res.Fields["passed"])
	}
	if !strings.Contains(res.Output, "--- FAIL: TestA") || !strings.Contains(res.Output, "hookd: command timed out") {
		t.Errorf("output %q", res.Output)
	}
	if !equalAny(res.Fields["failures"], []any{"TestA"}) {
		t.Errorf("failures %v", res.Fields["failures"])
	}
}

func TestRunTestsInjection(t *testing.T) {
	dir := t.TempDir()
	canary := filepath.Join(dir, "pwned")
	s := mustStep(t, "run_tests", `command: "echo running {{event.name}}"`, 0)
	res, err := runStep(t, s, stepEnv(t, map[string]any{"name": "x; touch " + canary}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(canary); err == nil {
		t.Fatal("event data ran as code")
	}
	if res.Output != "running x; touch "+canary+"\n" {
		t.Errorf("output %q", res.Output)
	}
}

func TestRunTestsNewErrors(t *testing.T) {
	newErrTests(t, "run_tests", []struct{ name, src, want string }{
		{"missing command", `framework: go`, "command: required"},
		{"unknown framework", "command: x\nframework: mocha", `framework: unknown framework "mocha"`},
		{"negative max_failures", "command: x\nmax_failures: -1", "max_failures: must be > 0"},
		{"single-quoted placeholder", `command: "go test -run '{{event.x}}'"`, "inside single quotes"},
		{"workdir and workspace", "command: x\nworkdir: a\nworkspace: b", "workspace: give workdir or workspace"},
		{"workspace out", "command: x\nworkspace: ../x", "../x"},
		// GOFLAGS=-toolexec=evil runs a program of the event's choosing.
		{"GOFLAGS from data", "command: go test ./...\nenv: {GOFLAGS: '{{event.goflags}}'}", "env.GOFLAGS: a value from a placeholder may not go in GOFLAGS"},
	})
}

// fuzzReport checks what every parse must hold, whatever the input.
func fuzzReport(t *testing.T, r TestReport, limit int) {
	if len(r.Failures) > limit || r.Failed < len(r.Failures) || r.Failed < 0 || r.Tests < 0 || r.Passed < 0 || r.Skipped < 0 {
		t.Fatalf("report %+v", r)
	}
	for _, f := range r.Failures {
		if f == "" || len(f) > maxFailureName+3 {
			t.Fatalf("failure name %q", f)
		}
	}
}

func fuzzParser(f *testing.F, framework string, seeds ...string) {
	for _, s := range seeds {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, out string, limit int) {
		limit = limit%60 + 1
		if limit < 1 {
			limit = -limit + 1
		}
		fuzzReport(t, ParseTests(framework, out, limit), limit)
	})
}

func FuzzParseGo(f *testing.F) {
	fuzzParser(f, FrameworkGo,
		"--- FAIL: TestA (0.00s)\n    --- FAIL: TestA/b (0.00s)\nFAIL\nFAIL\tx/y\t0.1s\n",
		"ok  \tx\t0.1s\n?   \ty\t[no test files]\nFAIL\tz [build failed]\n",
		`{"Action":"fail","Package":"p","Test":"T/x"}`+"\n"+`{"Action":"fail","Package":"p","Test":"T"}`+"\n"+`{"Action":"fail","Package":"p"}`,
		`{"Action":"fail","Package":"q","FailedBuild":"q"}`+"\n"+`{"Action":"output","Package":"r","Output":"panic: x\n"}`+"\n"+`{"Action":"fail","Package":"r"}`,
		"panic: test timed out after 1s\nFAIL\tp\t1.0s\n",
		"--- FAIL: \n--- PASS: T\n{\"Action\":1}\n")
}

func FuzzParsePytest(f *testing.F) {
	fuzzParser(f, FrameworkPytest, readFixture(f, "pytest-mixed.txt"), readFixture(f, "pytest-all-failed.txt"),
		readFixture(f, "pytest-verbose.txt"), "FAILED a::b[x - y] - z\n== 1 failed, 2 errors in 1s ==\n", "ERROR \nFAILED [[[ - \n")
}

func FuzzParseJest(f *testing.F) {
	fuzzParser(f, FrameworkJest, readFixture(f, "jest-mixed.txt"), readFixture(f, "vitest-mixed.txt"),
		"  ● Test suite failed to run\nTests:       1 failed, 1 total\n", "✕ x (3 ms)\n× y\n      Tests  2 failed (2)\n")
}

func FuzzParseCargo(f *testing.F) {
	fuzzParser(f, FrameworkCargo, readFixture(f, "cargo-mixed.txt"), readFixture(f, "cargo-build-error.txt"),
		"test a ... FAILED\ntest result: FAILED. 99999999999999999999 passed; 1 failed; 0 ignored\n")
}

func FuzzParseAuto(f *testing.F) {
	fuzzParser(f, FrameworkAuto, readFixture(f, "pytest-mixed.txt"), readFixture(f, "jest-mixed.txt"), readFixture(f, "cargo-mixed.txt"),
		"--- FAIL: TestA (0.00s)\nFAIL\tp\t0.1s\n")
}
