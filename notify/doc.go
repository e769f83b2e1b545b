// Package notify delivers webhook notifications about hook runs: to Slack,
// to Discord, or as a generic JSON object.
//
// A Notifier is fed the engine's events (Observe is an engine.Subscribe
// callback: it only decides whether a target wants the event and puts a
// job in the bounded queue of the target's webhook URL, never blocking the
// engine). Each URL has its own queue and worker, so a webhook that is
// slow or hung delays only its own notifications. A worker builds each
// message from the run's stored record (redacted by the engine before it
// is stored) and POSTs it, retrying network errors, 429 and 5xx answers
// with exponential backoff (internal/backoff, Retry-After honoured). A
// notification that cannot be queued (queue full) is logged, counted and
// noted on its run; one that cannot be delivered (attempts exhausted, or a
// 4xx answer) is logged and counted; neither blocks or fails a run. Webhook URLs may
// hold secrets, so they are never logged: logs name a target by its name,
// or by its format and position.
package notify
