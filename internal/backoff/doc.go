// Package backoff is hookd's one retry policy: how long to wait before
// retrying what failed, and what a server asks for in Retry-After.
//
// A Policy waits Base before the first retry and doubles the wait before
// each later one, up to Max; jitter then takes off up to a fraction of
// the wait, so that retries of many callers do not line up. The engine's
// hook retries (retry: backoff, max_backoff), the LLM client's model
// calls and the notifier's webhooks all compute their waits with it, each
// with its own Base, Max and Jitter.
//
// RetryAfter reads a response's Retry-After header in both of its forms,
// delay-seconds ("120") and an HTTP date ("Wed, 21 Oct 2026 07:28:00
// GMT"), and the retry-after-ms header some model APIs send.
package backoff
