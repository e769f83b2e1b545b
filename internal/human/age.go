package human

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxDays bounds the days of an age: time.Duration ends at 292 years.
const maxDays = 100_000

// ParseAge parses an age: a Go duration ("12h", "90m"), whole days
// ("30d"), or whole days followed by a Go duration ("1d12h"). Negative
// days count the rest back too ("-1d12h" is -36h); callers refuse the
// signs they do not want.
func ParseAge(s string) (time.Duration, error) {
	v := s
	var days time.Duration
	if i := strings.IndexByte(v, 'd'); i > 0 {
		n, err := strconv.ParseInt(v[:i], 10, 32)
		if err != nil || n > maxDays || n < -maxDays {
			return 0, fmt.Errorf("bad age %q: want whole days from -%d to %d before the d", s, maxDays, maxDays)
		}
		days, v = time.Duration(n)*24*time.Hour, v[i+1:]
		if v == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("bad age %q: want a number with a unit, like 30d, 12h or 1d12h", s)
	}
	if days < 0 {
		return days - d, nil
	}
	return days + d, nil
}
