package redact_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/redact"
)

// hostileSecrets are values that change when quoted, escaped or encoded.
var hostileSecrets = map[string]string{
	"PLAIN":     "sk-live-0123456789abcdef",
	"QUOTES":    `pa"ss'wo"rd-42`,
	"BACKSLASH": `C:\temp\n\x41-key`,
	"UNICODE":   "clé-🔑-Überschrift-ключ",
	"HTML":      "<a&b>=c+d/e?f g",
	"CONTROL":   "tab\there\nnewline\x01ctl",
	"U2028":     "line\u2028sep\u2029para",
}

func hostileEnviron() (names, environ []string) {
	for k, v := range hostileSecrets {
		names = append(names, k)
		environ = append(environ, k+"="+v)
	}
	return names, environ
}

// encodings are the ways a secret reaches a text in its escaped or
// encoded form.
var encodings = map[string]func(string) string{
	"raw": func(s string) string { return s },
	"json": func(s string) string {
		b, _ := json.Marshal(map[string]string{"token": s})
		return string(b)
	},
	"json-no-html": func(s string) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode([]string{s})
		return b.String()
	},
	"json-ascii": func(s string) string { // Python's json.dumps
		var b strings.Builder
		b.WriteString(`{"token": "`)
		for _, r := range s {
			switch {
			case r == '"' || r == '\\':
				b.WriteString(`\` + string(r))
			case r == '\n':
				b.WriteString(`\n`)
			case r == '\t':
				b.WriteString(`\t`)
			case r < 0x20 || r > 0x7e:
				if r > 0xFFFF {
					r -= 0x10000
					fmt.Fprintf(&b, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
				} else {
					fmt.Fprintf(&b, `\u%04x`, r)
				}
			default:
				b.WriteRune(r)
			}
		}
		b.WriteString(`"}`)
		return b.String()
	},
	"go-quote":       func(s string) string { return "value " + strconv.Quote(s) + " refused" },
	"go-quote-ascii": func(s string) string { return strconv.QuoteToASCII(s) },
	"query": func(s string) string {
		return "https://api.example/v1?x=1&token=" + url.QueryEscape(s) + "&y=2"
	},
	"path":          func(s string) string { return "https://api.example/v1/" + url.PathEscape(s) + "/items" },
	"query-values":  func(s string) string { return url.Values{"k": {s}, "a": {"b"}}.Encode() },
	"b64-std":       func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
	"b64-std-raw":   func(s string) string { return base64.RawStdEncoding.EncodeToString([]byte(s)) },
	"b64-url":       func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) },
	"b64-url-raw":   func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) },
	"basic-auth-0":  func(s string) string { return basicAuth("", s) },
	"basic-auth-1":  func(s string) string { return basicAuth("u", s) },
	"basic-auth-2":  func(s string) string { return basicAuth("us", s) },
	"basic-auth-3":  func(s string) string { return basicAuth("usr", s) },
	"b64-in-middle": func(s string) string { return base64.StdEncoding.EncodeToString([]byte("head " + s + " tail")) },
	// Wrapped in lines, as base64 (76 columns), openssl and PEM (64)
	// and base64 -w N write it, also with CRLF line ends.
	"b64-wrap-76":      func(s string) string { return wrap(base64.StdEncoding.EncodeToString([]byte(s)), 76, "\n") },
	"b64-wrap-64-crlf": func(s string) string { return wrap(base64.StdEncoding.EncodeToString([]byte("x:"+s)), 64, "\r\n") },
	"b64-wrap-1":       func(s string) string { return wrap(base64.StdEncoding.EncodeToString([]byte(s)), 1, "\n") },
	"b64-wrap-5-crlf":  func(s string) string { return wrap(base64.StdEncoding.EncodeToString([]byte("ab"+s)), 5, "\r\n") },
	"b64url-wrap-7":    func(s string) string { return wrap(base64.URLEncoding.EncodeToString([]byte("a"+s)), 7, "\n") },
	"pem": func(s string) string {
		return "-----BEGIN X-----\n" + wrap(base64.StdEncoding.EncodeToString([]byte("\x30\x82\x01"+s)), 64, "\n") + "-----END X-----\n"
	},
	"hex":         func(s string) string { return "0x" + hex.EncodeToString([]byte(s)) },
	"hex-upper":   func(s string) string { return strings.ToUpper(hex.EncodeToString([]byte(s))) },
	"hex-wrap-60": func(s string) string { return wrap(hex.EncodeToString([]byte("pre"+s)), 60, "\n") },
	"fold-3":      func(s string) string { return wrap(s, 3, "\n") },
	// JSON as encoders other than Go's write it: slashes as \/ (PHP,
	// Perl's escape_slash), ASCII-only without HTML escapes (Python's
	// json.dumps, jq -a), upper-case hex (.NET, Jackson, PHP's HEX_*).
	"json-slash": func(s string) string {
		b, _ := json.Marshal(s)
		return strings.ReplaceAll(string(b), "/", `\/`)
	},
	"json-python": func(s string) string { return pythonJSON(s, false) },
	"json-upper":  func(s string) string { return pythonJSON(s, true) },
}

// wrap cuts s into lines of n characters, each ended by eol.
func wrap(s string, n int, eol string) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n] + eol)
		s = s[n:]
	}
	b.WriteString(s + eol)
	return b.String()
}

// pythonJSON writes s as Python's json.dumps does (non-ASCII as \uxxxx,
// < > & / as they are), or, upper, as .NET's encoder does (upper-case
// hex, and < > & ' " + as \u00XX).
func pythonJSON(s string, upper bool) string {
	var b strings.Builder
	b.WriteString(`["`)
	u := func(r rune) {
		h := fmt.Sprintf("%04x", r)
		if upper {
			h = strings.ToUpper(h)
		}
		b.WriteString(`\u` + h)
	}
	for _, r := range s {
		switch {
		case upper && strings.ContainsRune(`<>&'"+`, r):
			u(r)
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r > 0x7e:
			if r > 0xFFFF {
				r -= 0x10000
				u(0xD800 + (r >> 10))
				u(0xDC00 + (r & 0x3FF))
			} else {
				u(r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString(`"]`)
	return b.String()
}

func basicAuth(user, pass string) string {
	return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass)) + "\n"
}

// leaks reports a piece of what the encoding made of secret that is
// still in out: the whole encoded value, or for the base64 forms any
// run of 8 characters of the secret's own encoding.
func leaks(out, secret, encoded string) string {
	if strings.Contains(out, secret) {
		return secret
	}
	// A wrapped encoding leaks whatever its lines: look at them joined.
	out = strings.NewReplacer("\r", "", "\n", "").Replace(out)
	encoded = strings.NewReplacer("\r", "", "\n", "").Replace(encoded)
	if h := hex.EncodeToString([]byte(secret)); len(secret) >= 4 && (strings.Contains(out, h[:8]) || strings.Contains(strings.ToLower(out), h[len(h)-8:])) {
		return "hex " + h
	}
	for _, f := range []string{
		base64.StdEncoding.EncodeToString([]byte(secret)), base64.URLEncoding.EncodeToString([]byte(secret)),
		url.QueryEscape(secret), url.PathEscape(secret), strconv.Quote(secret),
	} {
		if strings.Contains(out, f) {
			return f
		}
	}
	// An encoding inside a longer one: any 8 characters of the secret's
	// stable base64 core at the offset it was placed.
	for off := range 3 {
		pad := strings.Repeat("\x00", off)
		enc := base64.RawStdEncoding.EncodeToString([]byte(pad + secret))
		core := enc[(8*off+5)/6 : 8*(off+len(secret))/6]
		for i := 0; i+8 <= len(core); i++ {
			if strings.Contains(out, core[i:i+8]) && strings.Contains(encoded, core[i:i+8]) {
				return core[i : i+8]
			}
		}
	}
	return ""
}

func TestRedactorEncodedForms(t *testing.T) {
	names, environ := hostileEnviron()
	red := redact.New(names, environ)
	for name, secret := range hostileSecrets {
		for encName, enc := range encodings {
			if encName == "fold-3" && strings.ContainsAny(secret, "\r\n") {
				continue // a value with a line break of its own is found unwrapped only
			}
			in := enc(secret)
			out := red.String(in)
			if l := leaks(out, secret, in); l != "" {
				t.Errorf("%s as %s: %q leaks %q", name, encName, out, l)
			}
			if !strings.Contains(out, "[REDACTED:"+name+"]") {
				t.Errorf("%s as %s: %q has no [REDACTED:%s]", name, encName, out, name)
			}
		}
	}
}

func TestRedactorKeepsOtherText(t *testing.T) {
	red := redact.New([]string{"TOKEN", "SHORT", "UNSET"}, []string{"TOKEN=hunter2hunter2", "SHORT=abc", "OTHER=x"})
	for _, s := range []string{"", "abc is short and not redacted", "nothing here", "hunter2hunter", "aHVudGVyMmh1bnRlc"} {
		if got := red.String(s); got != s {
			t.Errorf("String(%q) = %q, want it unchanged", s, got)
		}
	}
	if got := red.String("a hunter2hunter2 b hunter2hunter2"); got != "a [REDACTED:TOKEN] b [REDACTED:TOKEN]" {
		t.Errorf("got %q", got)
	}
	var nilRed *redact.Redactor
	if got := nilRed.String("hunter2hunter2"); got != "hunter2hunter2" {
		t.Errorf("nil redactor changed text: %q", got)
	}
	if redact.New([]string{"SHORT"}, []string{"SHORT=abc"}) != nil {
		t.Error("a redactor of values shorter than MinSecretLen should be nil")
	}
}

// The streaming writer gives the same text as String, however the text
// is cut into writes: a secret split across writes is still replaced.
func TestRedactorWriterMatchesString(t *testing.T) {
	names, environ := hostileEnviron()
	red := redact.New(names, environ)
	var text strings.Builder
	for _, name := range []string{"PLAIN", "QUOTES", "UNICODE", "HTML"} {
		for _, encName := range []string{"raw", "json", "query", "b64-std", "basic-auth-1", "b64-wrap-1",
			"b64-wrap-5-crlf", "pem", "hex-wrap-60", "json-slash", "fold-3"} {
			text.WriteString("line: " + encodings[encName](hostileSecrets[name]) + " end\n")
		}
	}
	in := text.String()
	want := red.String(in)
	for _, chunk := range []int{1, 2, 3, 5, 7, 13, 31, 64, 1000, len(in)} {
		var out bytes.Buffer
		w := red.Writer(&out)
		for i := 0; i < len(in); i += chunk {
			_, _ = w.Write([]byte(in[i:min(i+chunk, len(in))]))
		}
		_ = w.Close()
		if out.String() != want {
			t.Errorf("chunks of %d: writer gave\n%q\nString gave\n%q", chunk, out.String(), want)
		}
	}
}

// TestRedactorWriterChunkings: for texts of wrapped encodings and line
// breaks in every place, cut into writes at random, the writer gives
// what String gives.
func TestRedactorWriterChunkings(t *testing.T) {
	const secret = "ab/cd+ef?gh=ij"
	red := redact.New([]string{"K"}, []string{"K=" + secret})
	rng := rand.New(rand.NewPCG(1, 2))
	breaks := []string{"\n", "\r\n", "\r", "\n\n", " "}
	for range 300 {
		// An encoding of the secret in a random frame, wrapped at a
		// random width, with stray line breaks around it.
		var text strings.Builder
		for range 1 + rng.IntN(4) {
			frame := strings.Repeat("z", rng.IntN(5))
			var enc string
			switch rng.IntN(4) {
			case 0:
				enc = base64.StdEncoding.EncodeToString([]byte(frame + secret))
			case 1:
				enc = base64.RawURLEncoding.EncodeToString([]byte(frame + secret))
			case 2:
				enc = hex.EncodeToString([]byte(frame + secret))
			default:
				enc = frame + secret
			}
			text.WriteString(strings.Repeat(breaks[rng.IntN(len(breaks))], rng.IntN(3)))
			text.WriteString(wrap(enc, 1+rng.IntN(20), breaks[rng.IntN(3)]))
		}
		in := text.String()
		want := red.String(in)
		if !strings.Contains(want, "[REDACTED:K]") {
			t.Fatalf("String(%q) = %q: nothing redacted", in, want)
		}
		var out bytes.Buffer
		w := red.Writer(&out)
		for i := 0; i < len(in); {
			n := min(len(in)-i, 1+rng.IntN(40))
			_, _ = w.Write([]byte(in[i : i+n]))
			i += n
		}
		_ = w.Close()
		if out.String() != want {
			t.Fatalf("writer gave\n%q\nString gave\n%q\nfor %q", out.String(), want, in)
		}
	}
}

// TestRedactorWriterHoldsBackSpan: whatever the text — a flood of line
// breaks, a long run of base64 characters that could begin a wrapped
// secret — the writer holds back no more than Span bytes, so its memory
// does not grow with the text.
func TestRedactorWriterHoldsBackSpan(t *testing.T) {
	const secret = "hunter2/hunter2"
	red := redact.New([]string{"K"}, []string{"K=" + secret})
	enc := base64.StdEncoding.EncodeToString([]byte(secret))
	for name, chunk := range map[string]string{
		"line breaks":      strings.Repeat("\n", 1000),
		"crlf":             strings.Repeat("\r\n", 500),
		"wrapped prefixes": strings.Repeat(wrap(enc[:len(enc)-3], 1, "\n")+"\n", 20),
		"base64 chars":     strings.Repeat(enc[:len(enc)-2], 50),
	} {
		var out bytes.Buffer
		w := red.Writer(&out)
		written := 0
		for range 200 {
			_, _ = w.Write([]byte(chunk))
			written += len(chunk)
			if held := written - out.Len(); held > red.Span() {
				t.Fatalf("%s: %d bytes written, %d passed on: %d held back, Span %d", name, written, out.Len(), held, red.Span())
			}
		}
		_ = w.Close()
		if out.Len() != written {
			t.Errorf("%s: %d bytes written, %d passed on after Close", name, written, out.Len())
		}
	}
}

func TestRedactorValue(t *testing.T) {
	red := redact.New([]string{"K"}, []string{"K=s3cr3t-value"})
	v := red.Value(map[string]any{"a": []any{"x s3cr3t-value", 3.0}, "s3cr3t-value": json.RawMessage(`"s3cr3t-value"`)})
	b, _ := json.Marshal(v)
	if strings.Contains(string(b), "s3cr3t") {
		t.Errorf("Value left the secret: %s", b)
	}
}

func BenchmarkRedactorWriter(b *testing.B) {
	names, environ := hostileEnviron()
	red := redact.New(names, environ)
	chunk := bytes.Repeat([]byte("ordinary build output line without secrets 0123456789\n"), 80) // ~4 KiB
	b.SetBytes(int64(len(chunk)))
	w := red.Writer(io.Discard)
	for b.Loop() {
		_, _ = w.Write(chunk)
	}
	_ = w.Close()
}

func TestRedactorTypedValue(t *testing.T) {
	red := redact.New([]string{"K"}, []string{"K=s3cr3t-value"})
	type failure struct{ Name, Message string }
	v := red.Value(map[string]any{"failures": []any{failure{"TestX", `token "s3cr3t-value"`}}, "n": 3})
	b, _ := json.Marshal(v)
	if strings.Contains(string(b), "s3cr3t") || !strings.Contains(string(b), "[REDACTED:K]") || !strings.Contains(string(b), `"TestX"`) {
		t.Errorf("typed value: %s", b)
	}
	plain := failure{"TestY", "fine"}
	if got := red.Value(plain); got != plain {
		t.Errorf("a value without a secret changed: %#v", got)
	}
}

func TestRedactorTrimCutStart(t *testing.T) {
	red := redact.New([]string{"K"}, []string{"K=s3cr3t-value-xyz"})
	for in, want := range map[string]string{
		"-value-xyz and more": " and more",           // the end of the secret, cut from its start
		"xyz and more":        "xyz and more",        // shorter than MinSecretLen: kept
		"s3cr3t-value-xyz ok": "s3cr3t-value-xyz ok", // whole: String's job, not a cut
		"nothing":             "nothing",
	} {
		if got := red.TrimCutStart(in); got != want {
			t.Errorf("TrimCutStart(%q) = %q, want %q", in, got, want)
		}
	}
	if red.Span() < len("s3cr3t-value-xyz") {
		t.Errorf("Span %d is shorter than the secret", red.Span())
	}
	// The end of a wrapped encoding, cut at its start or just before a
	// line break.
	enc := base64.StdEncoding.EncodeToString([]byte("s3cr3t-value-xyz"))
	for in, want := range map[string]string{
		enc[3:7] + "\n" + enc[7:11] + "\n" + enc[11:] + "\nnext":          "\nnext",
		"\r\n" + wrap(enc[6:], 3, "\r\n") + "next":                        "\r\nnext",
		wrap(hex.EncodeToString([]byte("s3cr3t-value-xyz"))[9:], 7, "\n"): "\n",
		"\n\n" + enc[4:]: "\n\n" + enc[4:], // two line breaks: not one wrapped text
	} {
		if got := red.TrimCutStart(in); got != want {
			t.Errorf("TrimCutStart(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkRedactorWriterTypical: a hook's token and hookd's two
// credentials, plain ASCII values, over ordinary output.
func BenchmarkRedactorWriterTypical(b *testing.B) {
	red := redact.New([]string{"GITHUB_TOKEN", "OPENAI_API_KEY", "HOOKD_TOKEN"}, []string{
		"GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345",
		"OPENAI_API_KEY=sk-proj-0123456789abcdefghijklmnopqrstuv",
		"HOOKD_TOKEN=f3a9c1e07b2d4c8e9a1b3c5d7e9f1a2b",
	})
	chunk := bytes.Repeat([]byte("ordinary build output line without secrets 0123456789\n"), 80) // ~4 KiB
	b.SetBytes(int64(len(chunk)))
	w := red.Writer(io.Discard)
	for b.Loop() {
		_, _ = w.Write(chunk)
	}
	_ = w.Close()
}

// FuzzRedactorWriter: however a text is cut into writes, the writer
// gives what String gives, and neither leaves a secret whole.
func FuzzRedactorWriter(f *testing.F) {
	f.Add("token=hunter2hunter2 and aHVudGVyMmh1bnRlcjI= end", uint8(3))
	f.Add("hunter2hunter2hunter2hunter2", uint8(1))
	f.Add(`"q\"uo\\te" hunt`, uint8(7))
	f.Add("hunter2hunte", uint8(2))
	f.Add("x aHVudGVy\nMmh1bnRl\r\ncjI= y\nhunter2\nhunter2\n", uint8(5)) // wrapped base64, and a value across lines
	f.Add("aHVu\ndGVy\r\nMmh1\nbnRl\ncjI=\n", uint8(5))
	f.Add("q\\\\\\/uo\n\nwrap\r\nL3Fc\n\ndW8=", uint8(4))
	f.Add("6875\r\n6e74\n657232\n", uint8(1))
	red := redact.New([]string{"A", "B", "C", "D"}, []string{"A=hunter2hunter2", "B=hunter2", `C=q"uo\te`, "D=q\\/uo\nwrap"})
	f.Fuzz(func(t *testing.T, text string, chunk uint8) {
		want := red.String(text)
		n := int(chunk%64) + 1
		var out bytes.Buffer
		w := red.Writer(&out)
		for i := 0; i < len(text); i += n {
			_, _ = w.Write([]byte(text[i:min(i+n, len(text))]))
		}
		_ = w.Close()
		if out.String() != want {
			t.Fatalf("chunks of %d: writer %q, String %q", n, out.String(), want)
		}
		for _, s := range []string{"hunter2hunter2", `q"uo\te`} {
			if strings.Contains(want, s) {
				t.Fatalf("String(%q) = %q keeps %q", text, want, s)
			}
		}
	})
}

// TestRedactorShellAndPythonQuoting runs real bash and python3 on
// secrets with quotes, backslashes and spaces and redacts what they
// print: bash's printf %q and declare -p (also $'...' for control
// characters and non-ASCII bytes, in a UTF-8 and the C locale), bash -x
// tracing, and Python's repr (single- and double-quoted, with \x, \u and
// \U escapes), ascii() and shlex.quote. No piece of a secret may remain.
func TestRedactorShellAndPythonQuoting(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{"bash", "python3"} {
		testtool.Need(t, bin)
	}
	secrets := map[string]string{
		"S":     `Sx\q"9'Zz it`,
		"TILDE": `~Tq#Wv it's`,   // a leading ~, and ' without " (repr uses double quotes)
		"TAB":   "Tb\tKq'Jw\\Yx", // repr escapes the tab; printf %q writes $'...'
		// Control characters: bash's $'...' (\001, \E, \177), repr's \x01.
		"CTRL": "Cq\x01Jw'Yx\\Zk\x1bRv\x7fPz\nQj",
		// Non-ASCII: bash prints octal bytes in the C locale and for
		// U+0085 and U+2028; repr escapes what Python does not print.
		"UNI": "Uq\u2028Wv\u00a0Hk\u200bKz\U000e0001Xm\u0085Üy\u00e9Gp",
	}
	var names, environ []string
	for k, v := range secrets {
		names = append(names, k)
		environ = append(environ, k+"="+v)
	}
	red := redact.New(names, environ)
	locale := "LC_ALL=C"
	run := func(env, name string, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "V="+env, locale, "PYTHONIOENCODING=utf-8")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %q: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	for k, v := range secrets {
		outputs := map[string]string{}
		// Python's output does not depend on the locale (one run: its
		// start-up is slow on a loaded machine).
		locale = "LC_ALL=C.UTF-8"
		outputs["python-repr-ascii-shlex"] = run(v, "python3", "-c", `import os, shlex; v = os.environ["V"]; print(repr(v), [v], {"k": v}); print(ascii(v)); print("cmd", shlex.quote(v))`)
		for _, locale = range []string{"LC_ALL=C.UTF-8", "LC_ALL=C"} {
			outputs[locale+" bash-xtrace"] = run(v, "bash", "-xc", `: "$V"; echo done`)
			outputs[locale+" bash-printf-q"] = run(v, "bash", "-c", `printf 'token=%q\n' "$V"; printf '%q\n' "x$V"`)
			outputs[locale+" bash-declare-p"] = run(v, "bash", "-c", `declare -p V; s=$V; declare -p s`)
		}
		for how, out := range outputs {
			got := red.String(out)
			if !strings.Contains(got, "[REDACTED:"+k+"]") {
				t.Errorf("%s as %s: %q became %q, with no [REDACTED:%s]", k, how, out, got, k)
			}
			for _, piece := range []string{v[:2], v[len(v)-2:]} {
				if strings.Contains(got, piece) {
					t.Errorf("%s as %s: %q became %q, which still holds %q", k, how, out, got, piece)
				}
			}
		}
	}
	// The exact strings of issue 10.
	one := redact.New([]string{"S"}, []string{"S=" + secrets["S"]})
	for _, in := range []string{`Sx\\q\"9\'Zz\ it`, `'Sx\q"9'\''Zz it'`, `'Sx\\q"9\'Zz it'`} {
		if got := one.String("v=" + in + "."); got != "v=[REDACTED:S]." && got != "v='[REDACTED:S]'." {
			t.Errorf("%s became %q", in, got)
		}
	}
}
