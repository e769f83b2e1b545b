// Package metrics keeps hookd's Prometheus metrics. Counters and
// histograms are fed from the engine's events (Metrics.Observe is an
// engine.Subscribe callback and never blocks); gauges (queue depth, runs
// in flight, overdue hooks) are read from the engine when scraped.
//
// Metrics, all prefixed hookd_:
//
//	runs_total{hook,status}              final run records: completed, failed, skipped, dropped, cancelled
//	skips_total{hook,reason}             skipped records by reason: the gate (in_flight, cooldown, paused,
//	                                     disabled, event_depth, missed, slot_taken) or short_circuit
//	drops_total{hook,reason}             dropped records by reason (queue_full)
//	run_duration_seconds{hook}           histogram of the duration of runs that started
//	fire_lateness_seconds{hook}          histogram of how long after its jittered slot a scheduled run started
//	model_tokens_total{hook,kind}        tokens the model reported: prompt, completion, cached
//	tool_calls_total{tool,outcome}       tool calls of the model stage: ok, error, denied
//	events_total{source}                 events published: api, cli, engine, hook, watch
//	notifications_total{outcome}         webhook notifications: delivered, undeliverable, dropped (queue full)
//	traces_dropped_total                 runs not sent as traces: the exporter's queue was full
//	queue_depth                          runs waiting for a concurrency slot
//	runs_in_flight                       runs executing
//	hooks_overdue                        periodic hooks past due by more than the grace period without a run
//	hook_overdue{hook}                   1 for each of those hooks
//	engine_up                            1 when the engine answered the scrape, else 0
//
// plus the Go runtime and process collectors.
package metrics
