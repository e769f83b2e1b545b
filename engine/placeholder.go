package engine

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/redact"
)

// Placeholder is one {{path}} or {{path | filter ...}} found in a
// template, or one literal {{"text"}}.
type Placeholder struct {
	// Path is what Scope.Lookup resolves: the trimmed text between the
	// braces, with its filters normalised ("steps.x.body | json"); for a
	// literal, its quoted form.
	Path       string
	Ref        string   // the path without its filters
	Filters    []Filter // the filter chain, in order (filter.go)
	Start, End int      // byte offsets of "{{" and just past "}}"
	Literal    string   // for a literal placeholder, the text it stands for
}

// LastFilter names the placeholder's last filter, or "".
func (p Placeholder) LastFilter() string {
	if len(p.Filters) == 0 {
		return ""
	}
	return p.Filters[len(p.Filters)-1].Name
}

// IsLiteral reports whether p is a literal {{"text"}} rather than a
// reference to a value.
func (p Placeholder) IsLiteral() bool { return isLiteralPath(p.Path) }

func isLiteralPath(path string) bool { return strings.HasPrefix(path, `"`) }

// ParsePlaceholders finds every {{path}} in s. A "{{" without "}}" or a
// path with characters other than letters, digits, '_', '-' and '.' is an
// error.
//
// A placeholder whose content is a double-quoted string, {{"text"}}, is a
// literal: it stands for the text, with Go string escapes (\", \\, \n,
// ...) decoded. It is how a template spells a literal "{{": write
// {{"{{"}} — or quote the whole text, {{"{{.Names}}"}}. Its Path is the
// quoted form and Literal the text; Scope.Lookup and Expand resolve it to
// the text.
func ParsePlaceholders(s string) ([]Placeholder, error) {
	var out []Placeholder
	if k := strings.Count(s, "{{"); k > 0 {
		out = make([]Placeholder, 0, k) // most "{{" open one
	}
	for i := 0; ; {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			return out, nil
		}
		start := i + j
		inner := start + 2
		for inner < len(s) && (s[inner] == ' ' || s[inner] == '\t') {
			inner++
		}
		if inner < len(s) && s[inner] == '"' {
			ph, err := parseLiteral(s, start, inner)
			if err != nil {
				return nil, err
			}
			out = append(out, ph)
			i = ph.End
			continue
		}
		k := strings.Index(s[start+2:], "}}")
		if k < 0 {
			return nil, fmt.Errorf("unclosed placeholder at offset %d", start)
		}
		end := start + 2 + k + 2
		ph, err := parseExpr(strings.TrimSpace(s[start+2 : end-2]))
		if err != nil {
			return nil, &PlaceholderError{Offset: start, Err: err}
		}
		ph.Start, ph.End = start, end
		out = append(out, ph)
		i = end
	}
}

// parseLiteral reads a {{"text"}} placeholder starting at start whose
// quoted string starts at q.
func parseLiteral(s string, start, q int) (Placeholder, error) {
	quoted, err := strconv.QuotedPrefix(s[q:])
	if err != nil {
		return Placeholder{}, fmt.Errorf("literal placeholder at offset %d: unterminated or invalid string (want {{\"text\"}})", start)
	}
	text, err := strconv.Unquote(quoted)
	if err != nil {
		return Placeholder{}, fmt.Errorf("literal placeholder at offset %d: %w", start, err)
	}
	end := q + len(quoted)
	for end < len(s) && (s[end] == ' ' || s[end] == '\t') {
		end++
	}
	if !strings.HasPrefix(s[end:], "}}") {
		return Placeholder{}, fmt.Errorf("literal placeholder at offset %d: want }} right after the string %s", start, quoted)
	}
	return Placeholder{Path: quoted, Start: start, End: end + 2, Literal: text}, nil
}

// PlaceholderError is a placeholder that does not parse, at byte Offset
// of its template (so a loader can name the line).
type PlaceholderError struct {
	Offset int
	Err    error
}

func (e *PlaceholderError) Error() string { return e.Err.Error() }
func (e *PlaceholderError) Unwrap() error { return e.Err }

// parseExpr parses the inside of a placeholder: a path, then optional
// filters after '|'.
func parseExpr(expr string) (Placeholder, error) {
	ref, chain, piped := strings.Cut(expr, "|")
	ref = strings.TrimSpace(ref)
	if err := checkPath(ref); err != nil {
		return Placeholder{}, fmt.Errorf("placeholder {{%s}}: %w", expr, err)
	}
	ph := Placeholder{Path: ref, Ref: ref}
	if !piped {
		return ph, nil
	}
	fs, err := parseFilters(chain)
	if err != nil {
		return Placeholder{}, fmt.Errorf("placeholder {{%s}}: %w", expr, err)
	}
	ph.Filters = fs
	var b strings.Builder
	b.WriteString(ref)
	for _, f := range fs {
		b.WriteString(" | ")
		b.WriteString(f.String())
	}
	ph.Path = b.String()
	return ph, nil
}

func checkPath(p string) error {
	if p == "" {
		return fmt.Errorf("empty path")
	}
	for seg := range strings.SplitSeq(p, ".") {
		if seg == "" {
			return fmt.Errorf("empty path segment")
		}
		for _, r := range seg {
			if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return fmt.Errorf("invalid character %q", r)
			}
		}
	}
	return nil
}

// placeholder roots other than steps and events.
var scalarRoots = map[string]bool{"hook": true, "run": true, "now": true, "last_run_time": true, "trigger": true}

// CheckPlaceholders validates the placeholders of tmpl statically against
// a hook's steps: a step reference must name a step whose index is below
// before (use len(steps) for the prompt) and unknown roots are errors.
// Steps are numbered from 0, as in agent-queue: {{step_0}} is the first.
func CheckPlaceholders(tmpl string, steps []*StepDef, before int) error {
	phs, err := ParsePlaceholders(tmpl)
	if err != nil {
		return err
	}
	for _, ph := range phs {
		if err := CheckPlaceholder(ph, steps, before); err != nil {
			return err
		}
	}
	return nil
}

// CheckPlaceholder is CheckPlaceholders for one placeholder that
// ParsePlaceholders returned, for a caller that parsed the text already.
func CheckPlaceholder(ph Placeholder, steps []*StepDef, before int) error {
	if ph.IsLiteral() {
		return nil
	}
	if err := checkRef(ph.Ref, steps, before); err != nil {
		return fmt.Errorf("placeholder {{%s}}: %w", ph.Path, err)
	}
	return nil
}

func checkRef(path string, steps []*StepDef, before int) error {
	// The first three segments (a split would allocate at every check).
	root, rest, has1 := strings.Cut(path, ".")
	seg1, rest, has2 := strings.Cut(rest, ".")
	seg2, _, _ := strings.Cut(rest, ".")
	switch {
	case root == "event":
		return nil
	case root == "steps":
		if !has1 {
			return fmt.Errorf("steps needs a step name: {{steps.NAME.field}}")
		}
		for _, d := range steps {
			if d.Name == seg1 {
				if d.Index >= before {
					return fmt.Errorf("step %q runs at or after this point", seg1)
				}
				if has2 {
					return checkStepField(d.Type, seg2, fmt.Sprintf("step %q", d.Name))
				}
				return nil
			}
		}
		return fmt.Errorf("no step named %q", seg1)
	case strings.HasPrefix(root, "step_"):
		n, err := strconv.Atoi(root[len("step_"):])
		if err != nil || n < 0 || root[len("step_"):] != strconv.Itoa(n) {
			return fmt.Errorf("bad step reference %q (want step_N, N from 0)", root)
		}
		switch {
		case len(steps) == 0:
			return fmt.Errorf("step_%d is out of range (the hook has no steps)", n)
		case n >= len(steps):
			return fmt.Errorf("step_%d is out of range (the hook has %d steps: step_0 to step_%d)", n, len(steps), len(steps)-1)
		}
		if n >= before {
			return fmt.Errorf("step_%d runs at or after this point", n)
		}
		if has1 {
			return checkStepField(steps[n].Type, seg1, root)
		}
		return nil
	case scalarRoots[root]:
		return nil
	}
	return fmt.Errorf("unknown placeholder root %q (want event, step_N, steps.NAME, hook, run, now, last_run_time or trigger)", root)
}

// Scope is what placeholders resolve against during a run.
type Scope struct {
	Hook        string
	RunID       string
	Trigger     string
	Now         time.Time
	LastRunTime time.Time
	Event       map[string]any
	Steps       []*StepResult // results so far, by position (nil for steps not run)
	StepNames   map[string]int
	// Values are more roots, for a context that has them: a
	// notification's template has status, reason, answer ...
	Values map[string]any
	// Redactor, when set, redacts a value before a filter sees it, so
	// that no filter turns a secret into a form the redactor does not
	// know (upper, truncate, tail ...).
	Redactor *redact.Redactor
}

// Lookup resolves a placeholder path to a value. A literal path, the
// quoted form of a {{"text"}} placeholder, resolves to its text.
func (s *Scope) Lookup(path string) (any, error) {
	if isLiteralPath(path) {
		text, err := strconv.Unquote(path)
		if err != nil {
			return nil, fmt.Errorf("{{%s}}: %w", path, err)
		}
		return text, nil
	}
	if strings.Contains(path, "|") {
		ph, err := parseExpr(path)
		if err != nil {
			return nil, err
		}
		v, err := s.Lookup(ph.Ref)
		if err != nil {
			if ph.Filters[0].Name != "default" {
				return nil, err
			}
			v = nil // absent: what default is for
		}
		return applyFilters(s.Redactor.Value(v), ph.Filters), nil
	}
	segs := strings.Split(path, ".")
	root := segs[0]
	switch {
	case root == "event":
		if len(segs) == 1 {
			if s.Event == nil {
				return map[string]any{}, nil
			}
			return s.Event, nil
		}
		return walk(s.Event, segs[1:], path)
	case root == "hook":
		return s.Hook, nil
	case root == "run":
		return s.RunID, nil
	case root == "trigger":
		return s.Trigger, nil
	case root == "now":
		return s.Now.Format(time.RFC3339), nil
	case root == "last_run_time":
		if s.LastRunTime.IsZero() {
			return "", nil
		}
		return s.LastRunTime.Format(time.RFC3339), nil
	case root == "steps":
		if len(segs) < 2 {
			return nil, fmt.Errorf("{{%s}}: steps needs a step name", path)
		}
		i, ok := s.StepNames[segs[1]]
		if !ok {
			return nil, fmt.Errorf("{{%s}}: no step named %q", path, segs[1])
		}
		return s.stepValue(i, segs[2:], path)
	case strings.HasPrefix(root, "step_"):
		n, err := strconv.Atoi(root[len("step_"):])
		if err != nil {
			return nil, fmt.Errorf("{{%s}}: bad step reference", path)
		}
		return s.stepValue(n, segs[1:], path)
	}
	if v, ok := s.Values[root]; ok {
		if len(segs) == 1 {
			return v, nil
		}
		return walk(v, segs[1:], path)
	}
	return nil, fmt.Errorf("{{%s}}: unknown placeholder", path)
}

func (s *Scope) stepValue(n int, rest []string, path string) (any, error) {
	if n < 0 || n >= len(s.Steps) || s.Steps[n] == nil {
		return nil, fmt.Errorf("{{%s}}: step_%d has no result", path, n)
	}
	r := s.Steps[n]
	if len(rest) == 0 {
		return r.Output, nil
	}
	v, ok := r.Field(rest[0])
	if !ok {
		return nil, fmt.Errorf("{{%s}}: step_%d has no field %q", path, n, rest[0])
	}
	if len(rest) == 1 {
		return v, nil
	}
	return walk(v, rest[1:], path)
}

func walk(v any, segs []string, path string) (any, error) {
	for _, seg := range segs {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[seg]
			if !ok {
				return nil, fmt.Errorf("{{%s}}: no field %q", path, seg)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("{{%s}}: no element %q", path, seg)
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("{{%s}}: %q is not an object", path, seg)
		}
	}
	return v, nil
}

// Stringify turns a placeholder value into text: strings as they are,
// everything else as JSON.
func Stringify(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	case fmt.Stringer:
		return x.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Expand replaces every placeholder in tmpl with its value from scope,
// passed through quote (nil leaves values as they are). A placeholder
// that does not resolve is an error naming it.
func Expand(tmpl string, scope *Scope, quote func(string) string) (string, error) {
	if quote == nil {
		return ExpandEscaped(tmpl, scope, nil)
	}
	return ExpandEscaped(tmpl, scope, func(_ Placeholder, s string) string { return quote(s) })
}

// ExpandEscaped is Expand with escape applied to the text of each
// placeholder but literals ({{"text"}}, written by the author); escape
// sees the placeholder, so it can leave alone a value whose last filter
// already encoded it for the context (a JSON body's | json, a URL's |
// urlquery).
func ExpandEscaped(tmpl string, scope *Scope, escape func(ph Placeholder, s string) string) (string, error) {
	phs, err := ParsePlaceholders(tmpl)
	if err != nil {
		return "", err
	}
	if len(phs) == 0 {
		return tmpl, nil
	}
	var b strings.Builder
	b.Grow(len(tmpl))
	last := 0
	for _, ph := range phs {
		v, err := scope.Lookup(ph.Path)
		if err != nil {
			return "", err
		}
		s := Stringify(v)
		if escape != nil && !ph.IsLiteral() {
			s = escape(ph, s)
		}
		b.WriteString(tmpl[last:ph.Start])
		b.WriteString(s)
		last = ph.End
	}
	b.WriteString(tmpl[last:])
	return b.String(), nil
}
