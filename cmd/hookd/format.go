package main

import (
	"time"
)

// timeLayout is the one way hookd shows a time on screen: local time
// with its zone. JSON carries RFC 3339.
const timeLayout = "2006-01-02 15:04:05 MST"

// timeText shows t in local time with its zone.
func timeText(t time.Time) string { return t.Local().Format(timeLayout) }
