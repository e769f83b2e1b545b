// Package engine is the core of hookd: the hook model, the orchestrator
// loop that owns all scheduling and gate state, the run pipeline, the
// event bus and the registries that other packages plug into.
//
// The engine defines the interfaces it consumes (Store, Schedule,
// EventIndex, Step, LLM) and never imports their implementations:
// package store implements Store on SQLite, package triggers registers the
// every/cron schedules and provides the event index, package steps
// registers the step kinds, and cmd/hookd wires them together. Time comes
// from a clock.Clock.
package engine
