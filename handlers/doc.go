// Package handlers runs the command handlers declared in hooks.d: files
// with `on:` (a lifecycle point) instead of a trigger. Each becomes an
// engine lifecycle handler that runs the file's command with the point's
// payload as JSON on stdin and reads its answer the way agent CLIs'
// command hooks do: exit 0 allows (JSON on stdout may decide or amend),
// exit 2 blocks with stderr as the reason, any other exit is an error
// handled by the file's on_error policy. Set keeps a directory's
// handlers registered across reloads.
package handlers
