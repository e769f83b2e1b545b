package main

import (
	"time"

	"github.com/hookd/hookd/internal/human"
)

// timeLayout is the one way hookd shows a time on screen: local time
// with its zone. JSON carries RFC 3339.
const timeLayout = "2006-01-02 15:04:05 MST"

// timeText shows t in local time with its zone.
func timeText(t time.Time) string { return t.Local().Format(timeLayout) }

// relativeText shows t as an offset from now, as list's LAST does
// ("3h ago", "in 5m"): a table's time column on a terminal too narrow
// for the whole date. "" when t is zero.
func relativeText(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	return human.Relative(t.Sub(now))
}
