package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/engine"
)

// Defaults of the model stage.
const (
	DefaultMaxRounds        = 10
	DefaultMaxResult        = 32 << 10 // bytes of a tool result the model gets
	DefaultRecordResult     = 8 << 10  // bytes of a tool result the record keeps
	DefaultToolParallelism  = 4
	DefaultMaxToolCallsSeen = 32 // tool calls run per model answer; more are answered with an error
)

// Options configure an Agent.
type Options struct {
	// Chat is the model; required.
	Chat Chat
	// Defaults are hookd.yaml's llm settings; a hook's own override
	// them. The agent reads the loop's (max_rounds, tool_choice,
	// tool_choice_rounds, parallel_tool_calls, on_truncated); the Chat
	// reads its endpoint's.
	Defaults engine.LLMConfig
	// Servers resolves SERVER.TOOL entries (MCP); nil means none.
	Servers ToolServers
	// MaxResult caps a tool result sent to the model; RecordResult caps
	// what the record keeps of it. Head and tail are kept.
	MaxResult    int
	RecordResult int
	// ToolParallelism bounds the tool calls of one answer that run at
	// once (default 4).
	ToolParallelism int
	// Clock times the tool calls and the rounds (default
	// clock.System): the engine's clock.
	Clock clock.Clock
}

// Agent is the model stage: it implements engine.LLM by running the
// tool-calling loop over a Chat. It is safe for concurrent use.
type Agent struct {
	opts Options
}

var _ engine.LLM = (*Agent)(nil)

// New returns an agent. It panics without a Chat.
func New(opts Options) *Agent {
	if opts.Chat == nil {
		panic("agent: New without a Chat")
	}
	if opts.MaxResult <= 0 {
		opts.MaxResult = DefaultMaxResult
	}
	if opts.RecordResult <= 0 {
		opts.RecordResult = DefaultRecordResult
	}
	if opts.ToolParallelism <= 0 {
		opts.ToolParallelism = DefaultToolParallelism
	}
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	return &Agent{opts: opts}
}

// Settings are the loop's settings of a hook after resolution.
type Settings struct {
	MaxRounds  int
	ToolChoice string
	// ToolChoiceRounds is engine.ToolChoiceFirst or engine.ToolChoiceAll.
	ToolChoiceRounds string
	Parallel         *bool
	// OnTruncated is engine.TruncatedWarn or engine.TruncatedFail.
	OnTruncated string
}

// Resolve works out the loop's settings of a hook: the hook's llm block,
// then hookd.yaml's, then the defaults.
func (a *Agent) Resolve(h *engine.Hook) Settings {
	d := a.opts.Defaults
	var l engine.LLMConfig
	if h != nil {
		l = h.LLM
	}
	s := Settings{
		MaxRounds:        firstInt(l.MaxRounds, d.MaxRounds, DefaultMaxRounds),
		ToolChoice:       first(l.ToolChoice, d.ToolChoice),
		ToolChoiceRounds: first(l.ToolChoiceRounds, d.ToolChoiceRounds, engine.ToolChoiceFirst),
		Parallel:         l.ParallelToolCalls,
		OnTruncated:      first(l.OnTruncated, d.OnTruncated, engine.TruncatedWarn),
	}
	if s.Parallel == nil {
		s.Parallel = d.ParallelToolCalls
	}
	return s
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstInt(vals ...int) int {
	for _, v := range vals {
		if v > 0 {
			return v
		}
	}
	return 0
}

// Complete runs the model stage of req.Run: the rendered prompt (and the
// hook's system message) go to the model, which may call the hook's tools
// until it answers without tool calls or a limit is hit (max_rounds,
// budget.max_tokens_per_run, the run's timeout). It fills the run's
// Response, Tokens and transcript, also when it fails.
func (a *Agent) Complete(ctx context.Context, req *engine.LLMRequest) (err error) {
	run, h := req.Run, req.Hook
	env := req.Env
	if env == nil {
		env = &engine.ToolEnv{Hook: h, RunID: run.ID, Workdir: h.Workdir}
	}
	redact := env.Redact
	tr := &Transcript{System: req.System, Budget: h.Budget.MaxTokensPerRun, Rounds: []*Round{}}
	run.Tokens = engine.Tokens{}
	defer func() {
		if err != nil {
			tr.Error = err.Error()
			if tr.Stop == "" {
				tr.Stop = stopReason(ctx)
			}
		}
		tr.Tokens = run.Tokens
		tr.redact(redact)
		run.Tools = tr.tools()
		if b, merr := json.Marshal(tr); merr == nil {
			run.ToolCalls = b
		}
	}()

	set := a.Resolve(h)
	ep, err := a.opts.Chat.Endpoint(h)
	tr.Model, tr.BaseURL, tr.MaxRounds = ep.Model, ep.BaseURL, set.MaxRounds
	if err != nil {
		return err
	}
	ts, err := a.resolveTools(ctx, h)
	if err != nil {
		if _, ok := errors.AsType[*serverError](err); ok {
			run.Cause = engine.CauseMCPServer
		}
		return err
	}
	tr.Tools = ts.names
	tc := set.ToolChoice
	if h.LLM.ToolChoice == "" && len(ts.defs) == 0 {
		tc = "" // a default from hookd.yaml does not apply to a hook without tools
	}
	choice, force, err := ts.toolChoice(tc)
	if err != nil {
		return err
	}

	messages := make([]Message, 0, 8)
	if req.System != "" {
		messages = append(messages, Message{Role: RoleSystem, Content: req.System})
	}
	messages = append(messages, Message{Role: RoleUser, Content: run.Prompt})
	creq := &ChatRequest{Hook: h, Tools: ts.defs, ToolChoice: choice, ForceTool: force, Redact: redact}
	if set.Parallel != nil && len(ts.defs) > 0 {
		creq.ParallelToolCalls = set.Parallel
	}

	budget := int64(h.Budget.MaxTokensPerRun)
	// Usage is known until an answered call reports none: a call that
	// failed (a 401, a server that is down) spent nothing it could report.
	known := true
	run.Tokens.Known = true
	for round := 1; ; round++ {
		if used := run.Tokens.Prompt + run.Tokens.Completion; budget > 0 && used >= budget {
			tr.Stop, run.Cause = "budget", engine.CauseBudget
			return fmt.Errorf("budget: the run used %d tokens, its max_tokens_per_run of %d, before the model answered", used, budget)
		}
		rd := &Round{}
		tr.Rounds = append(tr.Rounds, rd)
		if lc := env.Lifecycle; lc.Active(engine.PointLLMCallBefore) {
			raw, _ := json.Marshal(messages)
			o := lc.Call(ctx, engine.PointLLMCallBefore, &engine.Payload{Hook: h, RunID: run.ID, Prompt: run.Prompt, Messages: raw, Round: round, Model: ep.Model})
			if o.Cancelled {
				ce := &engine.CancelError{Point: engine.PointLLMCallBefore, Outcome: o}
				rd.Call.Error, tr.Stop = ce.Error(), "cancelled"
				return ce
			}
			if v, ok := o.Changes[engine.ChangeAnswer]; ok {
				answer, isStr := v.(string)
				if !isStr {
					return fmt.Errorf("llm:call:before: %s answered with a %T, not a string", o.ChangedBy[engine.ChangeAnswer], v)
				}
				rd.Call.Started, rd.Call.AnsweredBy, rd.Call.Content, rd.Call.FinishReason =
					a.opts.Clock.Now(), o.ChangedBy[engine.ChangeAnswer], answer, "handler"
				run.Tokens.Known = known
				run.Response, tr.Answer, tr.Stop = answer, answer, "answer"
				a.publishRound(env, round, rd, 0)
				return nil
			}
			if v, ok := o.Changes[engine.ChangeMessages]; ok {
				by := o.ChangedBy[engine.ChangeMessages]
				b, err := engine.ChangeJSON(v)
				var amended []Message
				if err == nil {
					err = json.Unmarshal(b, &amended)
				}
				if err == nil && len(amended) == 0 {
					err = errors.New("no messages")
				}
				if err != nil {
					return fmt.Errorf("llm:call:before: messages amended by %s: %w", by, err)
				}
				messages, rd.Call.MessagesAmendedBy = amended, by
			}
		}
		creq.Messages = messages
		if round > 1 && forcing(choice, force) && set.ToolChoiceRounds != engine.ToolChoiceAll {
			creq.ToolChoice, creq.ForceTool = "", "" // the model may answer now that its tools ran
		}
		if creq.ToolChoice != "" || creq.ForceTool != "" {
			rd.Call.ToolChoice = tc
		}
		req.Model = ep.Model // the spend ledger prices the stage by it
		reply, err := a.opts.Chat.Chat(ctx, creq)
		if reply != nil {
			rd.Call.Started, rd.Call.Latency, rd.Call.Attempts, rd.Call.Model = reply.Started, reply.Latency, reply.Attempts, reply.Model
			rd.Call.Duration = reply.Duration
		}
		if err != nil {
			rd.Call.Error = err.Error()
			a.publishRound(env, round, rd, 0)
			return fmt.Errorf("model call %d: %w", round, err)
		}
		usage := reply.Usage
		rd.Call.Usage = usage
		if usage == nil {
			known = false
			if budget > 0 {
				tr.Notes = append(tr.Notes, fmt.Sprintf("model call %d: the server reported no usage; max_tokens_per_run cannot count it", round))
			}
		} else {
			run.Tokens.Prompt += usage.Prompt
			run.Tokens.Completion += usage.Completion
			run.Tokens.Cached += usage.Cached
		}
		run.Tokens.Known = known

		msg := reply.Message
		rd.Call.FinishReason = reply.FinishReason
		rd.Call.Content = msg.Content
		a.publishRound(env, round, rd, len(msg.ToolCalls))
		if lc := env.Lifecycle; lc.Active(engine.PointLLMCallAfter) {
			p := &engine.Payload{Hook: h, RunID: run.ID, Prompt: run.Prompt, Round: round, Model: rd.Call.Model, Response: msg.Content,
				Usage: &engine.Tokens{}}
			if usage != nil {
				*p.Usage = engine.Tokens{Prompt: usage.Prompt, Completion: usage.Completion, Cached: usage.Cached, Known: true}
			}
			if p.Model == "" {
				p.Model = ep.Model
			}
			lc.Call(ctx, engine.PointLLMCallAfter, p)
		}
		over := budget > 0 && run.Tokens.Prompt+run.Tokens.Completion > budget
		overErr := func() error {
			tr.Stop, run.Cause = "budget", engine.CauseBudget
			return fmt.Errorf("budget: the run used %d tokens, over its max_tokens_per_run of %d", run.Tokens.Prompt+run.Tokens.Completion, budget)
		}
		if over && len(msg.ToolCalls) == 0 && reply.FinishReason == FinishLength {
			run.Response = msg.Content
			tr.Answer = msg.Content
			return overErr()
		}
		if len(msg.ToolCalls) == 0 {
			run.Response = msg.Content
			tr.Answer = msg.Content
			tr.Stop = "answer"
			if marker := unparsedCall(msg.Content); marker != "" {
				note := fmt.Sprintf("model call %d: the answer is a %s block the server did not parse as a tool call, so no tool ran; "+
					"the server needs the model's tool-call parser (llama.cpp: --jinja; vLLM: --enable-auto-tool-choice --tool-call-parser NAME)", round, marker)
				run.Notes = append(run.Notes, note)
				tr.Notes = append(tr.Notes, note)
			}
			if over {
				// The answer is whole: the tokens are spent, and failing
				// the run would only throw it away.
				note := fmt.Sprintf("budget: the run used %d tokens, over its max_tokens_per_run of %d, on model call %d, which answered; the answer is kept",
					run.Tokens.Prompt+run.Tokens.Completion, budget, round)
				run.Cause = engine.CauseOverBudget
				run.Notes = append(run.Notes, note)
				tr.Notes = append(tr.Notes, note)
			}
			if reply.FinishReason == FinishLength {
				return truncated(run, tr, set, round)
			}
			return nil
		}

		// The model called tools: keep its ids (make one where it sent
		// none), so every tool message answers the call it belongs to.
		calls := make([]ToolRequest, len(msg.ToolCalls))
		copy(calls, msg.ToolCalls)
		generated := make([]bool, len(calls))
		for i := range calls {
			if calls[i].ID == "" {
				calls[i].ID, generated[i] = "call_"+strings.ToLower(engine.NewID()), true
			}
			if calls[i].Type == "" {
				calls[i].Type = toolTypeFunction
			}
		}
		// Calls that a limit leaves unrun are listed as not run.
		notRun := func(why string) {
			for i, tc := range calls {
				rd.ToolCalls = append(rd.ToolCalls, &ToolCall{ID: tc.ID, IDGenerated: generated[i], Name: tc.Function.Name,
					Tool: ts.qualified(tc.Function.Name), Arguments: tc.Function.Arguments, Outcome: engine.ToolNotRun,
					Error: "not run: " + why})
			}
		}
		if over {
			notRun("max_tokens_per_run reached")
			return overErr()
		}
		if round >= set.MaxRounds {
			notRun("max_rounds reached")
			tr.Stop, run.Cause = "max_rounds", engine.CauseMaxRounds
			return fmt.Errorf("max_rounds: the model was still calling tools after %d model calls (llm.max_rounds is %d)", round, set.MaxRounds)
		}
		messages = append(messages, Message{
			Role: RoleAssistant, Content: msg.Content, ToolCalls: replayed(calls),
		})
		recs, replies := a.runTools(ctx, env, ts, calls, redact, round)
		for i, r := range recs {
			r.IDGenerated = generated[i]
		}
		rd.ToolCalls = recs
		messages = append(messages, replies...)
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
}

// replayed is the tool calls of an answer as they are sent back to the
// server in the next request's history: arguments that are not a JSON
// object (malformed, or missing) become {}, which strict servers accept
// (llama.cpp answers 500 to "Failed to parse tool call arguments as JSON"
// and to "key 'arguments' not found"). The transcript keeps what the
// model sent; the tool message answering the call tells the model what
// was wrong with it.
func replayed(calls []ToolRequest) []ToolRequest {
	out := make([]ToolRequest, len(calls))
	copy(out, calls)
	for i := range out {
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(out[i].Function.Arguments), &obj) != nil || obj == nil {
			out[i].Function.Arguments = "{}"
		}
	}
	return out
}

// truncated records an answer the model's output limit cut
// (finish_reason length): a note and Run.Truncated, and a failure when
// the hook says llm.on_truncated: fail.
func truncated(run *engine.Run, tr *Transcript, set Settings, round int) error {
	note := fmt.Sprintf("model call %d: the answer was cut by the model's output limit (finish_reason length); it is incomplete", round)
	run.Truncated = true
	run.Notes = append(run.Notes, note)
	tr.Notes = append(tr.Notes, note)
	if set.OnTruncated == engine.TruncatedFail {
		tr.Stop, run.Cause = "truncated", engine.CauseTruncated
		return fmt.Errorf("truncated: the model's answer was cut by its output limit (finish_reason length), and llm.on_truncated is fail")
	}
	return nil
}

// unparsedCall is the marker of a tool call the model wrote in its
// answer's text that the server did not parse into tool_calls (Hermes and
// Qwen's <tool_call>{...}</tool_call>, Mistral's [TOOL_CALLS]), or "".
func unparsedCall(content string) string {
	if i := strings.Index(content, "<tool_call>"); i >= 0 && strings.Contains(content[i:], "</tool_call>") {
		return "<tool_call>"
	}
	if strings.HasPrefix(strings.TrimSpace(content), "[TOOL_CALLS]") {
		return "[TOOL_CALLS]"
	}
	return ""
}

// forcing reports whether a tool_choice makes the model call a tool:
// required, or a named tool.
func forcing(choice, force string) bool {
	return choice == "required" || force != ""
}

// toolTypeFunction is the type of every tool call.
const toolTypeFunction = "function"

// stopReason names why a stage that failed stopped.
func stopReason(ctx context.Context) string {
	if ctx.Err() == nil {
		return "error"
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || engine.StopCause(ctx) == engine.CauseTimeout {
		return "timeout"
	}
	return "cancelled"
}
