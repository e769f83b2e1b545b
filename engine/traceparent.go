package engine

import (
	"crypto/sha256"
	"encoding/hex"
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

// RunTraceIDs are the trace id and the root span id derived from a run's
// id: its span's id always, its trace's when it continues no caller's
// trace. Package tracing gives a run's root span these ids, so a run
// that links to another (a retry to the first of its chain, a run to the
// run that started it) knows that one's span without looking it up.
func RunTraceIDs(id string) (trace [16]byte, span [8]byte) {
	sum := sha256.Sum256([]byte("hookd run " + id))
	copy(trace[:], sum[:16])
	copy(span[:], sum[16:24])
	return trace, span
}

// RunSpan is the traceparent of the span of the run with this id that
// continues the caller's trace tp ("" for none): tp's trace and flags, or
// the trace derived from the id, sampled; and the span id derived from
// the id (RunTraceIDs). It is what the run's processes get as
// $TRACEPARENT, and what the runs it starts link to.
func RunSpan(id string, tp TraceParent) TraceParent {
	tid, sid := RunTraceIDs(id)
	trace, flags := hex.EncodeToString(tid[:]), "01"
	if t, _ := tp.IDs(); t != "" {
		trace, flags = t, string(tp[len(tp)-2:])
	}
	return TraceParent("00-" + trace + "-" + hex.EncodeToString(sid[:]) + "-" + flags)
}

// Span is the traceparent of r's span (RunSpan).
func (r *Run) Span() TraceParent { return RunSpan(r.ID, r.TraceParent) }

// MaxTraceLinks is how many traces of the triggers coalesced into a
// pending run a run keeps (TraceLinks.Parents); the rest are counted
// (TraceLinks.Dropped).
const MaxTraceLinks = 32

// TraceLinks are the spans a run's trace links to, other than the
// caller's span it continues (Run.TraceParent): StartedBy, the span of
// the run that started it (RunSpan: a model's fire_hook, an event the run
// or its steps published, a hook.run.* event it caused), and Parents, the
// traces of the triggers coalesced into a pending run (overlap: queue).
// Parents holds each at most once, and at most MaxTraceLinks; Dropped
// counts those past it. They are stored with the run (both stores), so a
// run started after a restart or on another node links to them too.
type TraceLinks struct {
	StartedBy TraceParent   `json:"started_by,omitempty"`
	Parents   []TraceParent `json:"parents,omitempty"`
	Dropped   int           `json:"dropped,omitempty"`
}

// IsZero reports whether l links to nothing.
func (l TraceLinks) IsZero() bool { return l.StartedBy == "" && len(l.Parents) == 0 && l.Dropped == 0 }

// traceOf sets the trace context of r, a run a trigger starts: the
// caller's trace tp it continues, or else, when a run started it, that
// run's span (link) it links to. A caller's explicit traceparent wins:
// a step's `hookd emit` passes its run's span as one ($TRACEPARENT), and
// the run it starts is then a child of that span rather than linked.
func (r *Run) traceOf(tp, link TraceParent) {
	r.TraceParent = tp
	if tp == "" {
		r.TraceLinks.StartedBy = link
	}
}

// linkCoalesced records the trace parent tp of a trigger coalesced into
// r (or, for a trigger a run caused, that run's span): none, r's own and
// one r links to already add nothing.
func (r *Run) linkCoalesced(tp TraceParent) {
	if tp == "" || tp == r.TraceParent || tp == r.TraceLinks.StartedBy || slices.Contains(r.TraceLinks.Parents, tp) {
		return
	}
	if len(r.TraceLinks.Parents) >= MaxTraceLinks {
		r.TraceLinks.Dropped++
		return
	}
	r.TraceLinks.Parents = append(r.TraceLinks.Parents, tp)
}
