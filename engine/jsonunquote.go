package engine

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// quotedText is a JSON string decoded with one allocation: encoding/json
// unquotes a string into a buffer and copies that into the string, two
// megabytes for a step's megabyte of output read back (a run's record,
// the API's answer). It decodes as encoding/json does: escapes, invalid
// UTF-8 and unpaired surrogates as U+FFFD; null leaves it as it is.
type quotedText string

func (t *quotedText) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	s, ok := unquoteJSON(b)
	if !ok {
		return fmt.Errorf("json: cannot unmarshal %.40q into a string", b)
	}
	*t = quotedText(s)
	return nil
}

// unquoteJSON decodes the JSON string literal q (quotes included) into a
// string that owns the one buffer it was decoded into.
func unquoteJSON(q []byte) (string, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", false
	}
	q = q[1 : len(q)-1]
	out := make([]byte, 0, len(q))
	for i := 0; i < len(q); {
		switch c := q[i]; {
		case c == '\\':
			if i+1 >= len(q) {
				return "", false
			}
			switch e := q[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := readHex4(q[i+2:])
				if !ok {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					r2, ok := rune(0), false
					if i+1 < len(q) && q[i] == '\\' && q[i+1] == 'u' {
						r2, ok = readHex4(q[i+2:])
					}
					if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
						r, i = dec, i+6
					} else {
						r = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, r)
				continue
			default:
				return "", false
			}
			i += 2
		case c < 0x20 || c == '"':
			return "", false
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(q[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, q[i:i+size]...)
			}
			i += size
		}
	}
	return unsafe.String(unsafe.SliceData(out), len(out)), true
}

// readHex4 reads the four hex digits of a \u escape.
func readHex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
