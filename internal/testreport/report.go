package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json`: cmd/test2json's TestEvent, and
// the build events go test adds (build-output, build-fail).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string // build-output, build-fail
	Test       string
	Elapsed    float64 // seconds, on pass, fail and skip
	Output     string
}

// pkgState is one package of the run.
type pkgState struct {
	path    string
	chunks  []string              // what go test without -json prints for it, in order
	running map[string]*testState // tests started and not ended
	ran     map[string]bool       // every test that started
	elapsed float64
	result  string // pass, fail or skip (no test files); "" until it ends
}

// testState is one running test's output.
type testState struct {
	verdict  string   // its --- FAIL (PASS, SKIP) line
	lines    []string // its own output, without the === framing lines
	children []string // the text of its failed subtests, after its own lines
}

// text is what go test without -json prints of a failed test: its verdict
// line first, then its output, then its failed subtests'.
func (t *testState) text() string {
	return t.verdict + strings.Join(t.lines, "") + strings.Join(t.children, "")
}

// skip is one skipped test and what it said.
type skip struct {
	id  testID
	why string
}

// Report reads `go test -json` from in and writes to out what go test
// without -json prints, each package's test time and the skips; the error
// says why the run fails: a failed test, package or build, a skipped test
// allow does not name, or an entry of allow whose package ran without
// that test.
func Report(in io.Reader, out io.Writer, allow *Allowlist) error {
	pkgs := map[string]*pkgState{}
	var order []*pkgState
	pkg := func(path string) *pkgState {
		p := pkgs[path]
		if p == nil {
			p = &pkgState{path: path, running: map[string]*testState{}, ran: map[string]bool{}}
			pkgs[path] = p
			order = append(order, p)
		}
		return p
	}
	var skips []skip
	var buildFailed []string
	var first, last time.Time
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var e event
			if !bytes.HasPrefix(line, []byte("{")) || json.Unmarshal(line, &e) != nil {
				out.Write(line) // not an event: pass it on
			} else {
				if !e.Time.IsZero() {
					if first.IsZero() {
						first = e.Time
					}
					last = e.Time
				}
				switch e.Action {
				case "build-output":
					io.WriteString(out, e.Output)
				case "build-fail":
					buildFailed = append(buildFailed, e.ImportPath)
				case "start":
					pkg(e.Package)
				case "run":
					p := pkg(e.Package)
					p.running[e.Test] = &testState{}
					p.ran[e.Test] = true
				case "output":
					p := pkg(e.Package)
					if e.Test == "" {
						p.packageOutput(e.Output)
					} else {
						p.testOutput(e.Test, e.Output)
					}
				case "pass", "fail", "skip":
					p := pkg(e.Package)
					if e.Test == "" {
						p.end(out, e.Action, e.Elapsed)
						break
					}
					if s := p.testEnd(e.Test, e.Action); e.Action == "skip" {
						skips = append(skips, skip{testID{e.Package, e.Test}, s})
					}
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read go test's output: %w", err)
		}
	}

	var failed, unfinished []string
	for _, p := range order {
		if p.result == "" {
			p.flushRunning()
			p.end(out, "fail", 0)
			unfinished = append(unfinished, p.path)
		}
		if p.result == "fail" {
			failed = append(failed, p.path)
		}
	}
	times(out, order, last.Sub(first))

	var problems []string
	if len(order) == 0 && len(buildFailed) == 0 {
		problems = append(problems, "no test results on standard input (pipe `go test -json` into it)")
	}
	if len(unfinished) > 0 {
		problems = append(problems, fmt.Sprintf("no result for %s: go test stopped before they ended", strings.Join(unfinished, ", ")))
	}
	if len(buildFailed) > 0 {
		problems = append(problems, fmt.Sprintf("%d build(s) failed: %s", len(buildFailed), strings.Join(buildFailed, ", ")))
	}
	if len(failed) > 0 {
		problems = append(problems, fmt.Sprintf("%d package(s) failed: %s", len(failed), strings.Join(failed, ", ")))
	}

	var refused int
	for _, s := range skips {
		if allow.allows(s.id) {
			e := allow.entries[allow.index[s.id]]
			fmt.Fprintf(out, "skipped, as %s allows: %s (%s)\n", e.where, s.id, e.reason)
			continue
		}
		if refused == 0 {
			fmt.Fprintln(out, "SKIPPED, and not on the allowlist:")
		}
		refused++
		fmt.Fprintf(out, "--- SKIP: %s\n%s", s.id, s.why)
	}
	if refused > 0 {
		problems = append(problems, fmt.Sprintf("%d test(s) skipped that the allowlist does not name: "+
			"make them run, or add `package TestName reason` to the allowlist if the skip cannot happen on CI's machines", refused))
	}
	if allow != nil {
		for _, e := range allow.entries {
			if p := pkgs[e.id.pkg]; p != nil && p.result != "skip" && !p.ran[e.id.test] {
				problems = append(problems, fmt.Sprintf("%s: %s did not run although its package did: remove or rename the entry", e.where, e.id))
			}
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\ntestreport: "))
	}
	return nil
}

// packageOutput takes a line the package printed outside any test.
func (p *pkgState) packageOutput(s string) {
	switch {
	case s == "PASS\n":
		// go test without -v does not print it
		return
	case s == "FAIL\n" || strings.HasPrefix(s, "FAIL\t"):
		// The binary failed: the output of a test that never ended (a
		// panic, a timeout) comes before the verdict.
		p.flushRunning()
	}
	p.chunks = append(p.chunks, s)
}

// testOutput takes a line a test printed.
func (p *pkgState) testOutput(test, s string) {
	for _, frame := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(s, frame) {
			return
		}
	}
	t := p.running[test]
	if t == nil {
		// After its end (output of a goroutine it left behind): the
		// package's.
		p.chunks = append(p.chunks, s)
		return
	}
	if v := strings.TrimLeft(s, " "); strings.HasPrefix(v, "--- FAIL: ") || strings.HasPrefix(v, "--- PASS: ") || strings.HasPrefix(v, "--- SKIP: ") {
		t.verdict = v
		return
	}
	t.lines = append(t.lines, s)
}

// testEnd ends a test with pass, fail or skip; a failed test's text goes
// into its parent's, or for a top-level test into the package's. It
// returns what the test printed, without its verdict line.
func (p *pkgState) testEnd(test, action string) string {
	t := p.running[test]
	if t == nil {
		t = &testState{}
	}
	delete(p.running, test)
	if action != "fail" {
		return strings.Join(t.lines, "")
	}
	text := t.text()
	if i := strings.LastIndexByte(test, '/'); i >= 0 {
		if parent := p.running[test[:i]]; parent != nil {
			parent.children = append(parent.children, indent(text))
			return text
		}
	}
	p.chunks = append(p.chunks, text)
	return text
}

// indent indents a subtest's text under its parent's, as go test does.
func indent(text string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "    " + l
		}
	}
	return strings.Join(lines, "")
}

// flushRunning moves the output of the tests still running into the
// package's, top-level tests first.
func (p *pkgState) flushRunning() {
	names := make([]string, 0, len(p.running))
	for n := range p.running {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p.chunks = append(p.chunks, p.running[n].text())
		delete(p.running, n)
	}
}

// end ends the package and prints what it printed.
func (p *pkgState) end(out io.Writer, result string, elapsed float64) {
	if result == "fail" {
		p.flushRunning()
	}
	p.result, p.elapsed = result, elapsed
	io.WriteString(out, strings.Join(p.chunks, ""))
	p.chunks = nil
}

// times prints each tested package's test time, slowest first, and the
// run's wall time.
func times(out io.Writer, pkgs []*pkgState, wall time.Duration) {
	var tested []*pkgState
	var sum float64
	for _, p := range pkgs {
		if p.result == "pass" || p.result == "fail" {
			tested = append(tested, p)
			sum += p.elapsed
		}
	}
	if len(tested) == 0 {
		return
	}
	slices.SortStableFunc(tested, func(a, b *pkgState) int {
		switch {
		case a.elapsed > b.elapsed:
			return -1
		case a.elapsed < b.elapsed:
			return 1
		}
		return 0
	})
	fmt.Fprintf(out, "\nTest time per package (slowest first): %d packages, %.1fs in all, %.1fs wall\n", len(tested), sum, wall.Seconds())
	for _, p := range tested {
		fmt.Fprintf(out, "%8.1fs  %s\n", p.elapsed, p.path)
	}
}
