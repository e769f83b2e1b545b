// Package agent is hookd's model stage: an Agent implements engine.LLM
// by running the tool-calling loop over a Chat, a model behind a chat
// protocol (llm.Client speaks OpenAI's chat completions).
//
// For each run it sends the rendered prompt (and the hook's system
// message), offers exactly the tools of the hook's allowlist, runs every
// tool call the model makes (parallel calls included, each checked
// against the tool's JSON schema and passed through the tool:call:*
// handlers) and answers each with a tool message carrying the call's id,
// until the model answers without tool calls or a limit is hit:
// llm.max_rounds (model calls, default 10), budget.max_tokens_per_run
// (from the usage the server reports) or the run's timeout. The
// llm:call:* handlers see each model call and may answer in its place or
// amend its messages.
//
// Everything is recorded in a Transcript, stored as the run's transcript:
// each model call (model, usage as reported, latency, finish reason,
// retries), each tool call (id, name, arguments, capped result, duration,
// error) and the answer. A server that reports no usage leaves the run's
// tokens unknown rather than zero. The hook's secrets are redacted from
// tool results before the model sees them, and from the record.
package agent
