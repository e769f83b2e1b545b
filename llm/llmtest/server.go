// Package llmtest is a scripted OpenAI-compatible chat-completions server
// for tests: each request gets the next scripted Reply — an answer, tool
// calls, an HTTP error with headers, a response without usage, or a stall
// — and every request is kept for assertions.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Reply is one scripted answer.
type Reply struct {
	Status int               // HTTP status; 0 means 200
	Header map[string]string // response headers, e.g. Retry-After
	Error  string            // with Status >= 400: the message, sent as an OpenAI error object
	Body   string            // sent byte for byte, instead of anything else
	// ContentType is the Content-Type of Body (default application/json).
	ContentType string
	// Empty sends Status with no body at all.
	Empty bool

	Model        string     // default "llmtest-model"
	Content      string     //
	ToolCalls    []ToolCall //
	FinishReason string     // default tool_calls when there are tool calls, else stop
	Usage        *Usage     // nil: DefaultUsage
	NoUsage      bool       // leave "usage" out of the response

	Stall  bool // never answer: hold the request until the client gives up
	Hangup bool // close the connection without answering
	Repeat bool // answer every later request with this reply too
}

// ToolCall is a tool call in a scripted answer. An empty ID is left out
// of the response, as some servers do.
type ToolCall struct {
	ID   string
	Name string
	Args string
}

// Usage is the token usage of a scripted answer.
type Usage struct {
	Prompt, Completion, Cached int
}

// DefaultUsage is the usage of a reply that sets none.
var DefaultUsage = Usage{Prompt: 10, Completion: 5}

// Answer is a reply with a final answer.
func Answer(text string) Reply { return Reply{Content: text} }

// Calls is a reply that calls tools.
func Calls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// Fail is an HTTP error reply.
func Fail(status int, msg string) Reply { return Reply{Status: status, Error: msg} }

// Request is one request the server received.
type Request struct {
	Time   time.Time
	Header http.Header
	Raw    []byte         // the body
	Fields map[string]any // the body as JSON, to check which keys were sent
	Chat   openai.ChatCompletionRequest
}

// Server is a scripted chat-completions server at BaseURL().
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	script   []Reply
	repeat   *Reply
	requests []Request
	handle   func(Request) Reply
	served   atomic.Int64
	done     chan struct{}
	once     sync.Once
}

// New starts a server that answers with script, in order. Past the end of
// the script it answers 418 (not retried) saying so.
func New(script ...Reply) *Server {
	s := &Server{script: script, done: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// NewFunc starts a server that computes each reply from the request.
func NewFunc(f func(Request) Reply) *Server {
	s := &Server{handle: f, done: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// BaseURL is the base URL clients are configured with.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Close releases stalled requests and shuts the server down. It is safe
// to call twice.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.Server.Close()
	})
}

// Push appends replies to the script.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	s.script = append(s.script, replies...)
	s.mu.Unlock()
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Served is how many requests were answered so far.
func (s *Server) Served() int { return int(s.served.Load()) }

func (s *Server) next(req Request) (Reply, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	if s.handle != nil {
		return s.handle(req), true
	}
	if len(s.script) > 0 {
		r := s.script[0]
		s.script = s.script[1:]
		if r.Repeat {
			s.repeat = &r
		}
		return r, true
	}
	if s.repeat != nil {
		return *s.repeat, true
	}
	return Reply{}, false
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	defer s.served.Add(1)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		writeError(w, http.StatusNotFound, fmt.Sprintf("llmtest: no route %s %s", r.Method, r.URL.Path))
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	req := Request{Time: time.Now(), Header: r.Header.Clone(), Raw: raw}
	if err := json.Unmarshal(raw, &req.Fields); err != nil {
		writeError(w, http.StatusBadRequest, "llmtest: body is not JSON: "+err.Error())
		return
	}
	if err := json.Unmarshal(raw, &req.Chat); err != nil {
		writeError(w, http.StatusBadRequest, "llmtest: body is not a chat request: "+err.Error())
		return
	}
	rep, ok := s.next(req)
	if !ok {
		writeError(w, http.StatusTeapot, "llmtest: no scripted reply left")
		return
	}
	if rep.Hangup {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	if rep.Stall {
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	switch {
	case rep.Empty:
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(orOK(rep.Status))
	case rep.Body != "":
		ct := rep.ContentType
		if ct == "" {
			ct = "application/json"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(orOK(rep.Status))
		io.WriteString(w, rep.Body)
	case rep.Status >= 400:
		writeError(w, rep.Status, rep.Error)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(orOK(rep.Status))
		json.NewEncoder(w).Encode(response(rep))
	}
}

func orOK(status int) int {
	if status == 0 {
		return http.StatusOK
	}
	return status
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "code": nil,
	}})
}

var ids atomic.Int64

// response builds the chat.completion object of a reply.
func response(rep Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": rep.Content}
	if len(rep.ToolCalls) > 0 {
		var calls []map[string]any
		for _, tc := range rep.ToolCalls {
			c := map[string]any{"type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Args}}
			if tc.ID != "" {
				c["id"] = tc.ID
			}
			calls = append(calls, c)
		}
		msg["tool_calls"] = calls
		if rep.Content == "" {
			msg["content"] = nil
		}
	}
	finish := rep.FinishReason
	if finish == "" {
		finish = "stop"
		if len(rep.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	model := rep.Model
	if model == "" {
		model = "llmtest-model"
	}
	out := map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", ids.Add(1)), "object": "chat.completion", "created": time.Now().Unix(),
		"model":   model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
	}
	if !rep.NoUsage {
		u := DefaultUsage
		if rep.Usage != nil {
			u = *rep.Usage
		}
		out["usage"] = map[string]any{
			"prompt_tokens": u.Prompt, "completion_tokens": u.Completion, "total_tokens": u.Prompt + u.Completion,
			"prompt_tokens_details": map[string]any{"cached_tokens": u.Cached},
		}
	}
	return out
}
