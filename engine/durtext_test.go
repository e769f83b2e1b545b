package engine_test

import (
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

func TestDurationText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 10 * time.Minute: "10m", time.Hour: "1h", 90 * time.Minute: "1h30m", time.Hour + 30*time.Second: "1h30s",
		2*time.Hour + 5*time.Minute + 7*time.Second: "2h5m7s", 90 * time.Second: "1m30s", 1500 * time.Millisecond: "1.5s",
		250 * time.Millisecond: "250ms", 48 * time.Hour: "48h", 10 * time.Second: "10s",
	} {
		if got := engine.DurationText(d); got != want {
			t.Errorf("DurationText(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestElapsedText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 340*time.Millisecond + 400*time.Microsecond: "340ms", 1234 * time.Millisecond: "1.2s",
		42*time.Second + 400*time.Millisecond: "42s", 3*time.Minute + 5*time.Second + 300*time.Millisecond: "3m5s",
		2*time.Hour + 14*time.Minute + 10*time.Second: "2h14m", 10 * time.Minute: "10m", -1500 * time.Millisecond: "-1.5s",
	} {
		if got := engine.ElapsedText(d); got != want {
			t.Errorf("ElapsedText(%s) = %q, want %q", d, got, want)
		}
	}
}
