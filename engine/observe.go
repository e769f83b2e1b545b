package engine

import (
	"context"
	"encoding/json"
	"sort"
	"time"
)

// This file holds what the engine tells observers (metrics, notifications,
// the live stream) beyond the run records: the extra fields of the
// hook.run.* events and the overdue check.

// ToolUse is one tool call of a run's model stage, as run events,
// metrics and notifications report it.
type ToolUse struct {
	Tool    string `json:"tool"`
	Outcome string `json:"outcome"` // ok, error or denied (or what the transcript says)
}

// ToolChain lists a run's tool calls, in order, from its transcript
// (Run.ToolCalls). It reads the model stage's transcript (an object whose
// "rounds" each hold "tool_calls"), a JSON array of entries, or an object
// whose "tool_calls", "calls", "entries" or "messages" field is one. An
// entry is a tool call when it has a "tool" field, or a "name" and a
// "type", "kind" or "role" of tool or tool_call. Its outcome is "denied" when "denied" is
// true, "error" when "error" is set (a non-empty string or true) or
// "is_error" is true, else its "outcome" or "status" string, else "ok".
func ToolChain(transcript json.RawMessage) []ToolUse {
	if len(transcript) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(transcript, &v); err != nil {
		return nil
	}
	entries, _ := v.([]any)
	if obj, ok := v.(map[string]any); ok {
		for _, k := range []string{"tool_calls", "calls", "entries", "messages"} {
			if l, ok := obj[k].([]any); ok {
				entries = l
				break
			}
		}
		// The model stage's transcript: rounds, each with its tool calls.
		if rounds, ok := obj["rounds"].([]any); ok && entries == nil {
			for _, r := range rounds {
				if r, ok := r.(map[string]any); ok {
					if l, ok := r["tool_calls"].([]any); ok {
						entries = append(entries, l...)
					}
				}
			}
		}
	}
	var out []ToolUse
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if u, ok := toolUse(m); ok {
			out = append(out, u)
		}
	}
	return out
}

func toolUse(m map[string]any) (ToolUse, bool) {
	name, _ := m["tool"].(string)
	if name == "" {
		kind := ""
		for _, k := range []string{"type", "kind", "role"} {
			if s, ok := m[k].(string); ok && s != "" {
				kind = s
				break
			}
		}
		if kind != "tool" && kind != "tool_call" {
			return ToolUse{}, false
		}
		name, _ = m["name"].(string)
	}
	if name == "" {
		return ToolUse{}, false
	}
	u := ToolUse{Tool: name, Outcome: "ok"}
	switch {
	case m["denied"] == true:
		u.Outcome = "denied"
	case m["error"] == true, m["is_error"] == true:
		u.Outcome = "error"
	default:
		if s, ok := m["error"].(string); ok && s != "" {
			u.Outcome = "error"
		} else if s, ok := m["outcome"].(string); ok && s != "" {
			u.Outcome = s
		} else if s, ok := m["status"].(string); ok && s != "" {
			u.Outcome = s
		}
	}
	return u, true
}

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
	if run.Tokens.Known {
		data["tokens"] = map[string]any{
			"prompt": run.Tokens.Prompt, "completion": run.Tokens.Completion, "cached": run.Tokens.Cached,
		}
	}
	if chain := ToolChain(run.ToolCalls); len(chain) > 0 {
		tools := make([]any, len(chain))
		for i, u := range chain {
			tools[i] = map[string]any{"tool": u.Tool, "outcome": u.Outcome}
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
