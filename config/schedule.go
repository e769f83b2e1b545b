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

var (
	scheduleKeys = []string{"times", "days", "cron"}
	// agent-queue's schedule keys, in an agent-queue-shaped trigger.
	agentQueueScheduleKeys = []string{"times", "days", "cron", "days_of_week", "days_of_month"}
)

// agentQueueWeekdays maps the day names of agent-queue's days_of_week to
// its numbers: 0 is Monday (Python's weekday()).
var agentQueueWeekdays = map[string]int{
	"mon": 0, "monday": 0, "tue": 1, "tuesday": 1, "wed": 2, "wednesday": 2, "thu": 3, "thursday": 3,
	"fri": 4, "friday": 4, "sat": 5, "saturday": 5, "sun": 6, "sunday": 6,
}

// fromMonday turns an agent-queue day number (0 Monday ... 6 Sunday)
// into cron's (0 Sunday ... 6 Saturday).
func fromMonday(d int) int { return (d + 1) % 7 }

// weekdays maps the day names a schedule's days list takes to cron's
// day-of-week numbers.
var weekdays = map[string]int{
	"sun": 0, "sunday": 0, "mon": 1, "monday": 1, "tue": 2, "tuesday": 2, "wed": 3, "wednesday": 3,
	"thu": 4, "thursday": 4, "fri": 5, "friday": 5, "sat": 6, "saturday": 6,
}

// schedule decodes agent-queue's trigger.schedule into a cron trigger: a
// cron expression (a string, or {cron: EXPR}), or {times: [HH:MM, ...],
// days: [mon, ...]} — each time on each listed day (every day when days
// is absent), in the trigger's timezone. In an agent-queue-shaped
// trigger (aq) it takes agent-queue's meaning as well: days_of_week
// (names, or numbers with 0 Monday), days_of_month, and a cron whose
// day-of-week counts 0 as Monday.
func (s *state) schedule(n *yaml.Node, path string, t *engine.Trigger, aq bool) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode {
		if s.decodeAt(n, path, &t.Cron) && strings.TrimSpace(t.Cron) == "" {
			s.errorf(n, path, "must not be empty")
		} else if aq {
			s.mondayCron(n, path, t)
		}
		return
	}
	if n.Kind != yaml.MappingNode {
		s.errorf(n, path, "expected {times: [\"09:00\"], days: [mon]} or {cron: EXPR}, got %s", describe(n))
		return
	}
	keys := scheduleKeys
	if aq {
		keys = agentQueueScheduleKeys
	}
	f := s.fields(n, path, keys, nil)
	if c := f.get("cron"); c != nil {
		if f.has("times") || f.has("days") || f.has("days_of_week") || f.has("days_of_month") {
			s.add(f.keyLine("cron"), join(path, "cron"), "has both cron and times/days; write one")
			return
		}
		if s.decodeAt(c, join(path, "cron"), &t.Cron) && strings.TrimSpace(t.Cron) == "" {
			s.errorf(c, join(path, "cron"), "must not be empty")
		} else if aq {
			s.mondayCron(c, join(path, "cron"), t)
		}
		return
	}
	dow, dom := "*", "*"
	if f.has("days") && f.has("days_of_week") {
		s.add(f.keyLine("days_of_week"), join(path, "days_of_week"), "has both days and days_of_week; write one "+
			"(days counts 0 as Sunday, agent-queue's days_of_week 0 as Monday)")
		return
	}
	if f.has("days_of_month") && (f.has("days") || f.has("days_of_week")) {
		s.add(f.keyLine("days_of_month"), join(path, "days_of_month"), "has both days_of_month and days of the week: "+
			"agent-queue fired only on a day that is both, which a cron expression cannot say (it fires on either); "+
			"write one of them, or two hooks")
		return
	}
	if dn := f.get("days_of_week"); dn != nil {
		if dow = s.mondayDays(dn, join(path, "days_of_week")); dow == "" {
			return
		}
	}
	if dn := f.get("days_of_month"); dn != nil {
		var days []int
		if !s.decodeAt(dn, join(path, "days_of_month"), &days) {
			return
		}
		if len(days) == 0 {
			s.errorf(dn, join(path, "days_of_month"), "must list at least one day (leave days_of_month out for every day)")
			return
		}
		var nums []int
		for i, d := range days {
			if d < 1 || d > 31 {
				s.errorf(resolve(dn).Content[i], index(join(path, "days_of_month"), i), "must be a day of the month, 1-31 (got %d)", d)
				return
			}
			if !slices.Contains(nums, d) {
				nums = append(nums, d)
			}
		}
		dom = joinInts(nums)
	}
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
		e := fmt.Sprintf("%d %d %s * %s", m, h, dom, dow)
		if sec != 0 {
			e = fmt.Sprintf("%d %s", sec, e)
		}
		if !slices.Contains(exprs, e) {
			exprs = append(exprs, e)
		}
	}
	t.Cron, t.CronSet = exprs[0], exprs[1:]
}

// joinInts sorts nums and joins them with commas, a cron field's list.
func joinInts(nums []int) string {
	slices.Sort(nums)
	parts := make([]string, len(nums))
	for i, v := range nums {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

// mondayDays decodes agent-queue's days_of_week — day names, or numbers
// (ints or strings of digits) with 0 Monday — into a cron day-of-week
// list (0 Sunday). It returns "" after reporting an error.
func (s *state) mondayDays(dn *yaml.Node, path string) string {
	dn = resolve(dn)
	if dn.Kind != yaml.SequenceNode || len(dn.Content) == 0 {
		s.errorf(dn, path, "must list at least one day, like [\"mon\", 4] (0 is Monday); leave days_of_week out for every day")
		return ""
	}
	var nums []int
	for i, item := range dn.Content {
		item = resolve(item)
		v, ok := -1, false
		if item.Kind == yaml.ScalarNode {
			word := strings.ToLower(strings.TrimSpace(item.Value))
			if d, named := agentQueueWeekdays[word]; named {
				v, ok = d, true
			} else if x, err := strconv.Atoi(word); err == nil && x >= 0 && x <= 6 {
				v, ok = x, true
			}
		}
		if !ok {
			s.errorf(item, index(path, i), "unknown day %q (mon, tue, ... sun, or 0-6 with 0 Monday, as agent-queue counts)", item.Value)
			return ""
		}
		if d := fromMonday(v); !slices.Contains(nums, d) {
			nums = append(nums, d)
		}
	}
	return joinInts(nums)
}

// mondayCron rewrites the day-of-week field of t.Cron, an agent-queue
// cron expression whose day-of-week counts 0 as Monday, into cron's
// numbering (0 Sunday): each number, range and step is expanded into the
// days it names and each day moved by one. Names (MON, MON-FRI) mean the
// same in both; a descriptor (@daily) has no day-of-week field.
func (s *state) mondayCron(n *yaml.Node, path string, t *engine.Trigger) {
	fields := strings.Fields(t.Cron)
	if len(fields) != 5 && len(fields) != 6 {
		return // a descriptor, or an expression the cron parser reports
	}
	last := len(fields) - 1
	bad := func(why string) {
		s.errorf(n, path, "day-of-week %q: %s (0-6 with 0 Monday, as agent-queue counts, or names)", fields[last], why)
	}
	// day reads one end of a range: a name is cron's day already, a
	// number is agent-queue's (0 Monday).
	day := func(w string) (d int, named, ok bool) {
		if v, isName := weekdays[strings.ToLower(w)]; isName {
			return v, true, true
		}
		x, err := strconv.Atoi(w)
		return x, false, err == nil && x >= 0 && x <= 6
	}
	var days []int
	add := func(d int) {
		if !slices.Contains(days, d) {
			days = append(days, d)
		}
	}
	for _, item := range strings.Split(fields[last], ",") {
		rng, step := item, 1
		if r, st, ok := strings.Cut(item, "/"); ok {
			x, err := strconv.Atoi(st)
			if err != nil || x < 1 {
				bad(fmt.Sprintf("bad step %q", st))
				return
			}
			rng, step = r, x
		}
		lo, hi, named := 0, 6, false
		if rng != "*" && rng != "?" {
			a, b, isRange := strings.Cut(rng, "-")
			var ok1, ok2, n1, n2 bool
			lo, n1, ok1 = day(a)
			hi, n2, ok2 = lo, n1, ok1
			if isRange {
				hi, n2, ok2 = day(b)
			} else if step > 1 {
				hi, n2, ok2 = 6, n1, true
			}
			if !ok1 || !ok2 || n1 != n2 || lo > hi {
				bad(fmt.Sprintf("%q is not a day or a range of days", rng))
				return
			}
			named = n1
		}
		for d := lo; d <= hi; d += step {
			if named {
				add(d)
			} else {
				add(fromMonday(d))
			}
		}
	}
	if len(days) == 7 {
		fields[last] = "*"
	} else {
		fields[last] = joinInts(days)
	}
	t.Cron = strings.Join(fields, " ")
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
