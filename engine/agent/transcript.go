package agent

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/hookd/hookd/engine"
)

// Transcript is the record of one model stage, stored as the run's
// transcript (Run.ToolCalls, "transcript" in JSON): every model call with
// its retries, usage and latency, every tool call with its arguments and
// result, and how the stage ended.
type Transcript struct {
	Model     string   `json:"model"`    // as requested
	BaseURL   string   `json:"base_url"` //
	System    string   `json:"system,omitempty"`
	Tools     []string `json:"tools,omitempty"` // names the model was offered
	MaxRounds int      `json:"max_rounds"`      //
	Budget    int      `json:"max_tokens_per_run,omitempty"`
	Rounds    []*Round `json:"rounds"`
	Answer    string   `json:"answer,omitempty"`
	// Stop says how the stage ended: answer, max_rounds, budget, timeout,
	// cancelled or error.
	Stop   string        `json:"stop"`
	Error  string        `json:"error,omitempty"`
	Tokens engine.Tokens `json:"tokens"` // sums of what the server reported; Known is false if any call reported none
	Notes  []string      `json:"notes,omitempty"`
}

// Round is one model call and the tool calls it asked for. The tool
// calls are stored once, in the run's Tools (each names its round);
// DecodeTranscript puts them back in their rounds.
type Round struct {
	Call      ModelCall   `json:"model_call"`
	ToolCalls []*ToolCall `json:"-"`
}

// ModelCall is one chat-completions request, with its retries.
type ModelCall struct {
	Model        string        `json:"model,omitempty"` // as the server named it
	Started      time.Time     `json:"started"`
	Latency      time.Duration `json:"latency_ns"`            // of the attempt that was answered (or the last)
	Attempts     []Attempt     `json:"attempts,omitempty"`    // attempts that failed before it, with the waits
	Duration     time.Duration `json:"duration_ns,omitempty"` // the whole call: every attempt and the waits between them (0 in older records: see Took)
	FinishReason string        `json:"finish_reason,omitempty"`
	ToolChoice   string        `json:"tool_choice,omitempty"` // the tool_choice sent with this call, as the hook names it`
	Usage        *Usage        `json:"usage"`                 // null: the server reported none
	Content      string        `json:"content,omitempty"`
	Error        string        `json:"error,omitempty"`
	// AnsweredBy names the llm:call:before handler that answered instead
	// of the model; the model was not called.
	AnsweredBy string `json:"answered_by,omitempty"`
	// MessagesAmendedBy names the llm:call:before handler that amended
	// the messages sent.
	MessagesAmendedBy string `json:"messages_amended_by,omitempty"`
}

// Took is how long the call took: Duration, or in a record from
// before it, the answered attempt and the waits before it.
func (c *ModelCall) Took() time.Duration {
	if c.Duration > 0 {
		return c.Duration
	}
	total := c.Latency
	for _, a := range c.Attempts {
		total += a.Wait
	}
	return total
}

// Requests is how many requests the call sent: its failed attempts and
// the one answered (0 when a handler answered instead of the model).
func (c *ModelCall) Requests() int {
	if c.AnsweredBy != "" {
		return 0
	}
	if c.Error != "" {
		return len(c.Attempts) // a call that failed lists its last attempt too
	}
	return len(c.Attempts) + 1
}

// Attempt is a request that failed and was retried (or not).
type Attempt struct {
	Status     int           `json:"status,omitempty"` // HTTP status; 0 for a network error or timeout
	Error      string        `json:"error"`            // the server's message, or its body's text when none decodes
	Body       string        `json:"body,omitempty"`   // the response body, whitespace collapsed, up to 1000 bytes`
	Latency    time.Duration `json:"latency_ns"`
	Wait       time.Duration `json:"wait_ns,omitempty"` // pause before the next attempt
	RetryAfter bool          `json:"retry_after,omitempty"`
}

// Usage is the token usage a server reported for one call.
type Usage struct {
	Prompt     int64 `json:"prompt"`
	Completion int64 `json:"completion"`
	Cached     int64 `json:"cached"`
	Total      int64 `json:"total"`
}

// ToolCall is one tool call the model asked for and what it got back:
// the engine's ToolUse, which the run keeps in Run.Tools.
type ToolCall = engine.ToolUse

// DecodeTranscript reads a run's transcript, with the run's tool calls in
// their rounds; nil when there is none.
func DecodeTranscript(run *engine.Run) (*Transcript, error) {
	raw := run.ToolCalls
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var t Transcript
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("decode the transcript of run %s: %w", run.ID, err)
	}
	for i := range run.Tools {
		u := &run.Tools[i]
		if u.Round >= 1 && u.Round <= len(t.Rounds) {
			rd := t.Rounds[u.Round-1]
			rd.ToolCalls = append(rd.ToolCalls, u)
		}
	}
	return &t, nil
}

// tools lists the tool calls of every round, in order, numbering their
// rounds: the run's Tools.
func (t *Transcript) tools() []engine.ToolUse {
	var out []engine.ToolUse
	for i, r := range t.Rounds {
		for _, tc := range r.ToolCalls {
			tc.Round = i + 1
			out = append(out, *tc)
		}
	}
	return out
}

// redact applies f to every text of the transcript that may hold what a
// tool, the model or the prompt produced.
func (t *Transcript) redact(f func(string) string) {
	if f == nil {
		return
	}
	t.System = f(t.System)
	t.Answer = f(t.Answer)
	t.Error = f(t.Error)
	for i, n := range t.Notes {
		t.Notes[i] = f(n)
	}
	for _, r := range t.Rounds {
		r.Call.Content = f(r.Call.Content)
		r.Call.Error = f(r.Call.Error)
		for i := range r.Call.Attempts {
			r.Call.Attempts[i].Error = f(r.Call.Attempts[i].Error)
			r.Call.Attempts[i].Body = f(r.Call.Attempts[i].Body)
		}
		for _, tc := range r.ToolCalls {
			tc.Arguments = f(tc.Arguments)
			tc.AmendedArguments = f(tc.AmendedArguments)
			tc.Result = f(tc.Result)
			tc.Error = f(tc.Error)
		}
	}
}
