package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

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
