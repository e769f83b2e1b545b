package triggers_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
	_ "github.com/hookd/hookd/triggers"
)

// loc loads a time zone or fails the test.
func loc(t testing.TB, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load time zone: %v", err)
	}
	return l
}

// at parses "2026-03-29 02:30 CEST" (seconds optional) in the zone named
// zone; the abbreviation picks the offset in a repeated hour.
func at(t testing.TB, zone, s string) time.Time {
	t.Helper()
	l := loc(t, zone)
	for _, layout := range []string{"2006-01-02 15:04:05.999999999 MST", "2006-01-02 15:04 MST"} {
		if v, err := time.ParseInLocation(layout, s, l); err == nil {
			if v.Location() != l {
				t.Fatalf("at %q: abbreviation not known in %s", s, zone)
			}
			return v
		}
	}
	t.Fatalf("at %q: bad time", s)
	return time.Time{}
}

func cronSchedule(t testing.TB, spec, tz string) engine.Schedule {
	t.Helper()
	tr := &engine.Trigger{Kind: engine.TriggerCron, Cron: spec, Timezone: tz}
	s, err := engine.CompileSchedule(tr)
	if err != nil {
		t.Fatalf("compile %q (%s): %v", spec, tz, err)
	}
	return s
}

func TestCronNext(t *testing.T) {
	const (
		utc    = "UTC"
		berlin = "Europe/Berlin"
		ny     = "America/New_York"
	)
	tests := []struct {
		spec, tz string
		zone     string // zone of from and want
		from     string
		want     string // "" means never
	}{
		// UTC.
		{"0 3 * * *", utc, utc, "2026-01-10 12:00 UTC", "2026-01-11 03:00 UTC"},
		{"0 3 * * *", utc, utc, "2026-01-11 03:00 UTC", "2026-01-12 03:00 UTC"}, // strictly after
		{"0 3 * * *", utc, utc, "2026-01-11 02:59:59.999 UTC", "2026-01-11 03:00 UTC"},
		{"*/15 * * * *", utc, utc, "2026-01-10 10:07 UTC", "2026-01-10 10:15 UTC"},
		{"*/15 * * * *", utc, utc, "2026-01-10 23:59 UTC", "2026-01-11 00:00 UTC"},
		{"0 0 1 * *", utc, utc, "2026-01-31 12:00 UTC", "2026-02-01 00:00 UTC"},
		{"0 9 * * 1-5", utc, utc, "2026-01-09 10:00 UTC", "2026-01-12 09:00 UTC"}, // Fri -> Mon
		{"0 9 * * mon", utc, utc, "2026-01-12 09:00 UTC", "2026-01-19 09:00 UTC"},
		{"0 12 29 2 *", utc, utc, "2026-01-01 00:00 UTC", "2028-02-29 12:00 UTC"},
		{"0 0 * dec *", utc, utc, "2026-01-01 00:00 UTC", "2026-12-01 00:00 UTC"},
		// Seconds field.
		{"30 * * * * *", utc, utc, "2026-01-10 10:00 UTC", "2026-01-10 10:00:30 UTC"},
		{"*/10 * * * * *", utc, utc, "2026-01-10 10:00:05.5 UTC", "2026-01-10 10:00:10 UTC"},
		{"0 30 9 * * *", utc, utc, "2026-01-10 10:00 UTC", "2026-01-11 09:30 UTC"},
		// Descriptors.
		{"@daily", utc, utc, "2026-05-05 13:00 UTC", "2026-05-06 00:00 UTC"},
		{"@midnight", utc, utc, "2026-05-05 13:00 UTC", "2026-05-06 00:00 UTC"},
		{"@hourly", utc, utc, "2026-05-05 13:00 UTC", "2026-05-05 14:00 UTC"},
		{"@weekly", utc, utc, "2026-05-05 13:00 UTC", "2026-05-10 00:00 UTC"}, // Sunday
		{"@monthly", utc, utc, "2026-05-05 13:00 UTC", "2026-06-01 00:00 UTC"},
		{"@yearly", utc, utc, "2026-05-05 13:00 UTC", "2027-01-01 00:00 UTC"},
		// Never.
		{"0 0 30 2 *", utc, utc, "2026-01-01 00:00 UTC", ""},
		{"0 0 31 4 *", berlin, berlin, "2026-01-01 00:00 CET", ""},

		// Europe/Berlin, ordinary days.
		{"0 9 * * *", berlin, berlin, "2026-01-10 09:00 CET", "2026-01-11 09:00 CET"},
		{"0 9 * * *", berlin, berlin, "2026-07-01 00:00 CEST", "2026-07-01 09:00 CEST"},
		{"0 9 * * *", berlin, utc, "2026-07-01 06:00 UTC", "2026-07-01 07:00 UTC"}, // from/want in another zone
		{"@daily", berlin, berlin, "2026-05-05 13:00 CEST", "2026-05-06 00:00 CEST"},
		// Spring forward, 2026-03-29 02:00 CET -> 03:00 CEST.
		{"30 2 * * *", berlin, berlin, "2026-03-28 12:00 CET", "2026-03-29 03:00 CEST"},
		{"30 2 * * *", berlin, berlin, "2026-03-29 03:00 CEST", "2026-03-30 02:30 CEST"},
		{"0 * * * *", berlin, berlin, "2026-03-29 01:00 CET", "2026-03-29 03:00 CEST"},
		{"0 * * * *", berlin, berlin, "2026-03-29 03:00 CEST", "2026-03-29 04:00 CEST"},
		{"*/15 2 * * *", berlin, berlin, "2026-03-29 01:59 CET", "2026-03-29 03:00 CEST"},
		{"*/15 2 * * *", berlin, berlin, "2026-03-29 03:00 CEST", "2026-03-30 02:00 CEST"},
		// Fall back, 2026-10-25 03:00 CEST -> 02:00 CET.
		{"30 2 * * *", berlin, berlin, "2026-10-25 00:00 CEST", "2026-10-25 02:30 CEST"},
		{"30 2 * * *", berlin, berlin, "2026-10-25 02:30 CEST", "2026-10-26 02:30 CET"},
		{"30 2 * * *", berlin, berlin, "2026-10-25 02:10 CET", "2026-10-26 02:30 CET"},
		{"30 2 * * *", berlin, utc, "2026-10-25 00:30 UTC", "2026-10-26 01:30 UTC"},
		{"*/30 * * * *", berlin, berlin, "2026-10-25 02:10 CET", "2026-10-25 03:00 CET"},
		{"0 * * * *", berlin, berlin, "2026-10-25 02:00 CEST", "2026-10-25 03:00 CET"},
		{"* * * * * *", berlin, berlin, "2026-10-25 02:59:59 CEST", "2026-10-25 03:00:00 CET"},
		{"* * * * * *", berlin, berlin, "2026-10-25 02:00:00 CET", "2026-10-25 03:00:00 CET"},
		{"0 3 * * *", berlin, berlin, "2026-10-25 02:30 CET", "2026-10-25 03:00 CET"},

		// America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT; 2026-11-01 02:00 EDT -> 01:00 EST.
		{"30 8 * * *", ny, ny, "2026-03-07 09:00 EST", "2026-03-08 08:30 EDT"},
		{"30 2 * * *", ny, ny, "2026-03-07 09:00 EST", "2026-03-08 03:00 EDT"},
		{"30 1 * * *", ny, ny, "2026-10-31 12:00 EDT", "2026-11-01 01:30 EDT"},
		{"30 1 * * *", ny, ny, "2026-11-01 01:30 EDT", "2026-11-02 01:30 EST"},
		{"30 1 * * *", ny, ny, "2026-11-01 01:00 EST", "2026-11-02 01:30 EST"},
		{"0 * * * *", ny, ny, "2026-11-01 00:30 EDT", "2026-11-01 01:00 EDT"},
		{"0 * * * *", ny, ny, "2026-11-01 01:00 EDT", "2026-11-01 02:00 EST"},

		// Zone prefixes.
		{"CRON_TZ=Asia/Tokyo 0 9 * * *", "", utc, "2026-01-09 23:00 UTC", "2026-01-10 00:00 UTC"},
		{"CRON_TZ=Asia/Tokyo 0 9 * * *", "Asia/Tokyo", utc, "2026-01-10 00:00 UTC", "2026-01-11 00:00 UTC"},
		{"TZ=Europe/Berlin 30 2 * * *", "", berlin, "2026-03-28 12:00 CET", "2026-03-29 03:00 CEST"},
		{"  CRON_TZ=America/New_York   @daily ", "", ny, "2026-07-04 12:00 EDT", "2026-07-05 00:00 EDT"},
	}
	for _, tt := range tests {
		s := cronSchedule(t, tt.spec, tt.tz)
		from := at(t, tt.zone, tt.from)
		got := s.Next(from)
		if tt.want == "" {
			if !got.IsZero() {
				t.Errorf("%q (%s): Next(%s) = %s, want never", tt.spec, tt.tz, tt.from, got)
			}
			continue
		}
		if want := at(t, tt.zone, tt.want); !got.Equal(want) {
			t.Errorf("%q (%s): Next(%s) = %s, want %s", tt.spec, tt.tz, tt.from, got, want)
		}
		if got.Location() != from.Location() {
			t.Errorf("%q: Next(%s) is in %s, want %s", tt.spec, tt.from, got.Location(), from.Location())
		}
	}
}

// TestCronDST walks schedules across clock changes slot by slot: each
// wall-clock slot fires at most once.
func TestCronDST(t *testing.T) {
	const berlin = "Europe/Berlin"
	tests := []struct {
		name, spec string
		from       string
		want       []string
	}{
		{"spring daily", "30 2 * * *", "2026-03-27 12:00 CET", []string{
			"2026-03-28 02:30 CET", "2026-03-29 03:00 CEST", "2026-03-30 02:30 CEST"}},
		{"spring hourly", "0 * * * *", "2026-03-29 00:30 CET", []string{
			"2026-03-29 01:00 CET", "2026-03-29 03:00 CEST", "2026-03-29 04:00 CEST"}},
		{"spring gap slots collapse", "*/15 2 * * *", "2026-03-28 12:00 CET", []string{
			"2026-03-29 03:00 CEST", "2026-03-30 02:00 CEST", "2026-03-30 02:15 CEST"}},
		{"spring gap and end of gap collapse", "0 2,3 * * *", "2026-03-28 12:00 CET", []string{
			"2026-03-29 03:00 CEST", "2026-03-30 02:00 CEST", "2026-03-30 03:00 CEST"}},
		{"spring quarter hours", "*/15 * * * *", "2026-03-29 01:30 CET", []string{
			"2026-03-29 01:45 CET", "2026-03-29 03:00 CEST", "2026-03-29 03:15 CEST"}},
		{"fall daily", "30 2 * * *", "2026-10-24 12:00 CEST", []string{
			"2026-10-25 02:30 CEST", "2026-10-26 02:30 CET", "2026-10-27 02:30 CET"}},
		{"fall half hours", "*/30 * * * *", "2026-10-25 01:40 CEST", []string{
			"2026-10-25 02:00 CEST", "2026-10-25 02:30 CEST", "2026-10-25 03:00 CET", "2026-10-25 03:30 CET"}},
		{"fall hourly", "0 * * * *", "2026-10-25 01:30 CEST", []string{
			"2026-10-25 02:00 CEST", "2026-10-25 03:00 CET", "2026-10-25 04:00 CET"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := cronSchedule(t, tt.spec, berlin)
			next := at(t, berlin, tt.from)
			for i, w := range tt.want {
				next = s.Next(next)
				if want := at(t, berlin, w); !next.Equal(want) {
					t.Fatalf("firing %d: got %s, want %s", i+1, next, want)
				}
			}
		})
	}
}

// TestCronEveryInstant checks, minute by minute across both Berlin clock
// changes of 2026, that Next is strictly after t, that no wall-clock slot
// fires twice, and that Next(t) is the first firing after t.
func TestCronEveryInstant(t *testing.T) {
	berlin := loc(t, "Europe/Berlin")
	for _, spec := range []string{"*/15 * * * *", "30 2 * * *", "0 * * * *", "*/7 1-3 * * *"} {
		s := cronSchedule(t, spec, "Europe/Berlin")
		for _, day := range []time.Time{
			time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC),
			time.Date(2026, 10, 24, 22, 0, 0, 0, time.UTC),
		} {
			var prev time.Time
			seen := map[string]bool{}
			for m := 0; m < 6*60; m++ {
				now := day.Add(time.Duration(m) * time.Minute)
				got := s.Next(now)
				if !got.After(now) {
					t.Fatalf("%q: Next(%s) = %s, not after", spec, now, got)
				}
				if !prev.IsZero() && prev.After(now) && !got.Equal(prev) {
					t.Fatalf("%q: Next(%s) = %s, but a firing at %s was due first", spec, now, got, prev)
				}
				if !got.Equal(prev) {
					w := got.In(berlin).Format("2006-01-02 15:04")
					if seen[w] {
						t.Fatalf("%q: wall-clock slot %s fires twice", spec, w)
					}
					seen[w] = true
				}
				prev = got
			}
		}
	}
}

func TestCronLocation(t *testing.T) {
	tests := []struct {
		spec, tz string
		want     string
	}{
		{"0 3 * * *", "", "Local"},
		{"0 3 * * *", "Europe/Berlin", "Europe/Berlin"},
		{"CRON_TZ=Asia/Tokyo 0 3 * * *", "", "Asia/Tokyo"},
		{"TZ=UTC 0 3 * * *", "UTC", "UTC"},
	}
	for _, tt := range tests {
		tr := &engine.Trigger{Kind: engine.TriggerCron, Cron: tt.spec, Timezone: tt.tz}
		if _, err := engine.CompileSchedule(tr); err != nil {
			t.Fatalf("compile %q: %v", tt.spec, err)
		}
		if tr.Location == nil || tr.Location.String() != tt.want {
			t.Errorf("%q (%s): Location = %v, want %s", tt.spec, tt.tz, tr.Location, tt.want)
		}
	}
}

func TestCronErrors(t *testing.T) {
	tests := []struct {
		spec, tz string
		want     string // in the error message
	}{
		{"", "", "empty cron expression"},
		{"   ", "", "empty cron expression"},
		{"* * *", "", "expected 5 to 6 fields"},
		{"* * * * * * *", "", "expected 5 to 6 fields"},
		{"60 * * * *", "", "above maximum"},
		{"* 24 * * *", "", "above maximum"},
		{"0 0 0 * *", "", "below minimum"},
		{"*/0 * * * *", "", "step"},
		{"5-1 * * * *", "", "beyond end"},
		{"a * * * *", "", "failed to parse int"},
		{"0 0 * foo *", "", "failed to parse int"},
		{"@every 5m", "", "every: 5m"},
		{"@every", "", "use the every trigger"},
		{"@fortnightly", "", "unrecognized descriptor"},
		{"CRON_TZ=Mars/Olympus 0 * * * *", "", `"Mars/Olympus"`},
		{"0 * * * *", "Mars/Olympus", `"Mars/Olympus"`},
		{"0 * * * *", "../../etc/passwd", `"../../etc/passwd"`},
		{"CRON_TZ=Europe/Berlin 0 * * * *", "Asia/Tokyo", "conflicts"},
		{"CRON_TZ=UTC", "", "no schedule after CRON_TZ=UTC"},
		{"TZ=UTC", "", "no schedule after TZ=UTC"},
		{"CRON_TZ= 0 * * * *", "", "empty time zone"},
		{"TZ=UTC TZ=UTC 0 * * * *", "", "more than one time zone prefix"},
		{"CRON_TZ=UTC @every 1h", "", "use the every trigger"},
	}
	for _, tt := range tests {
		tr := &engine.Trigger{Kind: engine.TriggerCron, Cron: tt.spec, Timezone: tt.tz}
		_, err := engine.CompileSchedule(tr)
		if err == nil {
			t.Errorf("%q (%s): no error, want one containing %q", tt.spec, tt.tz, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q (%s): error %q, want one containing %q", tt.spec, tt.tz, err, tt.want)
		}
	}
}

// FuzzCron compiles arbitrary expressions: compiling never panics, and a
// schedule that compiles answers Next promptly with a time after t.
func FuzzCron(f *testing.F) {
	for _, s := range []string{
		"0 3 * * *", "*/15 2 * * *", "30 * * * * *", "@daily", "@every 5m",
		"CRON_TZ=Europe/Berlin 30 2 * * *", "TZ=UTC", "TZ=", "0 0 30 2 *",
		"1-5/2 */3 1,15 jan-jun mon-fri", "? ? ? ? ?", "0 0 29 2 1",
		"* * * * * *", "59 59 23 31 12 6", "CRON_TZ=Australia/Lord_Howe */10 * * * *",
	} {
		f.Add(s, uint8(0))
	}
	zones := []string{"", "UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Antarctica/Troll"}
	froms := []time.Time{
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 29, 0, 59, 59, 999999999, time.UTC), // Berlin spring forward
		time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC),         // Berlin first 02:30
		time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC),         // Berlin second 02:30
		time.Date(2026, 11, 1, 5, 59, 0, 0, time.UTC),          // New York fall back
		time.Date(2026, 4, 4, 15, 0, 0, 0, time.UTC),           // Lord Howe half-hour fall back
		time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC),       // before the epoch
		time.Date(2099, 12, 31, 23, 59, 59, 123, time.FixedZone("X", -37*60)),
	}
	f.Fuzz(func(t *testing.T, spec string, zone uint8) {
		tr := &engine.Trigger{Kind: engine.TriggerCron, Cron: spec, Timezone: zones[int(zone)%len(zones)]}
		s, err := engine.CompileSchedule(tr)
		if err != nil {
			return
		}
		if tr.Location == nil {
			t.Fatal("compiled without a Location")
		}
		for _, from := range froms {
			next := from
			for range 4 {
				n := s.Next(next)
				if n.IsZero() {
					break
				}
				if !n.After(next) {
					t.Fatalf("%q: Next(%s) = %s, not after", spec, next, n)
				}
				if n.After(next.AddDate(5, 0, 2)) {
					t.Fatalf("%q: Next(%s) = %s, more than five years ahead", spec, next, n)
				}
				next = n
			}
		}
	})
}
