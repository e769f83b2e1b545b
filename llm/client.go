package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
	openai "github.com/sashabaranov/go-openai"
)

// Defaults of the model stage.
const (
	DefaultMaxRounds        = 10
	DefaultBaseURL          = "https://api.openai.com/v1"
	DefaultAPIKeyEnv        = "OPENAI_API_KEY"
	DefaultMaxResult        = 32 << 10 // bytes of a tool result the model gets
	DefaultRecordResult     = 8 << 10  // bytes of a tool result the record keeps
	DefaultAttemptTimeout   = 5 * time.Minute
	DefaultToolParallelism  = 4
	DefaultMaxToolCallsSeen = 32 // tool calls run per model answer; more are answered with an error
)

// Environment variables read when neither the hook nor hookd.yaml says.
const (
	EnvModel   = "HOOKD_MODEL"
	EnvBaseURL = "OPENAI_BASE_URL"
)

// Options configure a Client. The zero value works: OpenAI's endpoint,
// the key from OPENAI_API_KEY, the model from HOOKD_MODEL.
type Options struct {
	// Defaults are hookd.yaml's llm settings; a hook's own override them,
	// and the environment fills what neither sets.
	Defaults engine.LLMConfig
	// LookupEnv reads hookd's environment (default os.LookupEnv). Keys
	// are read from it at each run, never stored.
	LookupEnv func(string) (string, bool)
	// HTTPClient sends the requests (default: a client on a clone of
	// http.DefaultTransport).
	HTTPClient *http.Client
	// Servers resolves SERVER.TOOL entries (MCP); nil means none.
	Servers ToolServers
	Logger  *slog.Logger
	Retry   RetryPolicy
	// AttemptTimeout bounds one HTTP attempt (default 5m); the run's own
	// timeout bounds the whole stage.
	AttemptTimeout time.Duration
	// MaxResult caps a tool result sent to the model; RecordResult caps
	// what the record keeps of it. Head and tail are kept.
	MaxResult    int
	RecordResult int
	// ToolParallelism bounds the tool calls of one answer that run at
	// once (default 4).
	ToolParallelism int
	// Sleep waits between attempts (default: a timer); tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Client is the model stage: it implements engine.LLM against any
// OpenAI-compatible chat-completions server, running the tool-calling
// loop, retries and accounting. It is safe for concurrent use.
type Client struct {
	opts Options
	http doer
}

var _ engine.LLM = (*Client)(nil)

// New returns a client.
func New(opts Options) *Client {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Retry.setDefaults()
	if opts.AttemptTimeout <= 0 {
		opts.AttemptTimeout = DefaultAttemptTimeout
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
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	return &Client{opts: opts, http: doer{opts.HTTPClient}}
}

// Settings are a hook's model settings after resolution.
type Settings struct {
	Model      string
	BaseURL    string
	APIKeyEnv  string
	KeySet     bool // the variable named by APIKeyEnv is set
	MaxRounds  int
	ToolChoice string
	// ToolChoiceRounds is engine.ToolChoiceFirst or engine.ToolChoiceAll.
	ToolChoiceRounds string
	Parallel         *bool
	// OnTruncated is engine.TruncatedWarn or engine.TruncatedFail.
	OnTruncated string

	key string
}

// Resolve works out a hook's model settings: the hook's llm block, then
// hookd.yaml's, then the environment (HOOKD_MODEL, OPENAI_BASE_URL, the
// key from the variable api_key_env names, OPENAI_API_KEY by default).
func (c *Client) Resolve(h *engine.Hook) (Settings, error) {
	d := c.opts.Defaults
	var l engine.LLMConfig
	if h != nil {
		l = h.LLM
	}
	env := func(k string) string { v, _ := c.opts.LookupEnv(k); return v }
	s := Settings{
		Model:            first(l.Model, d.Model, env(EnvModel)),
		BaseURL:          strings.TrimRight(first(l.BaseURL, d.BaseURL, env(EnvBaseURL), DefaultBaseURL), "/"),
		APIKeyEnv:        first(l.APIKeyEnv, d.APIKeyEnv, DefaultAPIKeyEnv),
		MaxRounds:        firstInt(l.MaxRounds, d.MaxRounds, DefaultMaxRounds),
		ToolChoice:       first(l.ToolChoice, d.ToolChoice),
		ToolChoiceRounds: first(l.ToolChoiceRounds, d.ToolChoiceRounds, engine.ToolChoiceFirst),
		Parallel:         l.ParallelToolCalls,
		OnTruncated:      first(l.OnTruncated, d.OnTruncated, engine.TruncatedWarn),
	}
	if s.Parallel == nil {
		s.Parallel = d.ParallelToolCalls
	}
	s.key, s.KeySet = c.opts.LookupEnv(s.APIKeyEnv)
	if s.Model == "" {
		return s, fmt.Errorf("no model: set llm.model in the hook or in hookd.yaml, or %s in hookd's environment", EnvModel)
	}
	return s, nil
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
func (c *Client) Complete(ctx context.Context, req *engine.LLMRequest) (err error) {
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

	set, err := c.Resolve(h)
	tr.Model, tr.BaseURL, tr.MaxRounds = set.Model, set.BaseURL, set.MaxRounds
	if err != nil {
		return err
	}
	ts, err := c.resolveTools(ctx, h.Tools)
	if err != nil {
		return err
	}
	tr.Tools = ts.names
	tc := set.ToolChoice
	if h.LLM.ToolChoice == "" && len(ts.defs) == 0 {
		tc = "" // a default from hookd.yaml does not apply to a hook without tools
	}
	choice, err := ts.toolChoice(tc)
	if err != nil {
		return err
	}

	cfg := openai.DefaultConfig(set.key)
	cfg.BaseURL = set.BaseURL
	cfg.HTTPClient = c.http
	api := openai.NewClientWithConfig(cfg)

	messages := make([]openai.ChatCompletionMessage, 0, 8)
	if req.System != "" {
		messages = append(messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: req.System})
	}
	messages = append(messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: run.Prompt})
	creq := openai.ChatCompletionRequest{Model: set.Model, Tools: ts.defs, ToolChoice: choice}
	if set.Parallel != nil && len(ts.defs) > 0 {
		creq.ParallelToolCalls = *set.Parallel
	}

	budget := int64(h.Budget.MaxTokensPerRun)
	known := true
	for round := 1; ; round++ {
		if used := run.Tokens.Prompt + run.Tokens.Completion; budget > 0 && used >= budget {
			tr.Stop, run.Cause = "budget", engine.CauseBudget
			return fmt.Errorf("budget: the run used %d tokens, its max_tokens_per_run of %d, before the model answered", used, budget)
		}
		rd := &Round{}
		tr.Rounds = append(tr.Rounds, rd)
		if lc := env.Lifecycle; lc.Active(engine.PointLLMCallBefore) {
			raw, _ := json.Marshal(messages)
			o := lc.Call(ctx, engine.PointLLMCallBefore, &engine.Payload{Hook: h, RunID: run.ID, Prompt: run.Prompt, Messages: raw, Round: round})
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
					time.Now(), o.ChangedBy[engine.ChangeAnswer], answer, "handler"
				run.Tokens.Known = known
				run.Response, tr.Answer, tr.Stop = answer, answer, "answer"
				publishRound(env, round, rd, 0)
				return nil
			}
			if v, ok := o.Changes[engine.ChangeMessages]; ok {
				by := o.ChangedBy[engine.ChangeMessages]
				b, err := jsonValue(v)
				var amended []openai.ChatCompletionMessage
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
		if round > 1 && forcing(choice) && set.ToolChoiceRounds != engine.ToolChoiceAll {
			creq.ToolChoice = nil // the model may answer now that its tools ran
		}
		if creq.ToolChoice != nil {
			rd.Call.ToolChoice = tc
		}
		req.Model = set.Model // the spend ledger prices the stage by it
		resp, usage, err := c.call(ctx, api, creq, &rd.Call, set, redact)
		if err != nil {
			publishRound(env, round, rd, 0)
			return fmt.Errorf("model call %d: %w", round, err)
		}
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

		msg := resp.Choices[0].Message
		rd.Call.FinishReason = string(resp.Choices[0].FinishReason)
		rd.Call.Content = msg.Content
		publishRound(env, round, rd, len(msg.ToolCalls))
		if lc := env.Lifecycle; lc.Active(engine.PointLLMCallAfter) {
			lc.Call(ctx, engine.PointLLMCallAfter, &engine.Payload{Hook: h, RunID: run.ID, Prompt: run.Prompt, Round: round, Response: msg.Content})
		}
		over := budget > 0 && run.Tokens.Prompt+run.Tokens.Completion > budget
		overErr := func() error {
			tr.Stop, run.Cause = "budget", engine.CauseBudget
			return fmt.Errorf("budget: the run used %d tokens, over its max_tokens_per_run of %d", run.Tokens.Prompt+run.Tokens.Completion, budget)
		}
		if over && len(msg.ToolCalls) == 0 {
			run.Response = msg.Content
			tr.Answer = msg.Content
			return overErr()
		}
		if len(msg.ToolCalls) == 0 {
			run.Response = msg.Content
			tr.Answer = msg.Content
			tr.Stop = "answer"
			if resp.Choices[0].FinishReason == openai.FinishReasonLength {
				return truncated(run, tr, set, round)
			}
			return nil
		}

		// The model called tools: keep its ids (make one where it sent
		// none), so every tool message answers the call it belongs to.
		calls := make([]openai.ToolCall, len(msg.ToolCalls))
		copy(calls, msg.ToolCalls)
		generated := make([]bool, len(calls))
		for i := range calls {
			if calls[i].ID == "" {
				calls[i].ID, generated[i] = "call_"+strings.ToLower(engine.NewID()), true
			}
			if calls[i].Type == "" {
				calls[i].Type = openai.ToolTypeFunction
			}
			calls[i].Index = nil
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
		messages = append(messages, openai.ChatCompletionMessage{
			Role: openai.ChatMessageRoleAssistant, Content: msg.Content, ToolCalls: replayed(calls),
		})
		recs, replies := c.runTools(ctx, env, ts, calls, redact, round)
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
func replayed(calls []openai.ToolCall) []openai.ToolCall {
	out := make([]openai.ToolCall, len(calls))
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

// forcing reports whether a tool_choice makes the model call a tool:
// required, or a named tool.
func forcing(choice any) bool {
	return choice != nil && choice != "auto" && choice != "none"
}

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

// call sends one chat-completions request, retrying what is worth
// retrying, and records it in mc.
// The body of an answer that failed is redacted before anything is taken
// from it, so no cut or quoting can split a secret.
func (c *Client) call(ctx context.Context, api *openai.Client, creq openai.ChatCompletionRequest, mc *ModelCall, set Settings, redact func(string) string) (openai.ChatCompletionResponse, *Usage, error) {
	p := c.opts.Retry
	mc.Started = time.Now()
	for attempt := 1; ; attempt++ {
		s := &slot{}
		actx, cancel := context.WithTimeout(context.WithValue(ctx, slotKey{}, s), c.opts.AttemptTimeout)
		start := time.Now()
		resp, err := api.CreateChatCompletion(actx, creq)
		mc.Latency = time.Since(start)
		cancel()
		if (err != nil || len(resp.Choices) == 0) && s.body.Len() > 0 {
			red := redact(s.body.String())
			s.body.Reset()
			s.body.WriteString(red)
		}
		if err == nil && len(resp.Choices) == 0 {
			err = answerError(s)
		}
		if err == nil {
			mc.Model = resp.Model
			return resp, usageOf(&resp, s), nil
		}
		if ctx.Err() != nil {
			mc.Error = context.Cause(ctx).Error()
			return resp, nil, context.Cause(ctx)
		}
		ce, ok := err.(*callError)
		if !ok {
			ce = classify(err, actx, s)
		}
		a := Attempt{Status: ce.status, Error: ce.msg, Body: ce.body, Latency: mc.Latency}
		fail := func(format string, args ...any) (openai.ChatCompletionResponse, *Usage, error) {
			mc.Attempts = append(mc.Attempts, a)
			extra := fmt.Sprintf(format, args...)
			if ce.status == http.StatusUnauthorized && !set.KeySet {
				extra += fmt.Sprintf(" (no key: %s is not set in hookd's environment)", set.APIKeyEnv)
			}
			err := fmt.Errorf("%w%s", ce, extra)
			mc.Error = err.Error()
			return resp, nil, err
		}
		if !ce.retry {
			return fail("")
		}
		if attempt >= p.MaxAttempts {
			return fail(" (gave up after %d attempts)", attempt)
		}
		wait := p.backoff(attempt)
		if ra, ok := retryAfter(s.header, time.Now()); ok {
			if ra > p.MaxRetryAfter {
				return fail(" (the server asks to retry after %s, longer than hookd waits: %s)", ra, p.MaxRetryAfter)
			}
			wait, a.RetryAfter = ra, true
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return fail(" (a retry in %s would be past the run's timeout)", wait.Round(time.Millisecond))
		}
		a.Wait = wait
		mc.Attempts = append(mc.Attempts, a)
		c.opts.Logger.Warn("model call failed; retrying", "status", ce.status, "err", ce.msg, "attempt", attempt, "wait", wait)
		if err := c.opts.Sleep(ctx, wait); err != nil {
			mc.Error = context.Cause(ctx).Error()
			return resp, nil, err
		}
	}
}

// usageOf returns the usage of a response, or nil when the server sent
// none (go-openai cannot tell a missing usage from zeros; the body can).
func usageOf(resp *openai.ChatCompletionResponse, s *slot) *Usage {
	var probe struct {
		Usage json.RawMessage `json:"usage"`
	}
	if err := json.Unmarshal(s.body.Bytes(), &probe); err != nil || len(probe.Usage) == 0 || string(probe.Usage) == "null" {
		return nil
	}
	u := resp.Usage
	out := &Usage{Prompt: int64(u.PromptTokens), Completion: int64(u.CompletionTokens), Total: int64(u.TotalTokens)}
	if u.PromptTokensDetails != nil {
		out.Cached = int64(u.PromptTokensDetails.CachedTokens)
	}
	return out
}
