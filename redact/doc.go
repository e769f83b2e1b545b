// Package redact replaces the values of secrets in text before it is
// kept, shown or sent: a Redactor is built from the names of a hook's
// secrets and the environment that holds their values (New), and finds
// each value as it is and in the forms it takes when quoted, escaped or
// encoded, also wrapped into lines. It redacts strings, decoded JSON
// values and streams (Writer, which holds back only what could be the
// start of a secret, so output can be capped after it without leaving a
// fragment behind).
//
// It knows nothing of hooks or runs: package engine builds a Redactor per
// run and applies it to steps, events, prompts, tool results and the run
// record.
package redact
