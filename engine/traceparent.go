package engine

import (
	"errors"
	"strings"
)

// TraceParent is a W3C Trace Context traceparent header value
// (00-TRACEID-PARENTID-FLAGS): the caller's trace an event or a fire
// continues. It comes from the API's traceparent header, or `hookd emit`
// and `hookd fire --traceparent` (or $TRACEPARENT) — never from an
// event's payload — and is stored with the event and its runs, so that a
// run started later (another node, a restart) continues the trace too.
type TraceParent string

// ParseTraceParent checks s as a traceparent: version 00, a 32-digit
// trace id and a 16-digit parent id in lowercase hex, neither all zeros,
// and two digits of flags. "" is no trace parent.
func ParseTraceParent(s string) (TraceParent, error) {
	if s == "" {
		return "", nil
	}
	p := strings.Split(s, "-")
	if len(p) != 4 || p[0] != "00" || !lowerHex(p[1], 32) || !lowerHex(p[2], 16) || !lowerHex(p[3], 2) ||
		strings.Trim(p[1], "0") == "" || strings.Trim(p[2], "0") == "" {
		return "", errors.New("traceparent must be 00-TRACEID-PARENTID-FLAGS (32, 16 and 2 lowercase hex digits; ids not all zeros), as W3C Trace Context writes it")
	}
	return TraceParent(s), nil
}

func lowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// IDs returns the trace id and the parent span id, as hex ("" for none).
func (t TraceParent) IDs() (trace, parent string) {
	p := strings.Split(string(t), "-")
	if len(p) != 4 {
		return "", ""
	}
	return p[1], p[2]
}
