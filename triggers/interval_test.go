package triggers_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

func everySchedule(t testing.TB, d time.Duration) engine.Schedule {
	t.Helper()
	s, err := engine.CompileSchedule(&engine.Trigger{Kind: engine.TriggerEvery, Every: d})
	if err != nil {
		t.Fatalf("compile every %s: %v", d, err)
	}
	return s
}

func TestIntervalNext(t *testing.T) {
	tests := []struct {
		every      time.Duration
		zone       string
		from, want string
	}{
		{time.Hour, "UTC", "2026-05-05 10:20 UTC", "2026-05-05 11:00 UTC"},
		{time.Hour, "UTC", "2026-05-05 11:00 UTC", "2026-05-05 12:00 UTC"}, // strictly after
		{time.Hour, "UTC", "2026-05-05 10:59:59.999999999 UTC", "2026-05-05 11:00 UTC"},
		{time.Hour, "Europe/Berlin", "2026-05-05 10:20 CEST", "2026-05-05 11:00 CEST"},
		{time.Hour, "Asia/Kolkata", "2026-05-05 10:20 IST", "2026-05-05 10:30 IST"}, // hh:00 UTC
		{2 * time.Hour, "UTC", "2026-05-05 10:20 UTC", "2026-05-05 12:00 UTC"},
		{24 * time.Hour, "Europe/Berlin", "2026-05-05 10:20 CEST", "2026-05-06 02:00 CEST"}, // midnight UTC
		{90 * time.Minute, "UTC", "2026-05-05 01:00 UTC", "2026-05-05 01:30 UTC"},
		{1500 * time.Millisecond, "UTC", "2026-05-05 00:00:00.2 UTC", "2026-05-05 00:00:01.5 UTC"},
		{time.Second, "UTC", "2026-05-05 00:00:00.2 UTC", "2026-05-05 00:00:01 UTC"},
		// Elapsed time: clock changes do not matter.
		{time.Hour, "Europe/Berlin", "2026-03-29 01:30 CET", "2026-03-29 03:00 CEST"},
		{time.Hour, "Europe/Berlin", "2026-10-25 02:30 CEST", "2026-10-25 02:00 CET"},
		// Before the epoch and past what UnixNano can hold.
		{time.Hour, "UTC", "1969-12-31 22:30 UTC", "1969-12-31 23:00 UTC"},
		{time.Hour, "UTC", "1900-01-01 00:00 UTC", "1900-01-01 01:00 UTC"},
		{time.Hour, "UTC", "3000-01-01 00:30 UTC", "3000-01-01 01:00 UTC"},
		{7 * time.Minute, "UTC", "1970-01-01 00:00 UTC", "1970-01-01 00:07 UTC"},
	}
	for _, tt := range tests {
		got := everySchedule(t, tt.every).Next(at(t, tt.zone, tt.from))
		if want := at(t, tt.zone, tt.want); !got.Equal(want) {
			t.Errorf("every %s: Next(%s) = %s, want %s", tt.every, tt.from, got, want)
		}
	}
}

// TestIntervalAnchored checks that the slots do not depend on when the
// schedule is first asked: they are multiples of the interval since the
// epoch, whatever the starting time.
func TestIntervalAnchored(t *testing.T) {
	for _, d := range []time.Duration{7 * time.Minute, time.Hour, 1500 * time.Millisecond, 13*time.Hour + 17*time.Second} {
		s := everySchedule(t, d)
		starts := []time.Time{
			time.Date(2026, 5, 5, 10, 3, 17, 500, time.UTC),
			time.Date(2026, 5, 5, 10, 11, 0, 0, loc(t, "America/New_York")),
			time.Date(2026, 5, 5, 9, 0, 0, 0, loc(t, "Asia/Kolkata")),
		}
		// From every start, the slots in a common window are the same.
		lo := starts[0]
		for _, from := range starts {
			if from.After(lo) {
				lo = from
			}
		}
		hi := lo.Add(50 * d)
		var first []time.Time
		for i, from := range starts {
			var got []time.Time
			for next := from; ; {
				prev := next
				next = s.Next(next)
				if !next.After(prev) || next.Sub(prev) > d {
					t.Fatalf("every %s: Next(%s) = %s", d, prev, next)
				}
				if rem := next.Sub(time.Unix(0, 0)) % d; rem != 0 {
					t.Fatalf("every %s: slot %s is %s off the epoch grid", d, next, rem)
				}
				if next.After(hi) {
					break
				}
				if next.After(lo) {
					got = append(got, next)
				}
			}
			if i == 0 {
				first = got
				continue
			}
			if len(got) != len(first) {
				t.Fatalf("every %s: %d slots from %s, %d from %s", d, len(got), from, len(first), starts[0])
			}
			for k := range got {
				if !got[k].Equal(first[k]) {
					t.Fatalf("every %s: slot %d is %s from %s, %s from %s", d, k, got[k], from, first[k], starts[0])
				}
			}
		}
	}
}

func TestIntervalNoMonotonic(t *testing.T) {
	got := everySchedule(t, time.Minute).Next(time.Now())
	if strings.Contains(got.String(), "m=") {
		t.Errorf("Next(time.Now()) = %s, carries a monotonic reading", got)
	}
}

func TestIntervalErrors(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := engine.CompileSchedule(&engine.Trigger{Kind: engine.TriggerEvery, Every: d})
		if err == nil || !strings.Contains(err.Error(), "must be > 0") {
			t.Errorf("every %s: error %v, want must be > 0", d, err)
		}
	}
}
