package redact

import (
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// MinSecretLen is the shortest secret value a Redactor replaces: shorter
// values would mangle text without protecting anything.
const MinSecretLen = 4

// minEncodedLen is the shortest base64 fragment (a secret encoded inside
// a longer text) a Redactor replaces.
const minEncodedLen = 8

// Marked matches the marker a Redactor puts in place of a secret:
// [REDACTED:NAME], the secret's name in its first group.
var Marked = regexp.MustCompile(`\[REDACTED:([A-Za-z_][A-Za-z0-9_]*)\]`)

// Redactor replaces the values of a hook's secrets with [REDACTED:NAME]:
// the value as it is and the forms it takes when hookd or a program
// quotes, escapes or encodes it — JSON string escapes as the common
// encoders write them (a slash as \/ or not, non-ASCII as \uXXXX or not,
// HTML characters as \u00XX or not, hex digits in either case), Go's
// (also ASCII-only), shell quoting (printf %q's backslashes, bash's $'...'
// as printf %q and declare -p write a value with control characters,
// single quotes as bash -x and shlex.quote write them), Python's repr
// and ascii() (with \xhh, \uhhhh and \Uhhhhhhhh escapes),
// percent-encoding (query and path forms), base64 (standard and URL
// alphabets, padded and raw, also when the value sits inside a longer
// encoded text) and hex (either case). Each form without a line break of
// its own is also found wrapped into lines of any width (base64's 76
// columns, PEM's 64, base64 -w N, xxd -p, fold): one line break ("\n",
// "\r\n" or "\r") may sit between any two of its characters. A secret
// transformed in any other way (shifted, reversed, split, compressed) is
// not found.
//
// The engine builds one Redactor per run and applies it at every sink:
// step results as soon as a step ends (before later steps, the prompt or
// events see them), the event data a hook publishes, the prompt, tool
// results, the transcript and the run record. Command output is redacted
// as it streams, before it is capped (Writer), so a cut never leaves a
// fragment of a secret behind. The nil *Redactor redacts nothing.
type Redactor struct {
	pats []redactPattern // longest first
	span int             // the longest text a pattern matches
	wrap *wrapIndex      // nil when no pattern is wrapped
}

// redactPattern is one form of a secret and what replaces it. A form
// without a line break ('\r' or '\n') is wrapped: it is also found with
// one line break ("\n", "\r\n" or "\r") between any two of its
// characters, as base64, hex and fold write a long text in lines of any
// width.
type redactPattern struct {
	from, to string
	wrapped  bool
}

// extent is the length of the longest text p matches: with a line break
// of up to 2 bytes between each two of its characters when wrapped.
func (p *redactPattern) extent() int {
	if p.wrapped {
		return 3*len(p.from) - 2
	}
	return len(p.from)
}

// New builds a Redactor for the secrets named in names whose
// values environ (KEY=VALUE; the last of a repeated key wins) holds.
// Values shorter than MinSecretLen are not redacted. It returns nil when
// there is nothing to redact.
func New(names []string, environ []string) *Redactor {
	if len(names) == 0 {
		return nil
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	values := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && want[k] {
			values[k] = v
		}
	}
	seen := map[string]bool{}
	var pats []redactPattern
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a value two names share is reported under the first
	for _, k := range keys {
		v := values[k]
		if len(v) < MinSecretLen {
			continue
		}
		to := "[REDACTED:" + k + "]" // as Marked matches
		for _, f := range secretForms(v) {
			if f != "" && !seen[f] {
				seen[f] = true
				pats = append(pats, redactPattern{f, to, !strings.ContainsAny(f, "\r\n")})
			}
		}
	}
	if len(pats) == 0 {
		return nil
	}
	// Longest first: at one position the longest form is replaced whole.
	sort.SliceStable(pats, func(i, j int) bool { return len(pats[i].from) > len(pats[j].from) })
	span := 0
	for i := range pats {
		span = max(span, pats[i].extent())
	}
	r := &Redactor{pats: pats, span: span}
	if slices.ContainsFunc(pats, func(p redactPattern) bool { return p.wrapped }) {
		r.wrap = newWrapIndex(pats)
	}
	return r
}

// matcher finds the matches in one text, leftmost first.
type matcher struct {
	r          *Redactor
	s          string
	start, end []int          // each pattern's next match without a line break: -2 not searched yet, -1 none
	wrapped    []wrappedMatch // the matches with one, by pattern and start
	wnext      []int          // each pattern's first entry in wrapped not yet passed
}

func (r *Redactor) matcher(s string) *matcher {
	m := &matcher{r: r, s: s, start: make([]int, len(r.pats)), end: make([]int, len(r.pats))}
	for i := range m.start {
		m.start[i] = -2
	}
	if r.wrap != nil {
		m.wrapped = r.wrappedMatches(s)
		if len(m.wrapped) > 0 {
			m.wnext = make([]int, len(r.pats))
			for i := range m.wnext {
				m.wnext[i] = len(m.wrapped)
			}
			for i := len(m.wrapped) - 1; i >= 0; i-- {
				m.wnext[m.wrapped[i].pat] = i
			}
		}
	}
	return m
}

// next finds the leftmost match at or after from, of the longest
// pattern at that position: its start, its end and its pattern, nil when
// there is none.
func (m *matcher) next(from int) (int, int, *redactPattern) {
	best, bestEnd, bp := -1, -1, -1
	for i := range m.r.pats {
		if m.start[i] < from && m.start[i] != -1 {
			if j := strings.Index(m.s[from:], m.r.pats[i].from); j >= 0 {
				m.start[i], m.end[i] = from+j, from+j+len(m.r.pats[i].from)
			} else {
				m.start[i] = -1
			}
		}
		a, e := m.start[i], m.end[i]
		if m.wnext != nil {
			w := m.wnext[i]
			for w < len(m.wrapped) && m.wrapped[w].pat == i && m.wrapped[w].start < from {
				w++
			}
			m.wnext[i] = w
			if w < len(m.wrapped) && m.wrapped[w].pat == i && (a < 0 || m.wrapped[w].start < a) {
				a, e = m.wrapped[w].start, m.wrapped[w].end
			}
		}
		if a >= 0 && (best < 0 || a < best) {
			best, bestEnd, bp = a, e, i
		}
	}
	if bp < 0 {
		return -1, -1, nil
	}
	return best, bestEnd, &m.r.pats[bp]
}

// redact replaces what it can decide in s and returns the text up to
// where it decided, and how much of s that consumed. Unless final, a
// match that may still continue past the end of s is left undecided:
// the last span-1 bytes wait for more.
func (r *Redactor) redact(s string, final bool, out *strings.Builder) int {
	m := r.matcher(s)
	pos := 0
	for {
		a, e, p := m.next(pos)
		if p == nil || (!final && a+r.span > len(s)) {
			break
		}
		out.WriteString(s[pos:a])
		out.WriteString(p.to)
		pos = e
	}
	cut := len(s)
	if !final {
		cut = max(pos, len(s)-(r.span-1))
	}
	out.WriteString(s[pos:cut])
	return cut
}

// String redacts s.
func (r *Redactor) String(s string) string {
	if r == nil || len(s) < MinSecretLen {
		return s
	}
	var b strings.Builder
	r.redact(s, true, &b)
	if b.Len() == len(s) && b.String() == s {
		return s
	}
	return b.String()
}

// Span is the length of the longest text the Redactor replaces (0 for
// nil). A reader that keeps only the first N bytes of a text reads N+Span
// bytes and redacts them before it cuts (see Writer), so that a secret
// across the cut is replaced whole.
func (r *Redactor) Span() int {
	if r == nil {
		return 0
	}
	return r.span
}

// TrimCutStart removes from the start of s, the kept end of a longer
// text, the end of a secret whose beginning was cut away: the longest
// prefix of s, MinSecretLen bytes or more, that ends a form of a secret
// (a wrapped one across line breaks, as the Redactor finds it).
// It is for a text whose start was cut after redaction, where a secret
// across the cut can no longer be found whole.
func (r *Redactor) TrimCutStart(s string) string {
	if r == nil {
		return s
	}
	cut := 0
	for _, p := range r.pats {
		if p.wrapped {
			// The end of a wrapped form, maybe after the line break the
			// cut fell before.
			from := skipBreak(s, 0)
			for n := min(len(p.from)-1, len(s)-from); n >= MinSecretLen; n-- {
				if e := matchWrapped(s, from, p.from[len(p.from)-n:]); e >= 0 {
					cut = max(cut, e)
					break
				}
			}
			continue
		}
		for n := min(len(p.from)-1, len(s)); n > cut && n >= MinSecretLen; n-- {
			if strings.HasSuffix(p.from, s[:n]) {
				cut = n
				break
			}
		}
	}
	return s[cut:]
}

// Value redacts every string inside v (maps and slices are copied).
func (r *Redactor) Value(v any) any {
	if r == nil {
		return v
	}
	switch x := v.(type) {
	case string:
		return r.String(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[r.String(k)] = r.Value(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.Value(e)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = r.String(e)
		}
		return out
	case json.RawMessage:
		return json.RawMessage(r.String(string(x)))
	case nil, bool, int, int64, float64:
		return v
	}
	// Another type (a step's typed result): unchanged unless its JSON
	// form holds a secret, else that form, redacted, decoded.
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	red := r.String(string(b))
	if red == string(b) {
		return v
	}
	var out any
	if json.Unmarshal([]byte(red), &out) != nil {
		return nil
	}
	return out
}

// Map redacts every string inside m.
func (r *Redactor) Map(m map[string]any) map[string]any {
	if r == nil || m == nil {
		return m
	}
	return r.Value(m).(map[string]any)
}
