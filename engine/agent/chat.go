package agent

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hookd/hookd/engine"
)

// Chat is a model behind a chat protocol: one call sends the
// conversation so far and the tools on offer, and returns the model's
// answer, one assistant message. The Agent runs the stage around it;
// llm.Client implements it for OpenAI-compatible chat-completions
// servers.
type Chat interface {
	// Endpoint names the model and the server the calls of h's model
	// stage go to, as resolved from the hook, hookd.yaml and the
	// environment. An error says what is missing (no model).
	Endpoint(h *engine.Hook) (Endpoint, error)
	// Chat sends one request to the endpoint of req.Hook and returns the
	// answer. It retries what is worth retrying. The reply records the
	// call (start, latency, failed attempts) also when err is not nil;
	// err then says why there is no answer.
	Chat(ctx context.Context, req *ChatRequest) (*ChatReply, error)
}

// Endpoint is where a hook's model calls go.
type Endpoint struct {
	Model   string
	BaseURL string
}

// ChatRequest is one model call.
type ChatRequest struct {
	Hook     *engine.Hook // whose endpoint and key the call uses
	Messages []Message
	Tools    []ToolDef
	// ToolChoice is what the model may do with the tools: "" (the server
	// decides), auto, none or required. ForceTool, when set, names the
	// tool it must call instead.
	ToolChoice string
	ForceTool  string
	// ParallelToolCalls, when set, tells the server whether the model may
	// call several tools in one answer.
	ParallelToolCalls *bool
	// Redact replaces the hook's secrets; the body of an answer that
	// failed goes through it before anything is taken from it.
	Redact func(string) string
}

// ChatReply is the model's answer to one call, and the record of the
// call.
type ChatReply struct {
	Message      Message // the assistant's message: content and tool calls as the model sent them
	FinishReason string
	Usage        *Usage // nil: the server reported none
	Model        string // as the server named it
	Started      time.Time
	Latency      time.Duration // of the attempt that was answered (or the last)
	Attempts     []Attempt     // attempts that failed before it, with the waits
	// Duration is the whole call: every attempt and the waits between
	// them (ModelCall.Duration).
	Duration time.Duration
}

// Message is one message of the conversation, in the chat-completions
// wire form the llm:call:* handlers see and may amend.
type Message struct {
	Role       string        `json:"role"`
	Content    string        `json:"content,omitempty"`
	Name       string        `json:"name,omitempty"`
	ToolCalls  []ToolRequest `json:"tool_calls,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"` // of a tool message: the call it answers
}

// Roles of messages.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// ToolRequest is a tool call in an assistant's message.
type ToolRequest struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type"` // function
	Function FunctionCall `json:"function"`
}

// FunctionCall is the tool a model called and its arguments, as it sent
// them (JSON text, or whatever it wrote).
type FunctionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// ToolDef is a tool offered to the model.
type ToolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage // a JSON schema of an object
}

// Finish reasons the agent acts on.
const (
	FinishLength = "length" // the answer was cut by the model's output limit
)
