package triggers

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/human"
)

// interval fires every d of elapsed time, at the slots origin + k*d with
// the origin fixed at the Unix epoch, so that a restart never shifts them.
type interval struct {
	d time.Duration
}

func compileInterval(t *engine.Trigger) (engine.Schedule, error) {
	if t.Every <= 0 {
		return nil, fmt.Errorf("must be > 0 (got %s)", human.Exact(t.Every))
	}
	return interval{t.Every}, nil
}

// Next returns the first slot strictly after t, in t's location.
func (s interval) Next(t time.Time) time.Time {
	t = t.Round(0)
	d := int64(s.d)
	// r = (nanoseconds since the epoch) mod d, computed without overflow
	// for any t: ((sec mod d) * 1e9 + nsec) mod d.
	sec := t.Unix() % d
	if sec < 0 {
		sec += d
	}
	hi, lo := bits.Mul64(uint64(sec), uint64(time.Second))
	lo, carry := bits.Add64(lo, uint64(t.Nanosecond()), 0)
	r := bits.Rem64(hi+carry, lo, uint64(d))
	return t.Add(time.Duration(uint64(d) - r))
}
