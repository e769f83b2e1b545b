package suggest

import "testing"

func TestClosest(t *testing.T) {
	t.Parallel()
	keys := []string{"every", "cron", "event", "watch", "at", "schedule", "steps", "prompt", "nightly", "list", "runs"}
	for s, want := range map[string]string{
		"evrey":   "every", // a transposition is one edit
		"stpes":   "steps",
		"nigthly": "nightly",
		"lst":     "list",
		"Prompt":  "prompt", // case alone
		"promtp":  "prompt",
		"crno":    "cron",
		"xyz":     "", // nothing close
		"sched":   "", // too far for its length
		"":        "",
	} {
		if got := Closest(s, keys); got != want {
			t.Errorf("Closest(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestDistance(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3},
		{"ab", "ba", 1}, {"abc", "acb", 1}, {"ca", "abc", 3}, // OSA: no edit of a transposed pair
		{"same", "same", 0},
	} {
		if got := Distance(c.a, c.b); got != c.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
		if got := Distance(c.b, c.a); got != c.d {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.d)
		}
	}
}
