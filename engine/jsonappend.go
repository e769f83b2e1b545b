package engine

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Every run stores a few events (hook.run.*, hook.step.*) whose payloads
// are maps of strings and numbers, and its steps' results: encoding/json
// spends most of its time there on reflection (a copy of every map key
// and value). The appenders here write the bytes json.Marshal writes for
// the values payloads hold, and hand any other value to encoding/json;
// TestMarshalDataMatchesEncodingJSON and FuzzMarshalData hold them to it.

// maxDataDepth is how deep MarshalData nests maps and lists itself; a
// deeper value goes to encoding/json whole, which also tells a cycle.
const maxDataDepth = 32

// MarshalData returns m encoded as json.Marshal encodes it, byte for
// byte, error for error.
func MarshalData(m map[string]any) ([]byte, error) {
	return appendJSONValue(make([]byte, 0, 64+64*len(m)), m, 0)
}

// appendJSONValue appends v to b as json.Marshal encodes it.
func appendJSONValue(b []byte, v any, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return AppendJSONString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case float64:
		if !math.IsInf(x, 0) && !math.IsNaN(x) {
			return appendJSONFloat(b, x), nil
		}
	case map[string]any:
		if x == nil {
			return append(b, "null"...), nil
		}
		if depth < maxDataDepth {
			return appendJSONMap(b, x, depth+1)
		}
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		if depth < maxDataDepth {
			b = append(b, '[')
			for i, e := range x {
				if i > 0 {
					b = append(b, ',')
				}
				var err error
				if b, err = appendJSONValue(b, e, depth+1); err != nil {
					return nil, err
				}
			}
			return append(b, ']'), nil
		}
	case []string:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, e)
		}
		return append(b, ']'), nil
	}
	// Anything else (other numbers, Marshalers, structs, NaN, a deep
	// or cyclic value), and the errors: encoding/json decides.
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}

// appendJSONMap appends m with its keys sorted, as encoding/json does.
func appendJSONMap(b []byte, m map[string]any, depth int) ([]byte, error) {
	var small [16]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendJSONValue(b, m[k], depth); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendJSONFloat appends a finite f as encoding/json does (the shortest
// form; an exponent below 1e-6 and from 1e21 on).
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 is written e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// AppendJSONString appends s quoted as encoding/json quotes it, byte for
// byte (its appendString, with HTML escaping: " \ < > & and control
// characters escaped, invalid UTF-8 as \ufffd, U+2028 and U+2029 as
// \u2028 and \u2029), straight onto b. encoding/json has no appender of
// its own: its Encoder quotes into a buffer of its own and copies that
// onto b, and that buffer, pooled between collections, was a fresh one
// for most of a soak's megabyte outputs (2.5 MB allocated to store 1 MB).
func AppendJSONString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
