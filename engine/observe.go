package engine

import (
	"context"
	"sort"
	"time"
)

// This file holds what the engine tells observers (metrics, notifications,
// the live stream) beyond the run records: the extra fields of the
// hook.run.* events and the overdue check.

// runEventExtras adds to a run event's payload what observers use: the
// slot, the start time, token counts and the tool chain.
func runEventExtras(run *Run, data map[string]any) {
	if !run.Slot.IsZero() {
		data["slot"] = run.Slot.UTC().Format(time.RFC3339Nano)
	}
	if !run.StartedAt.IsZero() {
		data["started_at"] = run.StartedAt.UTC().Format(time.RFC3339Nano)
	}
	if run.Gate != "" {
		data["gate"] = run.Gate
	}
	if run.Cause != "" {
		data["cause"] = string(run.Cause)
	}
	if n := run.StepErrors(); n > 0 {
		data["step_errors"] = n
	}
	if run.Truncated {
		data["truncated"] = true
	}
	if run.CheckFailed != "" {
		data["check_failed"] = run.CheckFailed
	}
	if run.Attempt > 0 {
		data["attempt"], data["attempts"] = run.Attempt, run.Attempts
	}
	if run.RetryOf != "" {
		data["retry_of"] = run.RetryOf
	}
	if run.Retry != nil {
		data["retry"] = map[string]any{"run_id": run.Retry.RunID, "attempt": run.Retry.Attempt,
			"at": run.Retry.At.UTC().Format(time.RFC3339Nano)}
	}
	if run.Tokens.Known {
		data["tokens"] = map[string]any{
			"prompt": run.Tokens.Prompt, "completion": run.Tokens.Completion, "cached": run.Tokens.Cached,
		}
	}
	if len(run.Tools) > 0 {
		tools := make([]any, len(run.Tools))
		for i := range run.Tools {
			u := &run.Tools[i]
			tools[i] = map[string]any{"tool": u.Label(), "outcome": string(u.Outcome)}
		}
		data["tools"] = tools
	}
}

// lateness is how long after its jittered fire time a scheduled run
// started, or false for a run that is not a scheduled one.
func lateness(h *Hook, run *Run) (time.Duration, bool) {
	if run.Trigger != "schedule" || run.Slot.IsZero() || run.StartedAt.IsZero() || h.Trigger.Schedule == nil {
		return 0, false
	}
	due := dueAt(h, run.Slot)
	return run.StartedAt.Sub(due), true
}

// Overdue lists the periodic hooks (enabled, not paused) that should have
// started a run more than grace ago and have not: the loop has not fired
// their due slot, or a gate refused their latest slot and the first slot
// after their last start is more than grace past. Sorted by name.
func (e *Engine) Overdue(ctx context.Context, grace time.Duration) ([]string, error) {
	var out []string
	err := e.do(ctx, func(s *state) {
		now := s.cfg.Clock.Now()
		for name, ent := range s.hooks {
			h := ent.hook
			if !h.Enabled || ent.paused || !h.Trigger.Periodic() || h.Trigger.Schedule == nil {
				continue
			}
			late := !ent.due.IsZero() && now.Sub(ent.due) > grace
			if !late && ent.lastMissed {
				// Due since the first slot after the last start (or, for a
				// hook that never ran, since its latest slot).
				slot := ent.lastSlot
				if !ent.lastStart.IsZero() {
					slot = h.Trigger.Schedule.Next(ent.lastStart)
				}
				if !slot.IsZero() {
					due := dueAt(h, slot)
					late = now.Sub(due) > grace
				}
			}
			if late {
				out = append(out, name)
			}
		}
	})
	sort.Strings(out)
	return out, err
}
