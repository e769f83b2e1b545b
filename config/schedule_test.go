package config

import (
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

func parseTrigger(t *testing.T, src string) (*engine.Hook, error) {
	t.Helper()
	return ParseHook(strings.NewReader(src), "hooks.d/h.json", Options{Root: "/p", DefaultName: "h"})
}

// TestAgentQueueTriggerShapes: agent-queue's watch, schedule and one-shot
// trigger shapes, and hookd's own at:, load with their meaning.
func TestAgentQueueTriggerShapes(t *testing.T) {
	t.Parallel()
	berlin, _ := time.LoadLocation("Europe/Berlin")
	for _, tc := range []struct {
		name, src string
		check     func(*engine.Hook) bool
	}{
		{"file watch", `{"trigger": {"type": "event", "event_type": "file.changed",
  "watch": {"paths": ["pyproject.toml", "src/config.py"], "project_id": "my-project"}}, "skip_llm": true}`,
			func(h *engine.Hook) bool {
				return h.Trigger.Kind == engine.TriggerWatch && strings.Join(h.Trigger.Watch.Paths, " ") == "/p/pyproject.toml /p/src/config.py"
			}},
		{"folder watch with base_dir", `{"trigger": {"type": "event", "event_type": "folder.changed",
  "watch": {"paths": ["docs/", "/abs"], "recursive": true, "extensions": [".md", "rst"], "base_dir": "site"}}, "skip_llm": true}`,
			func(h *engine.Hook) bool {
				w := h.Trigger.Watch
				return h.Trigger.Kind == engine.TriggerWatch && w.Recursive && strings.Join(w.Paths, " ") == "/p/site/docs /abs" &&
					strings.Join(w.Extensions, " ") == ".md .rst"
			}},
		{"schedule times and days", `{"trigger": {"type": "periodic", "schedule": {"times": ["09:00", "17:30"], "days": ["mon", "Wednesday", "5"]},
  "timezone": "Europe/Berlin"}, "skip_llm": true}`,
			func(h *engine.Hook) bool {
				// Monday 2026-11-30: 09:00 and 17:30 Berlin, then Wednesday 09:00.
				from := time.Date(2026, 11, 29, 12, 0, 0, 0, berlin)
				got := engine.FireTimes(h, from, 4)
				want := []time.Time{time.Date(2026, 11, 30, 9, 0, 0, 0, berlin), time.Date(2026, 11, 30, 17, 30, 0, 0, berlin),
					time.Date(2026, 12, 2, 9, 0, 0, 0, berlin), time.Date(2026, 12, 2, 17, 30, 0, 0, berlin)}
				for i := range want {
					if i >= len(got) || !got[i].Equal(want[i]) {
						t.Logf("fire times %v", got)
						return false
					}
				}
				return h.Trigger.Kind == engine.TriggerCron && h.Trigger.String() == "cron 0 9 * * 1,3,5; 30 17 * * 1,3,5 (Europe/Berlin)" &&
					h.Cooldown == AgentQueueCooldown
			}},
		{"schedule times every day", `{"trigger": {"type": "periodic", "schedule": {"times": ["06:15:30"]}}, "skip_llm": true}`,
			func(h *engine.Hook) bool { return h.Trigger.Cron == "30 15 6 * * *" && len(h.Trigger.CronSet) == 0 }},
		{"schedule cron, 0 Monday", `{"trigger": {"type": "periodic", "schedule": {"cron": "0 3 * * 0-4"}}, "skip_llm": true}`,
			func(h *engine.Hook) bool {
				// agent-queue's 0-4 is Monday to Friday, cron's 1-5, in UTC.
				return h.Trigger.Kind == engine.TriggerCron && h.Trigger.String() == "cron 0 3 * * 1,2,3,4,5 (UTC)"
			}},
		{"schedule cron string, steps and names", `{"trigger": {"type": "periodic", "schedule": "30 6 * * */3,SUN"}, "skip_llm": true}`,
			func(h *engine.Hook) bool {
				return h.Trigger.Cron == "30 6 * * 1,4,0" || h.Trigger.Cron == "30 6 * * 0,1,4"
			}},
		{"interval and schedule add up", `{"trigger": {"type": "periodic", "interval_seconds": 7200,
  "schedule": {"times": ["09:00", "21:00"], "days_of_week": [0, "4", "sat"]}}, "cooldown_seconds": 60, "skip_llm": true}`,
			func(h *engine.Hook) bool {
				// 0 Monday, "4" Friday, sat: cron's 1, 5 and 6; UTC; fired
				// only once 7200 s have passed as well (the cooldown gate).
				from := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) // a Sunday
				got := engine.FireTimes(h, from, 2)
				return h.Trigger.String() == "cron 0 9 * * 1,5,6; 0 21 * * 1,5,6 (UTC)" && h.Cooldown == 7200*time.Second &&
					len(got) == 2 && got[0].Equal(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)) && got[0].Weekday() == time.Monday
			}},
		{"interval shorter than the default cooldown", `{"trigger": {"type": "periodic", "interval_seconds": 60,
  "schedule": {"times": ["09:00"], "days_of_month": [15, 1]}}, "skip_llm": true}`,
			func(h *engine.Hook) bool {
				return h.Trigger.String() == "cron 0 9 1,15 * * (UTC)" && h.Cooldown == AgentQueueCooldown
			}},
		{"scheduled fire_at ISO", `{"trigger": {"type": "scheduled", "fire_at": "2026-12-01T09:00:00Z"}, "skip_llm": true}`,
			func(h *engine.Hook) bool {
				return h.Trigger.Kind == engine.TriggerAt && h.Trigger.At.Equal(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)) && h.Cooldown == 0 &&
					h.Trigger.OnMissed == engine.MissedLatest
			}},
		{"scheduled fire_at epoch", `{"trigger": {"type": "scheduled", "fire_at": 1796115600}, "skip_llm": true}`,
			func(h *engine.Hook) bool { return h.Trigger.At.Equal(time.Unix(1796115600, 0)) }},
		{"hookd at in timezone", "trigger: {at: \"2026-12-01 09:00\", timezone: Europe/Berlin, on_missed: skip}\nskip_llm: true\n",
			func(h *engine.Hook) bool {
				return h.Trigger.At.Equal(time.Date(2026, 12, 1, 9, 0, 0, 0, berlin)) && h.Trigger.OnMissed == engine.MissedSkip &&
					h.Trigger.String() == "at 2026-12-01T09:00:00+01:00"
			}},
	} {
		h, err := parseTrigger(t, tc.src)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !tc.check(h) {
			t.Errorf("%s: trigger %+v cooldown %s", tc.name, h.Trigger, h.Cooldown)
		}
	}
}

func TestAgentQueueTriggerShapeErrors(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		`{"trigger": {"type": "event", "event_type": "task.completed", "watch": {"paths": ["a"]}}}`: `hooks.d/h.json:1: trigger.event_type: with watch, the event type must be file.changed or folder.changed (what a watch publishes; got "task.completed")`,
		`{"trigger": {"type": "scheduled"}}`:                                                                             `trigger.type: scheduled needs fire_at (or write at: TIME)`,
		`{"trigger": {"type": "periodic", "fire_at": "2026-12-01T09:00:00Z"}}`:                                           `trigger.type: periodic does not match the fire_at trigger`,
		`{"trigger": {"at": "2026-12-01T09:00:00Z", "fire_at": 1}}`:                                                      `trigger.fire_at: fire_at is an alias of at, which is also given; keep one`,
		`{"trigger": {"at": "tomorrow"}}`:                                                                                `trigger.at: must be a time like 2026-12-01T09:00:00Z or "2026-12-01 09:00" (in timezone), or Unix seconds (got "tomorrow")`,
		`{"trigger": {"schedule": {"times": ["25:00"]}}}`:                                                                `trigger.schedule.times[0]: must be a time of day like 09:00 or 17:30:00 (got "25:00")`,
		`{"trigger": {"schedule": {"times": ["09:00"], "days": ["someday"]}}}`:                                           `trigger.schedule.days[0]: unknown day "someday"`,
		`{"trigger": {"schedule": {"days": ["mon"]}}}`:                                                                   `trigger.schedule.times: required`,
		`{"trigger": {"schedule": {"cron": "0 3 * * *", "times": ["09:00"]}}}`:                                           `trigger.schedule.cron: has both cron and times/days`,
		`{"trigger": {"cron": "0 3 * * *", "schedule": {"cron": "0 4 * * *"}}}`:                                          `trigger: has both cron and schedule`,
		`{"trigger": {"schedule": {"times": ["09:00"]}, "where": {"a": 1}}}`:                                             `trigger.where: only applies to event triggers`,
		`{"trigger": {"watch": {"paths": ["a"], "base_dir": ""}}}`:                                                       `trigger.watch.base_dir: must not be empty`,
		`{"trigger": {"evrey": "1h"}}`:                                                                                   `trigger.evrey: unknown field; did you mean every?`,
		`{"trigger": {}}`:                                                                                                `trigger: needs one of every, cron, schedule, at, event or watch`,
		`{"trigger": {"type": "periodic", "schedule": {"times": ["09:00"], "days_of_week": [7]}}}`:                       `trigger.schedule.days_of_week[0]: unknown day "7" (mon, tue, ... sun, or 0-6 with 0 Monday`,
		`{"trigger": {"type": "periodic", "schedule": {"times": ["09:00"], "days_of_week": [0], "days_of_month": [1]}}}`: `trigger.schedule.days_of_month: has both days_of_month and days of the week`,
		`{"trigger": {"type": "periodic", "schedule": {"times": ["09:00"], "days_of_month": [32]}}}`:                     `trigger.schedule.days_of_month[0]: must be a day of the month, 1-31 (got 32)`,
		`{"trigger": {"type": "periodic", "schedule": {"cron": "0 3 * * 1-7"}}}`:                                         `trigger.schedule.cron: day-of-week "1-7": "1-7" is not a day or a range of days (0-6 with 0 Monday`,
		`{"trigger": {"schedule": {"times": ["09:00"], "days_of_week": [0]}}}`:                                           `trigger.schedule.days_of_week: unknown field`,
	} {
		_, err := parseTrigger(t, src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s", src, err, want)
		}
	}
}
