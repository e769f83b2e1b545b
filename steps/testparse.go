package steps

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/hookd/hookd/process"
)

// DefaultMaxFailures is how many failure names a TestReport keeps when the
// caller sets no limit.
const DefaultMaxFailures = 50

// maxFailureName bounds one failure name, in bytes.
const maxFailureName = 300

// maxStoredFailures bounds the failures a parser remembers before it
// picks the ones it reports.
const maxStoredFailures = 1000

// Test frameworks run_tests knows.
const (
	FrameworkAuto   = "auto"
	FrameworkGo     = "go"
	FrameworkPytest = "pytest"
	FrameworkJest   = "jest"
	FrameworkCargo  = "cargo"
)

// testFrameworks lists the parsers auto-detection tries, in the order that
// breaks ties.
var testFrameworks = []string{FrameworkGo, FrameworkCargo, FrameworkPytest, FrameworkJest}

// TestReport is what a test runner's output says about a run.
type TestReport struct {
	Framework    string   // the parser that read the output; "" when nothing was recognised
	Tests        int      // tests that ran, as far as the output tells
	Passed       int      //
	Failed       int      // failing tests, plus build and collection errors
	Skipped      int      //
	Failures     []string // names of what failed, at most the limit asked for
	Confidence   int      // 0: nothing recognised; 1: test lines; 2: a summary line
	HasSummary   bool     // the runner's own totals were seen
	FailureLimit int      // the limit Failures was cut to
}

// testParser reads a test runner's output line by line.
type testParser interface {
	line(s string)
	report(maxFailures int) TestReport
}

// newTestParser returns the parser of a framework, or one that runs them
// all and keeps the most confident for FrameworkAuto.
func newTestParser(framework string) testParser {
	switch framework {
	case FrameworkGo:
		return &goTestParser{failures: newFailureSet()}
	case FrameworkPytest:
		return &pytestParser{failures: newFailureSet()}
	case FrameworkJest:
		return &jestParser{failures: newFailureSet(), crosses: newFailureSet()}
	case FrameworkCargo:
		return &cargoParser{failures: newFailureSet()}
	}
	a := &autoParser{}
	for _, f := range testFrameworks {
		a.parsers = append(a.parsers, newTestParser(f))
	}
	return a
}

// ParseTests parses a test runner's whole output. framework is one of the
// Framework constants; maxFailures <= 0 means DefaultMaxFailures.
func ParseTests(framework, output string, maxFailures int) TestReport {
	p := newTestParser(framework)
	w := process.NewSplitWriter('\n', p.line)
	w.Write([]byte(output))
	w.Flush()
	return p.report(maxFailures)
}

type autoParser struct{ parsers []testParser }

func (a *autoParser) line(s string) {
	for _, p := range a.parsers {
		p.line(s)
	}
}

func (a *autoParser) report(maxFailures int) TestReport {
	var best TestReport
	for _, p := range a.parsers {
		if r := p.report(maxFailures); r.Confidence > best.Confidence {
			best = r
		}
	}
	if best.Confidence == 0 {
		return TestReport{FailureLimit: best.FailureLimit, Failures: []string{}}
	}
	return best
}

// failureSet keeps failure names in order, once each, up to
// maxStoredFailures, and counts the rest.
type failureSet struct {
	names []string
	seen  map[string]bool
	extra int // failures past the storage bound
}

func newFailureSet() *failureSet { return &failureSet{seen: map[string]bool{}} }

func (f *failureSet) add(name string) {
	name = strings.TrimSpace(name)
	if len(name) > maxFailureName {
		name = string(process.TrimPartialRune([]byte(name[:maxFailureName]))) + "..."
	}
	if name == "" || f.seen[name] {
		return
	}
	if len(f.names) >= maxStoredFailures {
		f.extra++
		return
	}
	f.seen[name] = true
	f.names = append(f.names, name)
}

func (f *failureSet) count() int { return len(f.names) + f.extra }

// finish fills the failure fields of r from names, keeping at most max.
func finish(r *TestReport, names []string, maxFailures int) {
	if maxFailures <= 0 {
		maxFailures = DefaultMaxFailures
	}
	r.FailureLimit = maxFailures
	if len(names) > maxFailures {
		names = names[:maxFailures]
	}
	r.Failures = append([]string{}, names...)
	if r.Failed < len(r.Failures) {
		r.Failed = len(r.Failures)
	}
}

func clean(s string) string { return strings.TrimRight(s, "\r") }

// maxCount bounds every count a parser reads or adds up, so that absurd
// numbers in the output cannot overflow.
const maxCount = 1 << 40

// count reads a count from the output, bounded by maxCount.
func count(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n > maxCount {
		if len(s) > 0 && strings.Trim(s, "0123456789") == "" {
			return maxCount
		}
		return 0
	}
	return n
}

// add adds counts, saturating at maxCount.
func add(a, b int) int { return min(a+b, maxCount) }

// ---- go test (plain and -json) ----

type goTestParser struct {
	failures   *failureSet
	pending    []string // plain output: failing tests whose package line has not come yet
	pkgFailed  map[string]bool
	panicMsg   string // the last "panic: ..." of the package being read
	pass, skip int
	fail       int
	sawTests   bool
	sawSummary bool
}

// goTestEvent is one line of `go test -json` (test2json).
type goTestEvent struct {
	Action      string
	Package     string
	ImportPath  string
	Test        string
	Output      string
	FailedBuild string
}

var goPkgLine = regexp.MustCompile(`^(ok|FAIL|\?)\s+(\S+)(?:\s+(.*))?$`)

func (p *goTestParser) line(s string) {
	s = clean(s)
	if strings.HasPrefix(s, "{") {
		var ev goTestEvent
		if json.Unmarshal([]byte(s), &ev) == nil && ev.Action != "" {
			p.event(&ev)
			return
		}
	}
	t := strings.TrimLeft(s, " \t")
	if rest, ok := strings.CutPrefix(t, "--- "); ok {
		verdict, name, _ := strings.Cut(rest, ": ")
		if name, _, _ = strings.Cut(name, " "); name == "" {
			return
		}
		switch verdict {
		case "FAIL":
			p.sawTests = true
			p.fail++
			if len(p.pending) < maxStoredFailures {
				p.pending = append(p.pending, name)
			}
		case "PASS":
			p.sawTests = true
			p.pass++
		case "SKIP":
			p.sawTests = true
			p.skip++
		}
		return
	}
	if strings.HasPrefix(s, "panic: ") && p.panicMsg == "" {
		p.panicMsg = s
		return
	}
	if !strings.Contains(s, "\t") {
		return // package lines are tab-separated
	}
	m := goPkgLine.FindStringSubmatch(s)
	if m == nil {
		return
	}
	pkg, rest := m[2], m[3]
	switch m[1] {
	case "ok":
		p.sawSummary = true
		p.pending = p.pending[:0]
	case "?":
		if strings.Contains(rest, "no test files") {
			p.sawSummary = true
		}
	case "FAIL":
		p.sawSummary = true
		note := ""
		switch {
		case strings.Contains(rest, "[build failed]"):
			note = "[build failed]"
		case strings.Contains(rest, "[setup failed]"):
			note = "[setup failed]"
		}
		p.pkgFail(pkg, note)
	}
	p.panicMsg = ""
}

// pkgFail records the end of a failing package: its failing tests, or
// the package itself when none was named.
func (p *goTestParser) pkgFail(pkg, note string) {
	if p.pkgFailed == nil {
		p.pkgFailed = map[string]bool{}
	}
	if len(p.pending) > 0 {
		for _, name := range p.pending {
			p.failures.add(pkg + "." + name)
		}
		p.pending = p.pending[:0]
		p.pkgFailed[pkg] = true
		return
	}
	if p.pkgFailed[pkg] {
		return
	}
	p.pkgFailed[pkg] = true
	if note == "" && p.panicMsg != "" {
		note = "[" + p.panicMsg + "]"
	}
	if note != "" {
		pkg += " " + note
	}
	p.failures.add(pkg)
}

func (p *goTestParser) event(ev *goTestEvent) {
	pkg := ev.Package
	if pkg == "" {
		pkg = ev.ImportPath
	}
	switch {
	case ev.Action == "output":
		if strings.HasPrefix(ev.Output, "panic: ") && p.panicMsg == "" {
			p.panicMsg = strings.TrimSpace(ev.Output)
		}
	case ev.Test != "":
		switch ev.Action {
		case "pass":
			p.sawTests = true
			p.pass++
		case "skip":
			p.sawTests = true
			p.skip++
		case "fail":
			p.sawTests = true
			p.fail++
			if p.pkgFailed == nil {
				p.pkgFailed = map[string]bool{}
			}
			p.pkgFailed[pkg] = true
			p.failures.add(pkg + "." + ev.Test)
		}
	case ev.Action == "pass" || ev.Action == "skip":
		p.sawSummary = true
		p.panicMsg = ""
	case ev.Action == "fail":
		p.sawSummary = true
		note := ""
		if ev.FailedBuild != "" {
			note = "[build failed]"
		}
		p.pkgFail(pkg, note)
		p.panicMsg = ""
	case ev.Action == "build-fail":
		p.sawSummary = true
	}
}

func (p *goTestParser) report(maxFailures int) TestReport {
	r := TestReport{Framework: FrameworkGo, HasSummary: p.sawSummary}
	for _, name := range p.pending { // output ended before the package line
		p.failures.add(name)
	}
	p.pending = nil
	switch {
	case p.sawSummary:
		r.Confidence = 2
	case p.sawTests:
		r.Confidence = 1
	}
	// A failing subtest fails its parents; name the leaves only.
	names := make([]string, 0, len(p.failures.names))
	parents := 0
	for _, n := range p.failures.names {
		if p.failures.seenPrefix(n + "/") {
			parents++
			continue
		}
		names = append(names, n)
	}
	r.Failed = max(p.failures.count()-parents, 0)
	r.Passed, r.Skipped = p.pass, p.skip
	r.Tests = add(add(p.pass, p.fail), p.skip)
	finish(&r, names, maxFailures)
	return r
}

// seenPrefix reports whether a stored name starts with prefix.
func (f *failureSet) seenPrefix(prefix string) bool {
	for _, n := range f.names {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// ---- pytest ----

type pytestParser struct {
	failures   *failureSet
	counts     map[string]int
	sawSummary bool
	sawTests   bool
}

var (
	pytestSummary = regexp.MustCompile(`^=*\s*((?:\d+ [a-z]+(?:, )?)+|no tests ran)\s+in\s+[\d.]+s(?:econds)?(?:\s+\([^)]*\))?\s*=*$`)
	pytestCount   = regexp.MustCompile(`(\d+) ([a-z]+)`)
	pytestVerbose = regexp.MustCompile(`^(\S.*::.*?) (FAILED|PASSED|SKIPPED|ERROR|XFAIL|XPASS)(?:\s+\[\s*\d+%\])?\s*$`)
)

func (p *pytestParser) line(s string) {
	s = clean(s)
	switch {
	case strings.HasPrefix(s, "FAILED "):
		p.sawTests = true
		p.failures.add(pytestID(s[len("FAILED "):]))
	case strings.HasPrefix(s, "ERROR "):
		p.sawTests = true
		p.failures.add(pytestID(s[len("ERROR "):]))
	case strings.Contains(s, "test session starts") && strings.HasPrefix(s, "==="):
		p.sawTests = true
	case strings.Contains(s, "::") && !strings.Contains(s, " ... "): // not cargo's "test a::b ... FAILED"
		if m := pytestVerbose.FindStringSubmatch(s); m != nil {
			p.sawTests = true
			if m[2] == "FAILED" || m[2] == "ERROR" {
				p.failures.add(m[1])
			}
		}
	default:
		m := pytestSummary.FindStringSubmatch(s)
		if m == nil {
			return
		}
		counts := map[string]int{}
		for _, c := range pytestCount.FindAllStringSubmatch(m[1], -1) {
			n := count(c[1])
			word := strings.TrimSuffix(c[2], "s")
			if word == "error" || word == "warning" {
				counts[word] = add(counts[word], n)
				continue
			}
			counts[c[2]] = add(counts[c[2]], n)
		}
		if m[1] != "no tests ran" && len(counts) == 0 {
			return
		}
		p.counts, p.sawSummary = counts, true
	}
}

// pytestID cuts the " - message" off a short-summary entry. The id may
// hold spaces and " - " inside its [parameters].
func pytestID(s string) string {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			if depth > 0 {
				depth--
			}
		case ' ':
			if depth == 0 && strings.HasPrefix(s[i:], " - ") {
				return s[:i]
			}
		}
	}
	return strings.TrimSpace(s)
}

func (p *pytestParser) report(maxFailures int) TestReport {
	r := TestReport{Framework: FrameworkPytest, HasSummary: p.sawSummary}
	switch {
	case p.sawSummary:
		r.Confidence = 2
	case p.sawTests:
		r.Confidence = 1
	}
	c := p.counts
	r.Passed = add(c["passed"], c["xpassed"])
	r.Skipped = add(c["skipped"], c["xfailed"])
	r.Failed = add(c["failed"], c["error"])
	r.Tests = add(add(r.Passed, r.Skipped), c["failed"])
	if !p.sawSummary {
		r.Failed = p.failures.count()
	}
	finish(&r, p.failures.names, maxFailures)
	return r
}

// ---- jest and vitest ----

type jestParser struct {
	failures   *failureSet
	crosses    *failureSet // "✕ name" / "× name" lines, used when no "●" line names failures
	suite      string      // the last "FAIL  path" line's path
	counts     map[string]int
	total      int
	sawSummary bool
	sawTests   bool
}

var (
	jestSummary   = regexp.MustCompile(`^Tests:\s+(.*\d+ total.*)$`)
	vitestSummary = regexp.MustCompile(`^\s*Tests\s{2,}(\d+ [a-z]+.*)$`)
	jestCount     = regexp.MustCompile(`(\d+) (failed|passed|skipped|todo|pending)`)
	jestTotal     = regexp.MustCompile(`(\d+) total|\((\d+)\)`)
)

func (p *jestParser) line(s string) {
	s = clean(s)
	t := strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(t, "● "):
		name := strings.TrimSpace(t[len("● "):])
		switch {
		case name == "Console":
		case strings.HasPrefix(name, "Test suite failed to run"):
			p.sawTests = true
			if p.suite != "" {
				p.failures.add(p.suite + " (test suite failed to run)")
			} else {
				p.failures.add(name)
			}
		default:
			p.sawTests = true
			p.failures.add(name)
		}
	case strings.HasPrefix(t, "FAIL "):
		p.sawTests = true
		path := strings.TrimSpace(t[len("FAIL "):])
		if strings.Contains(path, " > ") { // vitest: FAIL  file > describe > test
			p.failures.add(path)
		} else {
			p.suite = path
		}
	case strings.HasPrefix(t, "PASS "):
		p.sawTests = true
	case strings.HasPrefix(t, "✕ ") || strings.HasPrefix(t, "× "):
		name := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(t, "✕ "), "× "))
		if i := strings.LastIndex(name, " ("); i > 0 && strings.HasSuffix(name, ")") {
			name = name[:i] // jest: "(5 ms)"
		}
		p.crosses.add(name)
	default:
		var m []string
		if m = jestSummary.FindStringSubmatch(s); m == nil {
			m = vitestSummary.FindStringSubmatch(s)
		}
		if m == nil {
			return
		}
		counts := map[string]int{}
		for _, c := range jestCount.FindAllStringSubmatch(m[1], -1) {
			counts[c[2]] = add(counts[c[2]], count(c[1]))
		}
		total := -1
		if tm := jestTotal.FindStringSubmatch(m[1]); tm != nil {
			v := tm[1]
			if v == "" {
				v = tm[2]
			}
			total = count(v)
		}
		if len(counts) == 0 && total < 0 {
			return
		}
		p.counts, p.total, p.sawSummary = counts, total, true
	}
}

func (p *jestParser) report(maxFailures int) TestReport {
	r := TestReport{Framework: FrameworkJest, HasSummary: p.sawSummary}
	switch {
	case p.sawSummary:
		r.Confidence = 2
	case p.sawTests:
		r.Confidence = 1
	}
	names := p.failures.names
	if len(names) == 0 {
		names = p.crosses.names
	}
	c := p.counts
	r.Passed, r.Failed, r.Skipped = c["passed"], c["failed"], add(add(c["skipped"], c["todo"]), c["pending"])
	r.Tests = p.total
	if r.Tests < 0 {
		r.Tests = add(add(r.Passed, r.Failed), r.Skipped)
	}
	if !p.sawSummary {
		r.Failed = max(p.failures.count(), p.crosses.count())
	}
	finish(&r, names, maxFailures)
	return r
}

// ---- cargo test ----

type cargoParser struct {
	failures   *failureSet
	pass, fail int
	ignored    int
	sawSummary bool
	sawTests   bool
	// per-test lines, for when no summary comes
	linePass, lineFail, lineIgnored int
	buildFailed                     bool
}

var (
	cargoRunning = regexp.MustCompile(`^running \d+ tests?$`)
	cargoTest    = regexp.MustCompile(`^test (.+?) \.\.\. (ok|FAILED|ignored|bench)(?:,.*)?$`)
	cargoResult  = regexp.MustCompile(`^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored`)
)

func (p *cargoParser) line(s string) {
	s = clean(s)
	switch {
	case cargoRunning.MatchString(s):
		p.sawTests = true
	case strings.HasPrefix(s, "test result: "):
		m := cargoResult.FindStringSubmatch(s)
		if m == nil {
			return
		}
		p.pass = add(p.pass, count(m[1]))
		p.fail = add(p.fail, count(m[2]))
		p.ignored = add(p.ignored, count(m[3]))
		p.sawSummary = true
	case strings.HasPrefix(s, "test "):
		m := cargoTest.FindStringSubmatch(s)
		if m == nil {
			return
		}
		p.sawTests = true
		switch m[2] {
		case "ok":
			p.linePass++
		case "FAILED":
			p.lineFail++
			p.failures.add(m[1])
		case "ignored":
			p.lineIgnored++
		}
	case strings.HasPrefix(s, "error: could not compile "):
		p.sawTests = true
		p.buildFailed = true
		msg := strings.TrimPrefix(s, "error: ")
		if i := strings.Index(msg, " due to "); i > 0 {
			msg = msg[:i]
		}
		p.failures.add(msg)
	}
}

func (p *cargoParser) report(maxFailures int) TestReport {
	r := TestReport{Framework: FrameworkCargo, HasSummary: p.sawSummary}
	switch {
	case p.sawSummary:
		r.Confidence = 2
	case p.sawTests:
		r.Confidence = 1
	}
	if p.sawSummary {
		r.Passed, r.Failed, r.Skipped = p.pass, p.fail, p.ignored
	} else {
		r.Passed, r.Failed, r.Skipped = p.linePass, p.lineFail, p.lineIgnored
	}
	r.Tests = add(add(r.Passed, r.Failed), r.Skipped)
	if p.buildFailed {
		r.Failed = add(r.Failed, 1)
	}
	finish(&r, p.failures.names, maxFailures)
	return r
}
