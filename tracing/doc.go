// Package tracing sends each finished run to an OpenTelemetry collector
// as a trace (OTLP over HTTP, with the official Go SDK): a root span for
// the run, a span per step, per model call (with the GenAI semantic
// conventions' attributes: model, tokens, finish reasons) and per tool
// call; a trigger a gate refused is a trace of one span with the refusal
// as an event.
//
// The spans are built from the run's final record, which the engine has
// redacted already, with the times it recorded: tracing never sits on a
// run's path. The exporter subscribes to the engine's events; a finished
// run goes into a bounded queue (a full queue drops it, counted), and a
// goroutine of its own turns it into spans for the SDK's batching
// exporter.
//
// A run's trace id and its root span's id are derived from the run's id
// (engine.RunTraceIDs), so a retry links to the first run of its chain
// without storing anything, and a run another run started (fire_hook, an
// event it published, a hook.run.* event) links to that run's span
// (engine.TraceLinks.StartedBy, engine.Run.Span). Prompt and answer text
// is left out unless Options.Content.
package tracing
