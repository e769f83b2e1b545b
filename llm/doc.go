// Package llm is a chat client of any OpenAI-compatible chat-completions
// server (OpenAI, Ollama, vLLM, llama.cpp's server, OpenRouter, ...),
// through github.com/sashabaranov/go-openai. Client implements
// agent.Chat: the agent (engine/agent) runs the model stage's loop, and
// each of its model calls is one Client.Chat.
//
// The client resolves a hook's endpoint (model, base URL, the variable
// holding the key) from the hook, hookd.yaml and the environment, and
// reads the key at each call, never storing it. Requests are retried on
// 408, 429, 5xx, timeouts and broken connections with exponential backoff
// and jitter, or after the server's Retry-After; other errors fail at once
// with the server's message, taken from a body that is capped and
// redacted first. It knows the servers' quirks: a missing usage is
// reported as unknown, not zero; an answer without choices or with an
// error object in a 200 is an error.
package llm
