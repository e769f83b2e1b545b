package agent

import (
	"github.com/hookd/hookd/engine"
)

// publishRound publishes hook.llm.round for a model call that ended (or
// that a handler answered): a progress event, streamed to watchers and
// never dispatched to hooks.
func (a *Agent) publishRound(env *engine.ToolEnv, round int, rd *Round, toolCalls int) {
	if env.Publish == nil {
		return
	}
	mc := &rd.Call
	data := map[string]any{
		"hook": hookName(env.Hook), "run_id": env.RunID, "round": round, "tool_calls": toolCalls,
	}
	switch {
	case mc.Duration > 0:
		data["duration_ms"] = mc.Duration.Milliseconds()
	case !mc.Started.IsZero():
		// A call that took no time of the model's (a handler answered):
		// since its start, a wall timestamp, never below zero.
		data["duration_ms"] = max(a.opts.Clock.Now().Sub(mc.Started), 0).Milliseconds()
	}
	if n := mc.Requests(); n > 1 {
		data["attempts"] = n
	}
	if mc.FinishReason != "" {
		data["finish_reason"] = mc.FinishReason
	}
	if u := mc.Usage; u != nil {
		data["tokens"] = map[string]any{"prompt": u.Prompt, "completion": u.Completion, "cached": u.Cached}
	}
	if mc.AnsweredBy != "" {
		data["answered_by"] = mc.AnsweredBy
	}
	if mc.Error != "" {
		data["error"] = mc.Error
	}
	env.Publish(engine.EventLLMRound, data)
}

// publishTool publishes hook.tool.called for a tool call that ended
// (ran, failed, or was denied, blocked or not run).
func publishTool(env *engine.ToolEnv, round int, rec *ToolCall) {
	if env.Publish == nil {
		return
	}
	data := map[string]any{
		"hook": hookName(env.Hook), "run_id": env.RunID, "round": round, "tool": rec.Label(),
		"outcome": string(rec.Outcome), "duration_ms": rec.Duration.Milliseconds(),
	}
	if rec.Error != "" {
		data["error"] = rec.Error
	}
	env.Publish(engine.EventToolCalled, data)
}
