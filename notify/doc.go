// Package notify delivers webhook notifications about hook runs: to Slack,
// to Discord, or as a generic JSON object.
//
// A Notifier is fed the engine's events (Observe is an engine.Subscribe
// callback: it only decides whether a target wants the event and puts a
// job in a bounded queue, never blocking the engine). Worker goroutines
// build each message from the run's stored record (redacted by the engine
// before it is stored) and POST it, retrying network errors, 429 and 5xx
// answers with exponential backoff. A notification that cannot be queued
// (queue full) or delivered (attempts exhausted, or a 4xx answer) is
// logged and counted; it never blocks or fails a run. Webhook URLs may
// hold secrets, so they are never logged: logs name a target by its name,
// or by its format and position.
package notify
