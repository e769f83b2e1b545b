package human

import (
	"fmt"
	"strings"
	"time"
)

// Exact writes a configured duration in words, exactly, without the zero
// units Go's Duration.String adds: 10m (not 10m0s), 1h, 1h30s, 90ms,
// 1.5s. It is for durations a person wrote (timeouts, intervals), shown
// back as written.
func Exact(d time.Duration) string {
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

// Duration writes a measured duration in words, rounded to what a person
// reads: 0s, 250µs, 340ms, 1.2s, 42s, 3m5s, 2h14m. The CLI and the dashboard show
// every elapsed time, run length and step length with it.
func Duration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d < time.Millisecond:
		s = Exact(d.Round(time.Microsecond))
	case d < time.Second:
		s = Exact(d.Round(time.Millisecond))
	case d < 10*time.Second:
		s = Exact(d.Round(100 * time.Millisecond))
	case d < time.Hour:
		s = Exact(d.Round(time.Second))
	default:
		s = Exact(d.Round(time.Minute))
	}
	if neg {
		return "-" + s
	}
	return s
}

// Relative writes an offset from now: "now" within a second, else "in 5m"
// or "3h10m ago" (Duration's words, to the second below a minute and to
// the minute above).
func Relative(d time.Duration) string {
	past := d < 0
	if past {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		s = Duration(d.Round(time.Second))
	default:
		s = Duration(d.Round(time.Minute))
	}
	if past {
		return s + " ago"
	}
	return "in " + s
}

// Size writes a number of bytes with binary units: 512 B, 1.5 KiB,
// 20.0 MiB, 3.2 GiB.
func Size(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	neg := n < 0
	u := uint64(n)
	if neg {
		u = uint64(-n)
	}
	div, exp := uint64(unit), 0
	for m := u / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	s := fmt.Sprintf("%.1f %ciB", float64(u)/float64(div), "KMGTPE"[exp])
	if neg {
		return "-" + s
	}
	return s
}
