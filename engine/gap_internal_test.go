package engine

import (
	"testing"
	"time"
)

// TestLoopGapWhy: a missed record names what took the most of the
// stretch in which the loop did not look at the clock.
func TestLoopGapWhy(t *testing.T) {
	t.Parallel()
	const s = time.Second
	for _, c := range []struct {
		name string
		gap  loopGap
		want string
	}{
		{"suspended an hour", loopGap{wall: time.Hour + s, mono: s, slept: s}, "hookd was suspended or the clock jumped"},
		{"clock stepped while asleep", loopGap{wall: 8 * s, mono: s, slept: s}, "hookd was suspended or the clock jumped"},
		{"suspended, a little store wait", loopGap{wall: time.Hour, mono: 3 * s, slept: s, store: 2 * s}, "hookd was suspended or the clock jumped"},
		{"records waited for, one after another", loopGap{wall: 7700 * time.Millisecond, mono: 7700 * time.Millisecond, slept: 500 * time.Millisecond, store: 7200 * time.Millisecond},
			"the store was slow or stalled (hookd waited 7.2s for it)"},
		{"store wait with a short clock step", loopGap{wall: 12 * s, mono: 9 * s, slept: s, store: 8 * s}, "the store was slow or stalled (hookd waited 8s for it)"},
		{"busy otherwise", loopGap{wall: 5 * s, mono: 5 * s, slept: 200 * time.Millisecond, store: 300 * time.Millisecond},
			"hookd's loop was held up (it looked at the clock again only 5s later)"},
		{"woken late", loopGap{wall: 3 * s, mono: 3 * s, slept: 3 * s}, "hookd's loop was held up (it looked at the clock again only 3s later)"},
	} {
		if got := c.gap.why(); got != c.want {
			t.Errorf("%s: %+v: why() = %q, want %q", c.name, c.gap, got, c.want)
		}
	}
}
