package triggers

import (
	"errors"
	"time"

	"github.com/hookd/hookd/engine"
)

// once is the schedule of a one-shot (at) trigger: one slot.
type once struct {
	at time.Time
}

func compileAt(t *engine.Trigger) (engine.Schedule, error) {
	if t.At.IsZero() {
		return nil, errors.New("needs a time")
	}
	if t.Location == nil {
		t.Location = t.At.Location()
	}
	return once{t.At}, nil
}

// Next returns the slot when it is after t, else the zero time: a
// one-shot has no slot after its one.
func (s once) Next(t time.Time) time.Time {
	if t.Before(s.at) {
		return s.at.In(t.Location())
	}
	return time.Time{}
}
