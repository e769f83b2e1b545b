// Package textsafe decides which characters of text that comes from
// events, commands and models hookd shows escaped, so that the CLI
// (a terminal) and the dashboard (a browser) show the same thing.
package textsafe

import (
	"fmt"
	"unicode/utf8"
)

// Escaped reports whether r is shown as its \uXXXX escape: each C0
// control but newline and tab, DEL, each C1 control, and the
// bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069),
// which reorder what a line shows (an "exe.txt" that reads "txt.exe").
func Escaped(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Plain reports whether c is a byte written as it is without decoding:
// printable ASCII, newline and tab.
func Plain(c byte) bool { return c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' }

// Append appends src to dst with each Escaped rune written as \uXXXX and
// each byte that is not UTF-8 as \xXX.
func Append(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		c := src[i]
		if Plain(c) {
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(src[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			dst = fmt.Appendf(dst, `\x%02x`, c)
		case Escaped(r):
			dst = fmt.Appendf(dst, `\u%04x`, r)
		default:
			dst = append(dst, src[i:i+n]...)
		}
		i += n
	}
	return dst
}

// Clean reports whether Append would copy b unchanged.
func Clean(b []byte) bool {
	for i := 0; i < len(b); {
		if Plain(b[i]) {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 || Escaped(r) {
			return false
		}
		i += n
	}
	return true
}
