// Package llm is hookd's model stage: a Client that implements
// engine.LLM against any OpenAI-compatible chat-completions server
// (OpenAI, Ollama, vLLM, llama.cpp's server, OpenRouter, ...) through
// github.com/sashabaranov/go-openai.
//
// For each run it sends the rendered prompt (and the hook's system
// message), offers exactly the tools of the hook's allowlist, runs every
// tool call the model makes (parallel calls included) and answers each
// with a tool message carrying the call's id, until the model answers
// without tool calls or a limit is hit: llm.max_rounds (model calls,
// default 10), budget.max_tokens_per_run (from the usage the server
// reports) or the run's timeout. Requests are retried on 408, 429, 5xx,
// timeouts and broken connections with exponential backoff and jitter, or
// after the server's Retry-After; other errors fail at once with the
// server's message.
//
// Everything is recorded in a Transcript, stored as the run's transcript:
// each model call (model, usage as reported, latency, finish reason,
// retries), each tool call (id, name, arguments, capped result, duration,
// error) and the answer. A server that reports no usage leaves the run's
// tokens unknown rather than zero. The hook's secrets are redacted from
// tool results before the model sees them, and from the record.
package llm
