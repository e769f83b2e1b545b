package backoff

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Policy is an exponential backoff with jitter.
type Policy struct {
	Base time.Duration // the wait before the first retry
	Max  time.Duration // the longest wait: Base doubles up to it
	// Jitter is the fraction of a wait that jitter may take off, from 0
	// (none) to 1: 0.2 takes off up to a fifth, 0.5 up to half.
	Jitter float64
}

// Delay is the wait before retry n (1 for the first retry) with jitter j
// in [0, 1): Base·2^(n-1), at most Max, less j·Jitter of it.
func (p Policy) Delay(n int, j float64) time.Duration {
	d := p.Base
	for i := 1; i < n && d < p.Max; i++ {
		if d > p.Max/2 {
			d = p.Max // and no overflow
			break
		}
		d *= 2
	}
	d = min(d, p.Max)
	part := time.Duration(math.Round(float64(d) * p.Jitter))
	return d - time.Duration(float64(part)*j)
}

// RetryAfter reads how long the server that sent h asks to be left alone:
// Retry-After as delay-seconds (fractions are kept) or as an HTTP date
// (a date in the past is no wait), or retry-after-ms, which wins when both
// are sent. It reports false when h asks nothing it can read.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms >= 0 && ms < math.MaxInt64/float64(time.Millisecond) {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < math.MaxInt64/float64(time.Second) {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
