package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/hookd/hookd/internal/human"
)

// Rate caps a hook's starts: at most N in any Window (rate: 10/1h).
type Rate struct {
	N      int
	Window time.Duration
}

// GateRate refuses a trigger of a hook that started Rate.N runs in the
// last Rate.Window.
const GateRate = "rate"

// loadStartsNow is loadStarts on the loop, within Config.StoreTimeout.
func (s *state) loadStartsNow(ent *entry, now time.Time) (err error) {
	ctx, cancel := s.e.storeCtx(context.Background())
	defer cancel()
	s.onStore(func() { err = s.loadStarts(ctx, ent, now) })
	return err
}

// loadStarts fills ent's rate window from the store.
func (s *state) loadStarts(ctx context.Context, ent *entry, now time.Time) error {
	r := ent.hook.Rate
	if r.N <= 0 {
		return nil
	}
	starts, err := s.cfg.Store.StartsSince(ctx, ent.hook.Name, now.Add(-r.Window))
	if err != nil {
		return fmt.Errorf("hook %s: load rate window: %w", ent.hook.Name, err)
	}
	ent.starts = starts
	return nil
}

// rateGate refuses run when its hook's rate is spent, or returns nil.
func (s *state) rateGate(ent *entry, now time.Time) *GateError {
	r := ent.hook.Rate
	if r.N <= 0 {
		return nil
	}
	from := now.Add(-r.Window)
	i := 0
	for i < len(ent.starts) && ent.starts[i].Before(from) {
		i++
	}
	ent.starts = ent.starts[i:]
	if len(ent.starts) < r.N {
		return nil
	}
	next := ent.starts[0].Add(r.Window).Sub(now)
	starts := fmt.Sprintf("%d starts", len(ent.starts))
	if len(ent.starts) == 1 {
		starts = "1 start"
	}
	// The window as the file wrote it (1h, not Go's 1h0m0s).
	return &GateError{Gate: GateRate, Hook: ent.hook.Name, Remaining: next,
		Detail: fmt.Sprintf("%s in the last %s (rate: %d/%s); the next is allowed in %s",
			starts, human.Exact(r.Window), r.N, human.Exact(r.Window), human.Duration(next))}
}
