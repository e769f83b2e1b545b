package main

import (
	"time"

	"github.com/hookd/hookd/engine"
)

// timeLayout is the one way hookd shows a time on screen: local time
// with its zone. JSON carries RFC 3339.
const timeLayout = "2006-01-02 15:04:05 MST"

// timeText shows t in local time with its zone.
func timeText(t time.Time) string { return t.Local().Format(timeLayout) }

// errorText is what a run's error adds to its reason on screen: nothing
// when a failing step's error is the reason itself.
func errorText(r *engine.Run) string {
	if r.Error == r.Reason {
		return ""
	}
	return r.Error
}
