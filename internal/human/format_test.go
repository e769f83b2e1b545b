package human

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestExact(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 10 * time.Minute: "10m", time.Hour: "1h", 90 * time.Minute: "1h30m", time.Hour + 30*time.Second: "1h30s",
		2*time.Hour + 5*time.Minute + 7*time.Second: "2h5m7s", 90 * time.Second: "1m30s", 1500 * time.Millisecond: "1.5s",
		250 * time.Millisecond: "250ms", 48 * time.Hour: "48h", 10 * time.Second: "10s",
	} {
		if got := Exact(d); got != want {
			t.Errorf("Exact(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 340*time.Millisecond + 400*time.Microsecond: "340ms", 850 * time.Millisecond: "850ms",
		1234 * time.Millisecond: "1.2s", 12300 * time.Millisecond: "12s",
		42*time.Second + 400*time.Millisecond: "42s", 3*time.Minute + 5*time.Second + 300*time.Millisecond: "3m5s",
		2*time.Hour + 14*time.Minute + 10*time.Second: "2h14m", 10 * time.Minute: "10m", -1500 * time.Millisecond: "-1.5s",
		50 * time.Hour: "50h", 250*time.Microsecond + 400*time.Nanosecond: "250µs", 999 * time.Microsecond: "999µs",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestRelative(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "now", -999 * time.Millisecond: "now", 5 * time.Minute: "in 5m", -3 * time.Hour: "3h ago",
		-(3*time.Hour + 10*time.Minute + 20*time.Second): "3h10m ago", 42*time.Second + 600*time.Millisecond: "in 43s",
		-50 * time.Hour: "50h ago",
	} {
		if got := Relative(d); got != want {
			t.Errorf("Relative(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 512: "512 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 20 << 20: "20.0 MiB",
		3435973837: "3.2 GiB", -2048: "-2.0 KiB", math.MaxInt64: "8.0 EiB", math.MinInt64 + 1: "-8.0 EiB",
	} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

// FuzzFormat: the formatters end for any input and say something.
func FuzzFormat(f *testing.F) {
	f.Add(int64(0))
	f.Add(int64(math.MinInt64))
	f.Add(int64(1500 * time.Millisecond))
	f.Fuzz(func(t *testing.T, n int64) {
		for _, s := range []string{Exact(time.Duration(n)), Duration(time.Duration(n)), Relative(time.Duration(n)), Size(n)} {
			if s == "" || strings.Contains(s, "%!") {
				t.Fatalf("%d: %q", n, s)
			}
		}
	})
}
