package triggers

import (
	"testing"
	"time"
)

// TestLoadLocationOnce checks that a zone is read once and then shared,
// that the shared zone is the one time.LoadLocation reads, and that an
// unknown zone stays an error on every call.
func TestLoadLocationOnce(t *testing.T) {
	a, err := LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no tzdata for Europe/Berlin here: %v", err)
	}
	b, err := LoadLocation("Europe/Berlin")
	if err != nil || a != b {
		t.Fatalf("second load: %p, %v; want the first %p", b, err, a)
	}
	want, _ := time.LoadLocation("Europe/Berlin")
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	if got, exp := at.In(a).Format(time.RFC3339), at.In(want).Format(time.RFC3339); got != exp {
		t.Fatalf("cached zone says %s, time.LoadLocation %s", got, exp)
	}
	for range 2 {
		if loc, err := LoadLocation("Nowhere/Atlantis"); err == nil {
			t.Fatalf("unknown zone loaded: %v", loc)
		}
	}
}
