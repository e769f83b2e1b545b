package triggers

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/robfig/cron/v3"

	"github.com/hookd/hookd/engine"
)

// cronParser accepts robfig/cron's syntax: five fields, an optional leading
// seconds field, and descriptors such as @daily.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// maxRepeats bounds how many wall-clock slots Next passes over because they
// already fired in the first pass through a repeated hour.
const maxRepeats = 1000

// cronSchedule fires at the wall-clock slots of a cron expression in one
// time zone, each slot at most once (see the package doc for the DST rule).
type cronSchedule struct {
	spec *cron.SpecSchedule // evaluated on wall-clock readings in UTC
	loc  *time.Location
}

func compileCron(t *engine.Trigger) (engine.Schedule, error) {
	s, err := parseCron(t.Cron, t.Timezone)
	if err != nil {
		return nil, err
	}
	t.Location = s.loc
	if len(t.CronSet) == 0 {
		return s, nil
	}
	u := cronUnion{s}
	for _, expr := range t.CronSet {
		c, err := parseCron(expr, t.Timezone)
		if err != nil {
			return nil, err
		}
		if c.loc.String() != s.loc.String() {
			return nil, fmt.Errorf("cron expressions %q and %q are in different time zones", t.Cron, expr)
		}
		u = append(u, c)
	}
	return u, nil
}

// cronUnion fires at the slots of each of its schedules; a slot two of
// them share fires once.
type cronUnion []*cronSchedule

// Next returns the earliest of the schedules' next slots after t.
func (u cronUnion) Next(t time.Time) time.Time {
	var next time.Time
	for _, c := range u {
		if n := c.Next(t); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return next
}

// parseCron compiles expr, which may start with CRON_TZ=Zone or TZ=Zone,
// in the zone tz (an IANA name; empty means the expression's zone, else
// the local zone).
func parseCron(expr, tz string) (*cronSchedule, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, errors.New("empty cron expression")
	}
	var zone string
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		if rest, ok := strings.CutPrefix(expr, prefix); ok {
			i := strings.IndexFunc(rest, unicode.IsSpace)
			if i < 0 {
				return nil, fmt.Errorf("cron expression %q: no schedule after %s", expr, prefix+rest)
			}
			zone, expr = rest[:i], strings.TrimSpace(rest[i:])
			if zone == "" {
				return nil, fmt.Errorf("cron expression: empty time zone after %s", prefix)
			}
			break
		}
	}
	if strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=") {
		return nil, fmt.Errorf("cron expression %q: more than one time zone prefix", expr)
	}
	if zone != "" && tz != "" && zone != tz {
		return nil, fmt.Errorf("cron expression: time zone %s conflicts with timezone %s", zone, tz)
	}
	if zone == "" {
		zone = tz
	}
	loc := time.Local
	if zone != "" {
		var err error
		if loc, err = LoadLocation(zone); err != nil {
			return nil, fmt.Errorf("time zone %q: %w", zone, err)
		}
	}

	if rest, ok := strings.CutPrefix(expr, "@every"); ok {
		d := strings.TrimSpace(rest)
		if d == "" {
			d = "1h"
		}
		return nil, fmt.Errorf("cron expression %q: @every is not cron; use the every trigger instead (every: %s)", expr, d)
	}
	sched, err := cronParser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("cron expression %q: %w", expr, err)
	}
	spec, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("cron expression %q: not a calendar schedule", expr)
	}
	wallSpec := *spec
	wallSpec.Location = time.UTC
	return &cronSchedule{spec: &wallSpec, loc: loc}, nil
}

// Next returns the instant of the first slot after t, in t's location, or
// the zero time when there is none within five years.
//
// Slots are found on wall-clock readings; instant maps each back to the one
// instant it fires at. That mapping never decreases, so the first slot whose
// instant is after t is the answer.
func (c *cronSchedule) Next(t time.Time) time.Time {
	t = t.Round(0)
	tl := t.In(c.loc)
	from := wall(tl)
	if end, ok := repeatEnd(tl); ok && end.After(from) {
		// t is in the second pass through a repeated hour: the slots up to
		// its end fired in the first pass.
		from = end.Add(-time.Nanosecond)
	}
	limit := from.AddDate(searchLimit, 0, 0)
	for range maxRepeats {
		s := c.spec.Next(from)
		if s.IsZero() || s.After(limit) {
			return time.Time{}
		}
		if at := c.instant(s); at.After(t) {
			return at.In(t.Location())
		}
		from = s
	}
	return time.Time{}
}

// instant returns when the wall-clock slot s (a reading in UTC) fires in
// c.loc: at its only occurrence; at its first occurrence when a backward
// clock change repeats it; at the end of the gap when a forward change
// skips it.
func (c *cronSchedule) instant(s time.Time) time.Time {
	u := time.Date(s.Year(), s.Month(), s.Day(), s.Hour(), s.Minute(), s.Second(), s.Nanosecond(), c.loc)
	switch w := wall(u); {
	case w.Equal(s):
		start, _ := u.ZoneBounds()
		if start.IsZero() {
			return u
		}
		if back := zoneShift(start); back < 0 {
			if e := u.Add(back); e.Before(start) && wall(e).Equal(s) {
				return e
			}
		}
		return u
	case w.After(s): // s is in a gap and u after it: the gap ends where u's zone starts
		if start, _ := u.ZoneBounds(); !start.IsZero() {
			return start
		}
	default: // s is in a gap and u before it: the gap ends where u's zone ends
		if _, end := u.ZoneBounds(); !end.IsZero() {
			return end
		}
	}
	return u
}

// repeatEnd reports whether tl is in the second pass through a range of
// wall-clock readings that a backward clock change repeats, and if so
// returns the reading (in UTC) at which that range ends.
func repeatEnd(tl time.Time) (time.Time, bool) {
	start, _ := tl.ZoneBounds()
	if start.IsZero() {
		return time.Time{}, false
	}
	shift := zoneShift(start)
	if shift >= 0 || !tl.Before(start.Add(-shift)) {
		return time.Time{}, false
	}
	return wall(start).Add(-shift), true
}

// zoneShift returns how far the clock moved at the zone transition start:
// positive forward (a gap), negative backward (a repeat).
func zoneShift(start time.Time) time.Duration {
	_, before := start.Add(-time.Nanosecond).Zone()
	_, after := start.Zone()
	return time.Duration(after-before) * time.Second
}
