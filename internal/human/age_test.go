package human

import (
	"strings"
	"testing"
	"time"
)

func TestParseAge(t *testing.T) {
	const day = 24 * time.Hour
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"12h", 12 * time.Hour},
		{"90m", 90 * time.Minute},
		{"1.5h", 90 * time.Minute},
		{"30d", 30 * day},
		{"03d", 3 * day},
		{"+3d", 3 * day},
		{"1d12h", day + 12*time.Hour},
		{"2d30m10s", 2*day + 30*time.Minute + 10*time.Second},
		{"-1d", -day},
		{"-1d12h", -day - 12*time.Hour},
		{"-12h", -12 * time.Hour},
		{"100000d", 100_000 * day},
	} {
		got, err := ParseAge(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseAge(%q) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "d", "30", "1.5d", "30 d", "d30", "100001d", "-100001d", "99999999999d", "1d2", "1dd", "1x", "30days", "1d-"} {
		if got, err := ParseAge(in); err == nil {
			t.Errorf("ParseAge(%q) = %s, want an error", in, got)
		} else if !strings.Contains(err.Error(), in) {
			t.Errorf("ParseAge(%q): error %q does not quote the input", in, err)
		}
	}
}

// FuzzParseAge checks that ParseAge agrees with time.ParseDuration on
// strings without days and that days count 24 hours each.
func FuzzParseAge(f *testing.F) {
	for _, s := range []string{"30d", "1d12h", "12h", "-1d", "0", "1d-2h", "5ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseAge(s)
		if i := strings.IndexByte(s, 'd'); i <= 0 {
			want, werr := time.ParseDuration(s)
			if (err == nil) != (werr == nil) || err == nil && got != want {
				t.Fatalf("ParseAge(%q) = %s, %v; time.ParseDuration says %s, %v", s, got, err, want, werr)
			}
			return
		}
		if err != nil {
			return
		}
		days, rest, _ := strings.Cut(s, "d")
		if rest == "" {
			if got%(24*time.Hour) != 0 {
				t.Fatalf("ParseAge(%q) = %s, not whole days", s, got)
			}
			return
		}
		if _, perr := ParseAge(days + "d"); perr != nil {
			t.Fatalf("ParseAge(%q) = %s, but its days %qd do not parse: %v", s, got, days, perr)
		}
	})
}
