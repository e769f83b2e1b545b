package config

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// plainTag is yaml.v3's tag for the plain scalar n, which has no tag
// yet: what n.ShortTag answers, which runs yaml.v3's resolve. Most
// values of a hook file are keys, words, commands and durations that
// resolve can only call strings, and plainTag says so without it
// (resolve looks the value up in a map, and for "30s" tries a timestamp,
// two integer parses and a regular expression); every other value is
// left to ShortTag. What it decides alone, from resolve's own rules:
//
//   - a value whose first byte is none of resolve's hints (a sign, a
//     digit, '.', or the first letters of true, false, null and ~):
//     resolve returns !!str at once;
//   - a value that starts like a word of resolve's map (true, False,
//     NULL, ~, ...): it is that word's tag, or !!str;
//   - a value that starts with a sign, a digit or '.', is none of the
//     map's words that start so (.nan, -.Inf, ...: they hold a '.' and are
//     at most five bytes long) and holds a byte that no integer (decimal,
//     0x, 0o, 0b, underscores), float or timestamp resolve accepts can
//     hold: all its parses fail and it returns !!str.
//
// TestPlainTagMatchesYAMLv3 compares plainTag with ShortTag on every
// string of up to three bytes over the bytes that matter, on resolve's
// words and their near misses, and on random longer strings.
func plainTag(n *yaml.Node) string {
	v := n.Value
	if v == "" {
		return n.ShortTag()
	}
	switch c := v[0]; {
	case c == '+' || c == '-' || c == '.' || '0' <= c && c <= '9':
		if len(v) <= len("-.inf") && strings.IndexByte(v, '.') >= 0 {
			break // it may be one of the map's words
		}
		for i := 1; i < len(v); i++ {
			if !numericByte[v[i]] {
				return "!!str"
			}
		}
	case c == 'y' || c == 'Y' || c == 'n' || c == 'N' || c == 't' || c == 'T' ||
		c == 'f' || c == 'F' || c == 'o' || c == 'O' || c == '~':
		switch v {
		case "true", "True", "TRUE", "false", "False", "FALSE":
			return "!!bool"
		case "null", "Null", "NULL", "~":
			return "!!null"
		}
		return "!!str"
	default:
		return "!!str"
	}
	return n.ShortTag()
}

// numericByte holds the bytes a value resolve may read as a number or a
// timestamp can hold past its first: digits, hexadecimal letters, the
// base prefixes' x, o and b, '_' (dropped before parsing), signs, '.' and
// the exponent's e, and a timestamp's '-', ':', 'T', 't', ' ', 'Z', '+',
// ',' (a fraction's separator time.Parse accepts) and, to be generous,
// 'z'.
var numericByte = func() (t [256]bool) {
	for _, c := range "0123456789abcdefABCDEFxXoObB_+-.:, tTzZ" {
		t[c] = true
	}
	return t
}()
