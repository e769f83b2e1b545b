package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/engine"
)

// runTools runs the tool calls of one answer, up to ToolParallelism at
// once, and returns their records and the tool messages answering them, in
// the order of the calls.
func (a *Agent) runTools(ctx context.Context, env *engine.ToolEnv, ts *toolset, calls []ToolRequest, redact func(string) string, round int) ([]*ToolCall, []Message) {
	recs := make([]*ToolCall, len(calls))
	replies := make([]Message, len(calls))
	one := func(i int) {
		tc := calls[i]
		var content string
		if i >= DefaultMaxToolCallsSeen {
			recs[i] = &ToolCall{ID: tc.ID, Name: tc.Function.Name, Tool: ts.qualified(tc.Function.Name), Arguments: tc.Function.Arguments,
				Outcome: engine.ToolNotRun, Error: fmt.Sprintf("not run: more than %d tool calls in one answer", DefaultMaxToolCallsSeen)}
			content = "error: " + recs[i].Error
		} else {
			recs[i], content = a.runTool(ctx, env, ts, tc, redact)
		}
		replies[i] = Message{Role: RoleTool, ToolCallID: tc.ID, Content: content}
		publishTool(env, round, recs[i])
	}
	if len(calls) == 1 {
		one(0)
		return recs, replies
	}
	sem := make(chan struct{}, a.opts.ToolParallelism)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			one(i)
		}()
	}
	wg.Wait()
	return recs, replies
}

// runTool runs one tool call. Whatever goes wrong — an unknown tool,
// arguments that are not JSON or do not fit the schema, a tool error or
// panic — becomes an error result for the model, never a failed run.
func (a *Agent) runTool(ctx context.Context, env *engine.ToolEnv, ts *toolset, tc ToolRequest, redact func(string) string) (*ToolCall, string) {
	clk := a.opts.Clock
	start := clk.Mono()
	rec := &ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments, Outcome: engine.ToolOK, Started: clk.Now()}
	defer func() { rec.Duration = clock.Since(clk, start) }()
	errResult := func(msg string) (*ToolCall, string) {
		if rec.Outcome == engine.ToolOK {
			rec.Outcome = engine.ToolError
		}
		rec.Error = redact(msg)
		return rec, "error: " + rec.Error
	}
	bt := ts.byName[tc.Function.Name]
	if bt == nil {
		rec.Outcome = engine.ToolUnknown
		if len(ts.names) == 0 {
			return errResult(fmt.Sprintf("unknown tool %q: no tools are available in this run", tc.Function.Name))
		}
		return errResult(fmt.Sprintf("unknown tool %q; the tools are: %s", tc.Function.Name, strings.Join(ts.names, ", ")))
	}
	rec.Tool, rec.Server = bt.qualified, bt.server
	args := strings.TrimSpace(tc.Function.Arguments)
	if args == "" {
		args = "{}"
	}
	if canon, ok := engine.CanonicalJSON([]byte(args)); ok {
		args = string(canon)
	}
	if err := bt.schema.ValidateJSON([]byte(args)); err != nil {
		return errResult(err.Error())
	}
	if env.Replay != nil {
		return replayTool(env.Replay, bt, args, rec, errResult)
	}
	lc := env.Lifecycle
	if lc.Active(engine.PointToolCallBefore) {
		o := lc.Call(ctx, engine.PointToolCallBefore, &engine.Payload{
			Hook: env.Hook, RunID: env.RunID, ToolName: bt.qualified, ToolCallID: tc.ID, ToolInput: json.RawMessage(args),
		})
		if o.Cancelled {
			rec.DeniedBy, rec.Outcome = o.By, engine.ToolDenied
			if env.Publish != nil {
				env.Publish(engine.EventToolDenied, map[string]any{
					"hook": hookName(env.Hook), "run_id": env.RunID, "tool": bt.qualified,
					"reason": redact(o.Reason), "handler": o.By,
				})
			}
			return errResult(fmt.Sprintf("denied by %s: %s", o.By, o.Reason))
		}
		if v, ok := o.Changes[engine.ChangeToolInput]; ok {
			by := o.ChangedBy[engine.ChangeToolInput]
			amended, err := engine.ToolInputJSON(v)
			if err != nil {
				return errResult(fmt.Sprintf("arguments amended by %s: %s", by, err))
			}
			if err := bt.schema.ValidateJSON(amended); err != nil {
				return errResult(fmt.Sprintf("arguments amended by %s: %s", by, err))
			}
			args, rec.InputAmendedBy, rec.AmendedArguments = string(amended), by, string(amended)
		}
	}
	called := clk.Mono()
	out, err := callSafely(ctx, bt.tool, env, []byte(args))
	took := clock.Since(clk, called)
	// Redacted before a tool:call:after handler sees it, as a step's
	// result is before step:after: a handler is a program the secrets
	// were not given to. What a handler puts in its place is redacted
	// too.
	out = redact(out)
	if lc.Active(engine.PointToolCallAfter) {
		p := &engine.Payload{Hook: env.Hook, RunID: env.RunID, ToolName: bt.qualified, ToolCallID: tc.ID, ToolInput: json.RawMessage(args),
			ToolResult: out, ToolTime: took}
		if err != nil {
			p.ToolError = redact(err.Error())
		}
		o := lc.Call(ctx, engine.PointToolCallAfter, p)
		if o.Cancelled {
			rec.ResultAmendedBy, rec.Outcome = o.By, engine.ToolBlocked
			return errResult(fmt.Sprintf("result blocked by %s: %s", o.By, o.Reason))
		}
		if v, ok := o.Changes[engine.ChangeToolResult]; ok {
			if s, isStr := v.(string); isStr {
				out, err, rec.ResultAmendedBy = redact(s), nil, o.ChangedBy[engine.ChangeToolResult]
			} else if b, jerr := engine.ChangeJSON(v); jerr == nil {
				out, err, rec.ResultAmendedBy = redact(string(b)), nil, o.ChangedBy[engine.ChangeToolResult]
			}
		}
	}
	if err != nil {
		return errResult(err.Error())
	}
	rec.ResultBytes = len(out)
	var cut bool
	out, cut = capText(out, a.opts.MaxResult)
	rec.Truncated = cut
	rec.Result, _ = capText(out, a.opts.RecordResult)
	return rec, out
}

// replayTool answers a replay's tool call from the recorded run: what
// the same call got there, or a tool error when the record has none (the
// tool never runs).
func replayTool(recorded *engine.RecordedTools, bt *boundTool, args string, rec *ToolCall, errResult func(string) (*ToolCall, string)) (*ToolCall, string) {
	u, ok := recorded.Answer(bt.qualified, args)
	if !ok {
		rec.Outcome = engine.ToolNotRecorded
		return errResult("not recorded: the recorded run has no result of this call with these arguments " +
			"(a replay answers tool calls from the record; hookd replay --live-tools runs them)")
	}
	if u.Error != "" {
		rec.Outcome = u.Outcome
		return errResult(u.Error)
	}
	rec.Result, rec.ResultBytes, rec.Truncated = u.Result, u.ResultBytes, u.Truncated
	return rec, u.Result
}

func hookName(h *engine.Hook) string {
	if h == nil {
		return ""
	}
	return h.Name
}

// callSafely turns a panicking tool into a tool error.
func callSafely(ctx context.Context, t engine.Tool, env *engine.ToolEnv, args []byte) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("tool %s panicked: %v", t.Name(), p)
		}
	}()
	return t.Call(ctx, env, args)
}

// capText keeps at most limit bytes of s: its head and tail around a
// marker saying how much was left out, cut on character boundaries.
func capText(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	keep := max(limit-len(fmt.Sprintf("\n[hookd: %d bytes truncated]\n", len(s))), 0)
	head := keep * 3 / 4
	tail := keep - head
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	ts := len(s) - tail
	for ts < len(s) && !utf8.RuneStart(s[ts]) {
		ts++
	}
	return s[:head] + fmt.Sprintf("\n[hookd: %d bytes truncated]\n", ts-head) + s[ts:], true
}
