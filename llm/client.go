package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hookd/hookd/clock"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/engine/agent"
	"github.com/hookd/hookd/internal/backoff"
	openai "github.com/sashabaranov/go-openai"
)

// Defaults of the client.
const (
	DefaultBaseURL        = "https://api.openai.com/v1"
	DefaultAPIKeyEnv      = engine.DefaultAPIKeyEnv
	DefaultAttemptTimeout = 5 * time.Minute
)

// Environment variables read when neither the hook nor hookd.yaml says.
const (
	EnvModel   = engine.EnvModel
	EnvBaseURL = engine.EnvBaseURL
)

// Options configure a Client. The zero value works: OpenAI's endpoint,
// the key from OPENAI_API_KEY, the model from HOOKD_MODEL.
type Options struct {
	// Defaults are hookd.yaml's llm settings; a hook's own override them,
	// and the environment fills what neither sets. The client reads the
	// endpoint's: model, base_url, api_key_env.
	Defaults engine.LLMConfig
	// LookupEnv reads hookd's environment (default os.LookupEnv). Keys
	// are read from it at each run, never stored.
	LookupEnv func(string) (string, bool)
	// HTTPClient sends the requests (default: a client on a clone of
	// http.DefaultTransport).
	HTTPClient *http.Client
	Logger     *slog.Logger
	Retry      RetryPolicy
	// AttemptTimeout bounds one HTTP attempt (default 5m); the run's own
	// timeout bounds the whole stage.
	AttemptTimeout time.Duration
	// Sleep waits between attempts (default: a timer of Clock); tests
	// replace it to record the waits.
	Sleep func(ctx context.Context, d time.Duration) error
	// Clock stamps and times the calls and times the waits between
	// attempts (default clock.System): the engine's clock.
	Clock clock.Clock
}

// Client is a chat client of an OpenAI-compatible chat-completions
// server: it implements agent.Chat, with retries and the servers'
// quirks. It is safe for concurrent use.
type Client struct {
	opts Options
	http doer
}

var _ agent.Chat = (*Client)(nil)

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
	if opts.Clock == nil {
		opts.Clock = clock.System{}
	}
	if opts.Sleep == nil {
		opts.Sleep = func(ctx context.Context, d time.Duration) error { return sleep(ctx, opts.Clock, d) }
	}
	return &Client{opts: opts, http: doer{opts.HTTPClient}}
}

// Settings are a hook's endpoint after resolution.
type Settings struct {
	Model     string
	BaseURL   string
	APIKeyEnv string
	KeySet    bool // the variable named by APIKeyEnv is set

	key string
}

// Resolve works out a hook's endpoint: the hook's llm block, then
// hookd.yaml's, then the environment (HOOKD_MODEL, OPENAI_BASE_URL, the
// key from the variable api_key_env names, OPENAI_API_KEY by default).
func (c *Client) Resolve(h *engine.Hook) (Settings, error) {
	d := c.opts.Defaults
	var l engine.LLMConfig
	if h != nil {
		l = h.LLM
	}
	r := l.Resolve(d, c.opts.LookupEnv)
	s := Settings{
		Model:     r.Model,
		BaseURL:   strings.TrimRight(first(r.BaseURL, DefaultBaseURL), "/"),
		APIKeyEnv: r.APIKeyEnv,
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

// Endpoint implements agent.Chat: the model and server of h's calls.
func (c *Client) Endpoint(h *engine.Hook) (agent.Endpoint, error) {
	s, err := c.Resolve(h)
	return agent.Endpoint{Model: s.Model, BaseURL: s.BaseURL}, err
}

// Chat implements agent.Chat: it sends one chat-completions request to
// the endpoint of req.Hook, with the key read from hookd's environment
// now, and retries what is worth retrying.
func (c *Client) Chat(ctx context.Context, req *agent.ChatRequest) (*agent.ChatReply, error) {
	set, err := c.Resolve(req.Hook)
	if err != nil {
		return nil, err
	}
	cfg := openai.DefaultConfig(set.key)
	cfg.BaseURL = set.BaseURL
	cfg.HTTPClient = c.http
	api := openai.NewClientWithConfig(cfg)

	creq := openai.ChatCompletionRequest{Model: set.Model, Messages: make([]openai.ChatCompletionMessage, len(req.Messages))}
	for i, m := range req.Messages {
		creq.Messages[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID, ToolCalls: toolCalls(m.ToolCalls)}
	}
	for _, d := range req.Tools {
		creq.Tools = append(creq.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: d.Name, Description: d.Description, Parameters: d.Parameters,
		}})
	}
	switch {
	case req.ForceTool != "":
		creq.ToolChoice = openai.ToolChoice{Type: openai.ToolTypeFunction, Function: openai.ToolFunction{Name: req.ForceTool}}
	case req.ToolChoice != "":
		creq.ToolChoice = req.ToolChoice
	}
	if req.ParallelToolCalls != nil {
		creq.ParallelToolCalls = *req.ParallelToolCalls
	}
	redact := req.Redact
	if redact == nil {
		redact = func(s string) string { return s }
	}
	reply := &agent.ChatReply{}
	resp, usage, err := c.call(ctx, api, creq, reply, set, redact)
	if err != nil {
		return reply, err
	}
	msg := resp.Choices[0].Message
	reply.Message = agent.Message{Role: msg.Role, Content: msg.Content, Name: msg.Name, ToolCallID: msg.ToolCallID}
	for _, tc := range msg.ToolCalls {
		reply.Message.ToolCalls = append(reply.Message.ToolCalls, agent.ToolRequest{
			ID: tc.ID, Type: string(tc.Type), Function: agent.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments},
		})
	}
	reply.FinishReason = string(resp.Choices[0].FinishReason)
	reply.Usage = usage
	return reply, nil
}

// toolCalls are an assistant's tool calls as go-openai sends them.
func toolCalls(calls []agent.ToolRequest) []openai.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]openai.ToolCall, len(calls))
	for i, tc := range calls {
		out[i] = openai.ToolCall{ID: tc.ID, Type: openai.ToolType(tc.Type), Function: openai.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}}
	}
	return out
}

// call sends one chat-completions request, retrying what is worth
// retrying, and records it in mc.
// The body of an answer that failed is redacted before anything is taken
// from it, so no cut or quoting can split a secret.
func (c *Client) call(ctx context.Context, api *openai.Client, creq openai.ChatCompletionRequest, mc *agent.ChatReply, set Settings, redact func(string) string) (openai.ChatCompletionResponse, *agent.Usage, error) {
	p := c.opts.Retry
	clk := c.opts.Clock
	mc.Started = clk.Now()
	mc.Duration = 0
	for attempt := 1; ; attempt++ {
		s := &slot{}
		actx, cancel := context.WithTimeout(context.WithValue(ctx, slotKey{}, s), c.opts.AttemptTimeout)
		start := clk.Mono()
		resp, err := api.CreateChatCompletion(actx, creq)
		mc.Latency = clock.Since(clk, start)
		mc.Duration += mc.Latency
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
			return resp, nil, context.Cause(ctx)
		}
		ce, ok := err.(*callError)
		if !ok {
			ce = classify(err, actx, s)
		}
		a := agent.Attempt{Status: ce.status, Error: ce.msg, Body: ce.body, Latency: mc.Latency}
		fail := func(format string, args ...any) (openai.ChatCompletionResponse, *agent.Usage, error) {
			mc.Attempts = append(mc.Attempts, a)
			extra := fmt.Sprintf(format, args...)
			if ce.status == http.StatusUnauthorized && !set.KeySet {
				extra += fmt.Sprintf(" (no key: %s is not set in hookd's environment)", set.APIKeyEnv)
			}
			return resp, nil, fmt.Errorf("%w%s", ce, extra)
		}
		if !ce.retry {
			return fail("")
		}
		if attempt >= p.MaxAttempts {
			return fail(" (gave up after %d attempts)", attempt)
		}
		wait := p.backoff(attempt)
		if ra, ok := backoff.RetryAfter(s.header, clk.Now()); ok {
			if ra > p.MaxRetryAfter {
				return fail(" (the server asks to retry after %s, longer than hookd waits: %s)", ra, p.MaxRetryAfter)
			}
			wait, a.RetryAfter = ra, true
		}
		// The context's deadline is on the runtime's clock, as its timer.
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return fail(" (a retry in %s would be past the run's timeout)", wait.Round(time.Millisecond))
		}
		a.Wait = wait
		mc.Attempts = append(mc.Attempts, a)
		c.opts.Logger.Warn("model call failed; retrying", "status", ce.status, "err", ce.msg, "attempt", attempt, "wait", wait)
		if err := c.opts.Sleep(ctx, wait); err != nil {
			return resp, nil, context.Cause(ctx)
		}
		mc.Duration += wait
	}
}

// usageOf returns the usage of a response, or nil when the server sent
// none (go-openai cannot tell a missing usage from zeros; the body can).
func usageOf(resp *openai.ChatCompletionResponse, s *slot) *agent.Usage {
	var probe struct {
		Usage json.RawMessage `json:"usage"`
	}
	if err := json.Unmarshal(s.body.Bytes(), &probe); err != nil || len(probe.Usage) == 0 || string(probe.Usage) == "null" {
		return nil
	}
	u := resp.Usage
	out := &agent.Usage{Prompt: int64(u.PromptTokens), Completion: int64(u.CompletionTokens), Total: int64(u.TotalTokens)}
	if u.PromptTokensDetails != nil {
		out.Cached = int64(u.PromptTokensDetails.CachedTokens)
	}
	return out
}
