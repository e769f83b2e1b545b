package engine

import (
	"strings"
	"time"
)

// DurationText writes a configured duration in words, exactly, without
// the zero units Go's Duration.String adds: 10m (not 10m0s), 1h, 1h30s,
// 90ms, 1.5s.
func DurationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	if i := strings.Index(s, "h0m"); i >= 0 {
		s = s[:i+1] + s[i+3:] // 1h0m30s -> 1h30s
	}
	return s
}

// ElapsedText writes a measured duration in words, rounded to what a
// person reads: 0ms, 340ms, 1.2s, 42s, 3m5s, 2h14m.
func ElapsedText(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		s = DurationText(d.Round(time.Millisecond))
	case d < 10*time.Second:
		s = DurationText(d.Round(100 * time.Millisecond))
	case d < time.Hour:
		s = DurationText(d.Round(time.Second))
	default:
		s = DurationText(d.Round(time.Minute))
	}
	if neg {
		return "-" + s
	}
	return s
}
