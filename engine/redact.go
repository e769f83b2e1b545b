package engine

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// MinSecretLen is the shortest secret value a Redactor replaces: shorter
// values would mangle text without protecting anything.
const MinSecretLen = 4

// minEncodedLen is the shortest base64 fragment (a secret encoded inside
// a longer text) a Redactor replaces.
const minEncodedLen = 8

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

// NewRedactor builds a Redactor for the secrets named in names whose
// values environ (KEY=VALUE; the last of a repeated key wins) holds.
// Values shorter than MinSecretLen are not redacted. It returns nil when
// there is nothing to redact.
func NewRedactor(names []string, environ []string) *Redactor {
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
		to := "[REDACTED:" + k + "]"
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

// redactor builds the Redactor of h's runs: its secrets, its model key
// and notify URL variables, and hookd's own credentials (variables and
// CredentialValues).
func (e *Engine) redactor(h *Hook) *Redactor {
	names := append(append([]string(nil), h.Secrets...), e.cfg.Credentials...)
	if h.LLM.APIKeyEnv != "" {
		names = append(names, h.LLM.APIKeyEnv)
	}
	for _, t := range h.Notify {
		if t.URLEnv != "" {
			names = append(names, t.URLEnv)
		}
	}
	environ := e.cfg.Environ
	if len(e.cfg.CredentialValues) > 0 {
		environ = slices.Clip(environ) // appending must not write into the shared slice
		for k, v := range e.cfg.CredentialValues {
			names, environ = append(names, k), append(environ, k+"="+v)
		}
	}
	return NewRedactor(names, environ)
}

// secretForms lists the texts that stand for v: v itself, its escaped
// forms and its encodings.
func secretForms(v string) []string {
	forms := []string{v}
	// JSON, as encoding/json writes it (HTML-safe and not) and as
	// ASCII-only encoders (Python's json.dumps) write it.
	var b strings.Builder
	enc := json.NewEncoder(&b)
	if enc.Encode(v) == nil {
		forms = append(forms, unquote(b.String()))
	}
	b.Reset()
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		forms = append(forms, unquote(b.String()))
	}
	forms = append(forms, jsonASCII(v))
	// JSON as other encoders write it: a slash as \/ (PHP's json_encode,
	// Perl's escape_slash), non-ASCII characters as \uXXXX or not, hex
	// digits in lower or upper case (.NET, Jackson, PHP's JSON_HEX_*), and
	// the characters some escape for HTML as \u00XX: none (Python, jq,
	// Node), < > & (Go), also ' and = (Gson), also " + and ` (.NET).
	for _, html := range []string{"", "<>&", "<>&'=", "<>&'\"+`"} {
		for _, o := range []jsonStyle{{}, {ascii: true}, {upper: true}, {ascii: true, upper: true}} {
			o.html = html
			forms = append(forms, o.quote(v))
			o.slash = true
			forms = append(forms, o.quote(v))
		}
	}
	// Hex, lower and upper case (xxd -p, od, basenc --base16): each byte
	// is two digits whatever surrounds it.
	forms = append(forms, hex.EncodeToString([]byte(v)), strings.ToUpper(hex.EncodeToString([]byte(v))))
	// Go's %q, as error messages and the prompt's inline values quote.
	forms = append(forms, unquote(strconv.Quote(v)), unquote(strconv.QuoteToASCII(v)))
	// Shell quoting: the backslash form of bash's printf %q (a leading ~
	// or # is escaped only at the start of the quoted word), POSIX single
	// quotes as bash -x writes them ('\'' for a quote) and as Python's
	// shlex.quote writes them ('"'"').
	forms = append(forms, shellBackslash(v, false), shellBackslash(v, true),
		strings.ReplaceAll(v, "'", `'\''`), strings.ReplaceAll(v, "'", `'"'"'`))
	// bash's $'...' (ANSI-C quoting), which printf %q, declare -p and
	// set write for a value with a control character (or, in the C
	// locale, any non-ASCII byte): in a UTF-8 locale and in the C one.
	forms = append(forms, ansiC(v, true), ansiC(v, false))
	// Python's repr: single-quoted with \' escapes, or double-quoted
	// (a string with ' and no ") with only backslashes escaped; and
	// ascii(), which escapes every non-ASCII character too.
	forms = append(forms, pyRepr(v, '\'', false), pyRepr(v, '"', false), pyRepr(v, '\'', true), pyRepr(v, '"', true))
	// Percent-encoding, in a query and in a path.
	forms = append(forms, url.QueryEscape(v), url.PathEscape(v), strings.ReplaceAll(url.QueryEscape(v), "+", "%20"))
	// base64: the whole value, padded and raw, and the part of its
	// encoding that does not depend on what surrounds it when it sits at
	// any offset inside a longer encoded text (user:token in Basic auth).
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		forms = append(forms, enc.EncodeToString([]byte(v)), enc.WithPadding(base64.NoPadding).EncodeToString([]byte(v)))
		for off := range 3 {
			if core := base64Core(enc.WithPadding(base64.NoPadding), v, off); len(core) >= minEncodedLen {
				forms = append(forms, core)
			}
		}
	}
	// Every form with / also with each / escaped as \/, as JSON encoders
	// that escape slashes (PHP's json_encode, Perl's escape_slash) write
	// it inside a string: the value's base64 in a JSON document, say.
	for _, f := range forms {
		if strings.Contains(f, "/") {
			forms = append(forms, strings.ReplaceAll(f, "/", `\/`))
		}
	}
	return forms
}

// shellBackslash escapes v as bash's printf %q does for a printable
// string: a backslash before each character the shell treats specially,
// and before a leading ~ or # when atStart.
func shellBackslash(v string, atStart bool) string {
	var b strings.Builder
	for i, r := range v {
		if strings.ContainsRune(" !\"$&'()*,;<>?[\\]^`{|}", r) || (atStart && i == 0 && (r == '~' || r == '#')) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// pyRepr escapes v as the body of Python's repr of a str quoted with q
// (ascii() when asciiOnly): backslashes, the quote, \n \r \t, other
// control characters as \xhh, and characters Python does not print
// (str.isprintable: separators but the space, format and private-use
// characters; every non-ASCII one for ascii()) as \xhh, \uhhhh or
// \Uhhhhhhhh.
func pyRepr(v string, q rune, asciiOnly bool) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == '\\' || r == q:
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x` + hex4(r)[2:])
		case r >= utf8.RuneSelf && (asciiOnly || !unicode.IsPrint(r)):
			switch {
			case r <= 0xff:
				b.WriteString(`\x` + hex4(r)[2:])
			case r <= 0xffff:
				b.WriteString(`\u` + hex4(r))
			default:
				b.WriteString(`\U` + hex8(r))
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ansiC escapes v as the body of bash's $'...' quoting (ansic_quote):
// backslash and single quote escaped, \a \b \t \n \v \f \r and \E for
// ESC, other control bytes as three octal digits, and each byte of a
// non-ASCII character as octal — unless utf8Locale and the C library
// prints it (every character but C1 controls and the line and paragraph
// separators).
func ansiC(v string, utf8Locale bool) string {
	var b strings.Builder
	for i := 0; i < len(v); {
		r, size := utf8.DecodeRuneInString(v[i:])
		if r >= utf8.RuneSelf || r == utf8.RuneError && size <= 1 {
			if utf8Locale && !(r == utf8.RuneError && size <= 1) && r >= 0xa0 && r != 0x2028 && r != 0x2029 {
				b.WriteString(v[i : i+size])
			} else {
				for _, c := range []byte(v[i : i+size]) {
					b.WriteString(`\` + octal3(c))
				}
			}
			i += size
			continue
		}
		if e := strings.IndexByte("\a\b\t\n\v\f\r", byte(r)); e >= 0 {
			b.WriteString(`\` + string("abtnvfr"[e]))
		} else if r == 0x1b {
			b.WriteString(`\E`)
		} else if r == '\\' || r == '\'' {
			b.WriteString(`\` + string(r))
		} else if r < 0x20 || r == 0x7f {
			b.WriteString(`\` + octal3(byte(r)))
		} else {
			b.WriteByte(byte(r))
		}
		i += size
	}
	return b.String()
}

func octal3(c byte) string {
	return string([]byte{'0' + c>>6, '0' + c>>3&7, '0' + c&7})
}

func hex8(r rune) string {
	s := strconv.FormatInt(int64(r), 16)
	return strings.Repeat("0", 8-len(s)) + s
}

// unquote strips the quotes and the newline of an encoded string.
func unquote(s string) string {
	s = strings.TrimSuffix(s, "\n")
	if len(s) >= 2 {
		return s[1 : len(s)-1]
	}
	return s
}

// jsonASCII escapes v as a JSON string body with every non-ASCII
// character as \uXXXX (surrogate pairs beyond the BMP).
func jsonASCII(v string) string {
	var b strings.Builder
	body := unquote(func() string { s, _ := json.Marshal(v); return string(s) }())
	for _, r := range body {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			b.WriteString(`\u` + hex4(0xD800+(r>>10)) + `\u` + hex4(0xDC00+(r&0x3FF)))
		default:
			b.WriteString(`\u` + hex4(r))
		}
	}
	return b.String()
}

// jsonStyle is how a JSON encoder escapes a string, beyond the quote,
// the backslash and control characters, which all escape (\b \f \n \r
// \t, \u00XX for the others).
type jsonStyle struct {
	html  string // characters written as \u00XX
	ascii bool   // every non-ASCII character as \uXXXX (a surrogate pair beyond the BMP)
	upper bool   // hex digits in upper case
	slash bool   // a slash as \/
}

// quote writes v as the body of a JSON string in style o. U+2028 and
// U+2029 are escaped (as every encoder that escapes for JavaScript
// does) unless neither ascii nor html is set; invalid UTF-8 is kept.
func (o jsonStyle) quote(v string) string {
	var b strings.Builder
	u := func(r rune) {
		h := hex4(r)
		if o.upper {
			h = strings.ToUpper(h)
		}
		b.WriteString(`\u` + h)
	}
	for i, r := range v {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(v[i:], "\uFFFD"):
			b.WriteByte(v[i]) // a byte of invalid UTF-8, as it is
		case r == '"' && !strings.ContainsRune(o.html, r), r == '\\':
			b.WriteString(`\` + string(r))
		case r == '/' && o.slash:
			b.WriteString(`\/`)
		case r < 0x20:
			if e := strings.IndexRune("\b\f\n\r\t", r); e >= 0 {
				b.WriteString(`\` + string("bfnrt"[e]))
			} else {
				u(r)
			}
		case r < utf8.RuneSelf && strings.ContainsRune(o.html, r):
			u(r)
		case r >= utf8.RuneSelf && (o.ascii || (r == 0x2028 || r == 0x2029) && o.html != ""):
			if r > 0xFFFF {
				r -= 0x10000
				u(0xD800 + r>>10)
				u(0xDC00 + r&0x3FF)
			} else {
				u(r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func hex4(r rune) string {
	s := strconv.FormatInt(int64(r), 16)
	return strings.Repeat("0", 4-len(s)) + s
}

// base64Core returns the characters of the encoding of v, placed off
// bytes into a longer text, that depend on v's bytes alone.
func base64Core(enc *base64.Encoding, v string, off int) string {
	buf := make([]byte, off+len(v))
	copy(buf[off:], v)
	s := enc.EncodeToString(buf)
	first := (8*off + 5) / 6       // the first character whose 6 bits all come from v
	last := 8 * (off + len(v)) / 6 // one past the last such character
	if first >= last || last > len(s) {
		return ""
	}
	return s[first:last]
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

// Step redacts a step's result in place.
func (r *Redactor) Step(s *StepResult) {
	if r == nil || s == nil {
		return
	}
	s.Output = r.String(s.Output)
	s.Error = r.String(s.Error)
	s.Fields = r.Map(s.Fields)
}

// Run redacts a run record in place before it is stored.
func (r *Redactor) Run(run *Run) {
	if r == nil {
		return
	}
	for _, s := range run.Steps {
		r.Step(s)
	}
	run.Prompt = r.String(run.Prompt)
	run.Response = r.String(run.Response)
	run.Error = r.String(run.Error)
	run.Reason = r.String(run.Reason)
	if len(run.ToolCalls) > 0 {
		run.ToolCalls = []byte(r.String(string(run.ToolCalls)))
	}
	for i := range run.Tools {
		u := &run.Tools[i]
		u.Arguments, u.AmendedArguments = r.String(u.Arguments), r.String(u.AmendedArguments)
		u.Result, u.Error = r.String(u.Result), r.String(u.Error)
	}
	for i, n := range run.Notes {
		run.Notes[i] = r.String(n)
	}
	if len(run.Event) > 0 {
		run.Event = []byte(r.String(string(run.Event)))
	}
}

// Writer returns a writer that redacts what is written to it before
// passing it on to w, so that what w keeps (a capped buffer) never holds
// a piece of a secret. It holds back at most the length of the longest
// form of a secret, until more is written or it is closed; Close writes
// what it holds and does not close w. Write and Close may be called from
// different goroutines. With a nil Redactor it returns w as it is.
func (r *Redactor) Writer(w io.Writer) io.WriteCloser {
	if r == nil {
		return nopCloser{w}
	}
	return &redactWriter{r: r, w: w}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

type redactWriter struct {
	r   *Redactor
	w   io.Writer
	mu  sync.Mutex
	buf []byte
	out strings.Builder
}

// Write never fails: what w does with the text is w's business.
func (rw *redactWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.buf = append(rw.buf, p...)
	rw.flush(false)
	return len(p), nil
}

func (rw *redactWriter) Close() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.flush(true)
	return nil
}

func (rw *redactWriter) flush(final bool) {
	if len(rw.buf) == 0 {
		return
	}
	rw.out.Reset()
	n := rw.r.redact(string(rw.buf), final, &rw.out)
	rw.buf = append(rw.buf[:0], rw.buf[n:]...)
	if rw.out.Len() > 0 {
		_, _ = io.WriteString(rw.w, rw.out.String())
	}
}
