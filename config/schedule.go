package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
	"gopkg.in/yaml.v3"
)

var scheduleKeys = []string{"times", "days", "cron"}

// weekdays maps the day names a schedule's days list takes to cron's
// day-of-week numbers.
var weekdays = map[string]int{
	"sun": 0, "sunday": 0, "mon": 1, "monday": 1, "tue": 2, "tuesday": 2, "wed": 3, "wednesday": 3,
	"thu": 4, "thursday": 4, "fri": 5, "friday": 5, "sat": 6, "saturday": 6,
}

// schedule decodes agent-queue's trigger.schedule into a cron trigger: a
// cron expression (a string, or {cron: EXPR}), or {times: [HH:MM, ...],
// days: [mon, ...]} — each time on each listed day (every day when days
// is absent), in the trigger's timezone.
func (s *state) schedule(n *yaml.Node, path string, t *engine.Trigger) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode {
		if s.decodeAt(n, path, &t.Cron) && strings.TrimSpace(t.Cron) == "" {
			s.errorf(n, path, "must not be empty")
		}
		return
	}
	if n.Kind != yaml.MappingNode {
		s.errorf(n, path, "expected {times: [\"09:00\"], days: [mon]} or {cron: EXPR}, got %s", describe(n))
		return
	}
	f := s.fields(n, path, scheduleKeys, nil)
	if c := f.get("cron"); c != nil {
		if f.has("times") || f.has("days") {
			s.add(f.keyLine("cron"), join(path, "cron"), "has both cron and times/days; write one")
			return
		}
		if s.decodeAt(c, join(path, "cron"), &t.Cron) && strings.TrimSpace(t.Cron) == "" {
			s.errorf(c, join(path, "cron"), "must not be empty")
		}
		return
	}
	dow := "*"
	if dn := f.get("days"); dn != nil {
		var days []string
		if !s.decodeAt(dn, join(path, "days"), &days) {
			return
		}
		var nums []int
		for i, d := range days {
			v, ok := weekdays[strings.ToLower(strings.TrimSpace(d))]
			if !ok {
				if x, err := strconv.Atoi(d); err == nil && x >= 0 && x <= 7 {
					v, ok = x%7, true
				}
			}
			if !ok {
				s.errorf(resolve(dn).Content[i], index(join(path, "days"), i),
					"unknown day %q (mon, tue, ... sun, or 0-6 with 0 Sunday)", d)
				return
			}
			if !slices.Contains(nums, v) {
				nums = append(nums, v)
			}
		}
		if len(nums) == 0 {
			s.errorf(dn, join(path, "days"), "must list at least one day (leave days out for every day)")
			return
		}
		slices.Sort(nums)
		parts := make([]string, len(nums))
		for i, v := range nums {
			parts[i] = strconv.Itoa(v)
		}
		dow = strings.Join(parts, ",")
	}
	tn := f.get("times")
	if tn == nil {
		s.add(f.keyLine("times"), join(path, "times"), "required: the times of day, like [\"09:00\", \"17:30\"] (or write cron)")
		return
	}
	var times []string
	if !s.decodeAt(tn, join(path, "times"), &times) {
		return
	}
	if len(times) == 0 {
		s.errorf(tn, join(path, "times"), "must list at least one time of day")
		return
	}
	var exprs []string
	for i, tm := range times {
		var h, m, sec int
		var err error
		switch strings.Count(tm, ":") {
		case 1:
			_, err = fmt.Sscanf(tm, "%d:%d", &h, &m)
		case 2:
			_, err = fmt.Sscanf(tm, "%d:%d:%d", &h, &m, &sec)
		default:
			err = fmt.Errorf("no colon")
		}
		if err != nil || h < 0 || h > 23 || m < 0 || m > 59 || sec < 0 || sec > 59 {
			s.errorf(resolve(tn).Content[i], index(join(path, "times"), i), "must be a time of day like 09:00 or 17:30:00 (got %q)", tm)
			return
		}
		e := fmt.Sprintf("%d %d * * %s", m, h, dow)
		if sec != 0 {
			e = fmt.Sprintf("%d %s", sec, e)
		}
		if !slices.Contains(exprs, e) {
			exprs = append(exprs, e)
		}
	}
	t.Cron, t.CronSet = exprs[0], exprs[1:]
}

// atLayouts are the forms of an at (fire_at) time without a zone; they
// are read in the trigger's timezone.
var atLayouts = []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"}

// atTime decodes a one-shot trigger's time: RFC 3339, a date and time of
// day in loc (the trigger's timezone), or a number of Unix seconds
// (agent-queue's fire_at).
func (s *state) atTime(n *yaml.Node, path string, loc *time.Location) time.Time {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode {
		s.errorf(n, path, "must be a time like 2026-12-01T09:00:00Z, got %s", describe(n))
		return time.Time{}
	}
	v := strings.TrimSpace(n.Value)
	if n.Tag == "!!int" || n.Tag == "!!float" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			s.errorf(n, path, "must be a time, or Unix seconds > 0 (got %s)", v)
			return time.Time{}
		}
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)).UTC()
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t
	}
	for _, l := range atLayouts {
		if t, err := time.ParseInLocation(l, v, loc); err == nil {
			return t
		}
	}
	s.errorf(n, path, "must be a time like 2026-12-01T09:00:00Z or \"2026-12-01 09:00\" (in timezone), or Unix seconds (got %q)", v)
	return time.Time{}
}
