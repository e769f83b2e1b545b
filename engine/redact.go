package engine

import (
	"encoding/base64"
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
// quotes, escapes or encodes it — JSON and Go string escapes (also
// ASCII-only ones), shell quoting (printf %q's backslashes, bash's $'...'
// as printf %q and declare -p write a value with control characters,
// single quotes as bash -x and shlex.quote write them), Python's repr
// and ascii() (with \xhh, \uhhhh and \Uhhhhhhhh escapes),
// percent-encoding (query and path forms), base64 (standard and URL
// alphabets, padded and raw, also when the value sits inside a longer
// encoded text, and wrapped across lines at any column: redactwrap.go)
// and JSON that escapes / as \/. A secret transformed in any other way
// (reversed, split, hex-encoded, compressed) is not found.
//
// The engine builds one Redactor per run and applies it at every sink:
// step results as soon as a step ends (before later steps, the prompt or
// events see them), the event data a hook publishes, the prompt, tool
// results, the transcript and the run record. Command output is redacted
// as it streams, before it is capped (Writer), so a cut never leaves a
// fragment of a secret behind. The nil *Redactor redacts nothing.
type Redactor struct {
	pats   []redactPattern // longest first
	maxLen int             // length of the longest pattern
	span   int             // the longest text a pattern may take, line breaks inside included (wrapped)
	// wrapPats are the patterns made of base64 characters alone, which
	// a program may wrap across lines (wrapped), and wrapMin the length
	// of the shortest.
	wrapPats []redactPattern
	wrapMin  int
}

type redactPattern struct{ from, to string }

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
				pats = append(pats, redactPattern{f, to})
			}
		}
	}
	if len(pats) == 0 {
		return nil
	}
	// Longest first: at one position the longest form is replaced whole.
	sort.SliceStable(pats, func(i, j int) bool { return len(pats[i].from) > len(pats[j].from) })
	r := &Redactor{pats: pats, maxLen: len(pats[0].from), span: len(pats[0].from)}
	for _, p := range pats {
		if strings.IndexFunc(p.from, func(c rune) bool { return c >= utf8.RuneSelf || !isWrapChar(byte(c)) }) < 0 {
			r.wrapPats = append(r.wrapPats, p)
			r.wrapMin = len(p.from) // longest first: the last is the shortest
			// Wrapped at one column it takes a line break, "\r\n" at
			// most, after each of its characters but the last.
			r.span = max(r.span, 3*len(p.from)-2)
		}
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
	// JSON with every / escaped as \/ (PHP's json_encode, some Java
	// encoders): of the value, its JSON forms and its base64 forms.
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

// next finds the leftmost pattern in s at or after from, the longest at
// that position: its start, its pattern, and whether there is one.
func (r *Redactor) next(s string, from int, idx []int) (int, *redactPattern) {
	best, bp := -1, (*redactPattern)(nil)
	for i := range r.pats {
		if idx[i] < from && idx[i] != -1 {
			j := strings.Index(s[from:], r.pats[i].from)
			if j >= 0 {
				j += from
			}
			idx[i] = j
		}
		if j := idx[i]; j >= 0 && (best < 0 || j < best) {
			best, bp = j, &r.pats[i]
		}
	}
	return best, bp
}

// redact replaces what it can decide in s and returns the text up to
// where it decided, and how much of s that consumed. Unless final, a
// pattern that may still continue past the end of s is left undecided:
// the last span-1 bytes wait for more. A form wrapped across lines
// (wrapped) is replaced whole, its line breaks with it.
func (r *Redactor) redact(s string, final bool, out *strings.Builder) int {
	idx := make([]int, len(r.pats))
	for i := range idx {
		idx[i] = -2 // not searched yet
	}
	wrapped := r.wrapped(s)
	pos := 0
	for {
		start, p := r.next(s, pos, idx)
		end, to := 0, ""
		if p != nil {
			end, to = start+len(p.from), p.to
		}
		for len(wrapped) > 0 && wrapped[0].start < pos {
			wrapped = wrapped[1:]
		}
		if len(wrapped) > 0 {
			if w := wrapped[0]; p == nil || w.start < start || w.start == start && w.end > end {
				start, end, to = w.start, w.end, w.to
			}
		}
		if to == "" || (!final && start+r.span > len(s)) {
			break
		}
		out.WriteString(s[pos:start])
		out.WriteString(to)
		pos = end
	}
	end := len(s)
	if !final {
		end = max(pos, len(s)-(r.span-1))
	}
	out.WriteString(s[pos:end])
	return end
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

// Span is the length of the longest text the Redactor replaces, a form
// of a secret wrapped across lines included (0 for nil). A reader that keeps only the first N bytes of a text reads N+Span
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
// prefix of s, MinSecretLen bytes or more, that ends a form of a secret.
// It is for a text whose start was cut after redaction, where a secret
// across the cut can no longer be found whole.
func (r *Redactor) TrimCutStart(s string) string {
	if r == nil {
		return s
	}
	cut := 0
	for _, p := range r.pats {
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
