package engine

import (
	"errors"
	"slices"
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

// MaxTraceLinks is how many traces of the triggers coalesced into a
// pending run a run keeps (TraceLinks.Parents); the rest are counted
// (TraceLinks.Dropped).
const MaxTraceLinks = 32

// TraceLinks are the traces of the triggers coalesced into a pending run
// (overlap: queue) other than the one the run continues
// (Run.TraceParent): its trace links to each. Parents holds each at most
// once, and at most MaxTraceLinks; Dropped counts those past it. They are
// stored with the run (both stores), so a run started after a restart or
// on another node links to them too.
type TraceLinks struct {
	Parents []TraceParent `json:"parents,omitempty"`
	Dropped int           `json:"dropped,omitempty"`
}

// IsZero reports whether l links to nothing.
func (l TraceLinks) IsZero() bool { return len(l.Parents) == 0 && l.Dropped == 0 }

// linkCoalesced records the trace parent tp of a trigger coalesced into
// r: none, r's own and one r links to already add nothing.
func (r *Run) linkCoalesced(tp TraceParent) {
	if tp == "" || tp == r.TraceParent || slices.Contains(r.TraceLinks.Parents, tp) {
		return
	}
	if len(r.TraceLinks.Parents) >= MaxTraceLinks {
		r.TraceLinks.Dropped++
		return
	}
	r.TraceLinks.Parents = append(r.TraceLinks.Parents, tp)
}
