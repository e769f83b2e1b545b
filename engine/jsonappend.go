package engine

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
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

// AppendJSONString appends s quoted as encoding/json quotes it: printable
// ASCII other than " \ < > & as it is, anything else through
// encoding/json itself: its Encoder writes the quoted string from its
// own (pooled) buffer straight onto b, where json.Marshal would return a
// copy of it first: for a step's megabyte of output, one megabyte less
// to allocate.
func AppendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			w := appendWriter{b: b}
			_ = json.NewEncoder(&w).Encode(s) // a string always encodes
			return w.b[:len(w.b)-1]           // less the line break Encode ends with
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendWriter appends what is written to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
