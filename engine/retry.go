package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/hookd/hookd/internal/backoff"
)

// RetryPolicy is a hook's retry: what makes a run be run again, how many
// times and after how long. The zero value retries nothing.
type RetryPolicy struct {
	// Attempts is the number of runs in all, the first included: 3 means
	// the first run and at most two retries. 0 or 1 means no retry.
	Attempts int
	// Backoff is the delay before the first retry; it doubles before each
	// later one, up to MaxBackoff, and then loses up to a fifth of itself
	// to jitter (so retries of many hooks do not line up).
	Backoff    time.Duration
	MaxBackoff time.Duration
	// On lists the final statuses retried: StatusFailed and/or
	// StatusInterrupted.
	On []Status
	// Notify says which attempts notifications report: RetryNotifyFinal
	// (default: only the last, the one no retry follows) or
	// RetryNotifyEach.
	Notify string
}

// What retry.notify may say.
const (
	RetryNotifyFinal = "final"
	RetryNotifyEach  = "each"
)

// Defaults of a retry: block that leaves them out.
const (
	DefaultRetryBackoff    = 30 * time.Second
	DefaultRetryMaxBackoff = 10 * time.Minute
)

// MinRetryBackoff is the least backoff and max_backoff a hook may set
// (the loader refuses less): with backoff: 1ns, a run that fails at once
// was retried attempts-1 times in the same instant.
const MinRetryBackoff = time.Second

// RetryStatuses are the statuses retry.on may name.
var RetryStatuses = []Status{StatusFailed, StatusInterrupted}

// TriggerRetry is the trigger of a run that retries a failed one.
const TriggerRetry = "retry"

// Enabled reports whether the policy retries anything.
func (p RetryPolicy) Enabled() bool { return p.Attempts > 1 && len(p.On) > 0 }

// Delay is the backoff before attempt (2 for the first retry), with
// jitter j in [0, 1): Backoff·2^(attempt-2), at most MaxBackoff, less up
// to a fifth of it.
func (p RetryPolicy) Delay(attempt int, j float64) time.Duration {
	b := backoff.Policy{Base: p.Backoff, Max: p.MaxBackoff, Jitter: 0.2}
	if b.Base <= 0 {
		b.Base = DefaultRetryBackoff
	}
	if b.Max <= 0 {
		b.Max = DefaultRetryMaxBackoff
	}
	return b.Delay(attempt-1, j)
}

// retries reports whether a run that ended with status is retried, as
// attempt of the policy's Attempts.
func (p RetryPolicy) retries(status Status, attempt int) bool {
	return p.Enabled() && max(attempt, 1) < p.Attempts && slices.Contains(p.On, status)
}

// RetryPlan is the retry scheduled for a run that failed: the run it will
// be (its id, its attempt) and when. It is stored with the failed run and,
// until the retry fires, in the store's pending retries, so a restart keeps
// it.
type RetryPlan struct {
	RunID   string    `json:"run_id"`  // the id the retry's run will have
	Attempt int       `json:"attempt"` // its attempt number (2 for the first retry)
	At      time.Time `json:"at"`      // when it is due
}

// PendingRetry is a retry waiting for its time, as the store keeps it.
type PendingRetry struct {
	RetryPlan
	Hook      string
	RetryOf   string // the first run of the chain
	Attempts  int    // the policy's Attempts when it was planned
	Event     json.RawMessage
	EventType string
	Depth     int
	// TraceParent is the caller's trace the failed run continued: the
	// retry continues it too. TraceLink is the span of the run that
	// started the failed run (TraceLinks.StartedBy): the retry links to
	// it too.
	TraceParent TraceParent
	TraceLink   TraceParent
}

// planRetry decides, on the run's goroutine before its final record is
// stored, whether run is retried; if so it stores the pending retry and
// sets run.Retry. It returns the pending retry for the loop, or nil.
func (e *Engine) planRetry(ctx context.Context, h *Hook, run *Run, now time.Time) *PendingRetry {
	p := newRetry(h, run, now)
	if p == nil {
		return nil
	}
	cp := *p
	if err := e.persist(ctx, "pending retry", h.Name, run.ID, func(ctx context.Context) error { return e.cfg.Store.AddRetry(ctx, &cp) }); err != nil {
		e.log.Error("store pending retry; the run is not retried", "hook", h.Name, "run", run.ID, "err", err)
		return nil
	}
	plan := p.RetryPlan
	run.Retry = &plan
	return p
}

// newRetry is the retry of run, which ended with its status at now, when
// h's policy retries it; else nil.
func newRetry(h *Hook, run *Run, now time.Time) *PendingRetry {
	if !h.Retry.retries(run.Status, run.Attempt) {
		return nil
	}
	attempt := max(run.Attempt, 1) + 1
	p := &PendingRetry{
		RetryPlan: RetryPlan{RunID: NewID(), Attempt: attempt, At: now.Add(h.Retry.Delay(attempt, rand.Float64()))},
		Hook:      h.Name, RetryOf: run.ID, Attempts: h.Retry.Attempts,
		Event: run.Event, EventType: run.EventType, Depth: run.Depth,
		TraceParent: run.TraceParent, TraceLink: run.TraceLinks.StartedBy,
	}
	if run.RetryOf != "" {
		p.RetryOf = run.RetryOf
	}
	return p
}

// retryQueue holds the pending retries the loop fires when due, earliest
// first.
type retryQueue []*PendingRetry

func (q *retryQueue) add(p *PendingRetry) {
	i := sort.Search(len(*q), func(i int) bool { return (*q)[i].At.After(p.At) })
	*q = slices.Insert(*q, i, p)
}

// restoreRetries loads the pending retries a previous hookd left. One
// whose run exists already fired (hookd stopped before forgetting it),
// unless its record is queued (storedWaits).
func (s *state) restoreRetries(ctx context.Context) error {
	pending, err := s.cfg.Store.PendingRetries(ctx)
	if err != nil {
		return fmt.Errorf("load pending retries: %w", err)
	}
	for _, p := range pending {
		if r, err := s.cfg.Store.GetRun(ctx, p.RunID); err == nil {
			if !s.storedWaits(r, storedFollow{what: "pending retry", hook: p.Hook, del: s.cfg.Store.DeleteRetry}, false) {
				s.forgetRetry(p)
			}
			continue
		}
		s.retries.add(p)
	}
	return nil
}

// retryOf returns the retry among pending that follows run r: one of its
// chain with a later attempt; or nil.
func retryOf(pending []*PendingRetry, r *Run) *PendingRetry {
	chain := r.RetryOf
	if chain == "" {
		chain = r.ID
	}
	for _, p := range pending {
		if p.Hook == r.Hook && p.RetryOf == chain && p.Attempt > max(r.Attempt, 1) {
			return p
		}
	}
	return nil
}

// fireRetries fires the retries that are due, through the gates but the
// cooldown. One the store_stalled gate refused stays, held, until the
// store takes writes again (unhold).
func (s *state) fireRetries(now time.Time) {
	if s.stopping() || !s.schedules() {
		return
	}
	for i := 0; i < len(s.retries) && !s.retries[i].At.After(now); {
		p := s.retries[i]
		if s.held[p.RunID] {
			i++
			continue
		}
		s.retries = slices.Delete(s.retries, i, i+1)
		ent := s.hooks[p.Hook]
		if ent == nil {
			s.e.log.Info("retry dropped: its hook no longer exists", "hook", p.Hook, "retry_of", p.RetryOf)
			s.forgetRetry(p)
			continue
		}
		// Forgotten once its run's start is recorded (storedFollow).
		res, held := s.triggerStored(ent, trig{reason: TriggerRetry, raw: p.Event, eventType: p.EventType, depth: p.Depth, force: true,
			traceParent: p.TraceParent, traceLink: p.TraceLink, retry: p, note: fmt.Sprintf("attempt %d of %d: retries run %s", p.Attempt, p.Attempts, p.RetryOf)},
			p.RunID, storedFollow{what: "pending retry", hook: p.Hook, del: s.cfg.Store.DeleteRetry})
		if held {
			s.retries = slices.Insert(s.retries, i, p)
			s.held[p.RunID] = true
			i++
			s.e.log.Warn("retry held: the store is stalled; it fires once the store takes writes again", "hook", p.Hook, "retry_of", p.RetryOf, "attempt", p.Attempt, "retry", p.RunID)
			continue
		}
		s.e.log.Info("retrying a failed run", "hook", p.Hook, "retry_of", p.RetryOf, "attempt", p.Attempt, "run", res.run.ID, "err", res.err)
	}
}

func (s *state) forgetRetry(p *PendingRetry) {
	s.await(s.e.wr.submit("pending retry's removal", p.Hook, p.RunID,
		func(ctx context.Context) error { return s.cfg.Store.DeleteRetry(ctx, p.RunID) }))
}

// nextRetry is when the earliest pending retry not held is due, or zero.
func (s *state) nextRetry() time.Time {
	for _, p := range s.retries {
		if !s.held[p.RunID] {
			return p.At
		}
	}
	return time.Time{}
}

// retryInfos lists the pending retries, earliest first.
func (s *state) retryInfos() []RetryInfo {
	out := make([]RetryInfo, 0, len(s.retries))
	for _, p := range s.retries {
		out = append(out, RetryInfo{Hook: p.Hook, RunID: p.RunID, RetryOf: p.RetryOf, Attempt: p.Attempt, Attempts: p.Attempts, At: p.At})
	}
	return out
}

// RetryInfo is a pending retry as `hookd status` and the API show it.
type RetryInfo struct {
	Hook     string    `json:"hook"`
	RunID    string    `json:"run_id"`
	RetryOf  string    `json:"retry_of"`
	Attempt  int       `json:"attempt"`
	Attempts int       `json:"attempts"`
	At       time.Time `json:"at"`
}
