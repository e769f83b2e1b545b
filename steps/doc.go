// Package steps provides hookd's context-gathering step kinds. Each kind
// lives in its own file and registers itself with engine.RegisterStep in
// an init function; cmd/hookd imports the package for that effect.
//
// # Kinds
//
// shell runs a command and reports its stdout (the primary output,
// {{step_N}}), stderr, exit_code, timed_out, truncated, duration_ms and
// command (as written). Fields:
//
//	command:    a string, run by /bin/sh -c, or a list of strings, run
//	            as argv without a shell
//	workdir:    a directory relative to the hook's workdir; it must stay
//	            inside it, also once symbolic links are resolved
//	env:        extra environment variables; values may hold placeholders
//	max_output: bytes kept of stdout and of stderr each (default 64 KiB);
//	            past it the head and the tail are kept around a marker
//
// The step's timeout (default 5m) kills the command's whole process group.
// A non-zero exit is a result, not an error; a command that cannot start,
// a placeholder that does not resolve, a workdir that escapes and a
// timeout are errors.
//
// # Placeholders in shell commands
//
// A placeholder's value never becomes shell code. In the list form each
// argument is expanded on its own, so a value stays inside its one
// argument whatever it holds. In the string form the value is not spliced
// into the script at all: the placeholder is replaced by a reference to an
// environment variable (HOOKD_P1, HOOKD_P2, ...) that holds the value —
// "${HOOKD_P1}" where it stands unquoted, so it is one word with no
// splitting or globbing, and ${HOOKD_P1} inside double quotes or an
// unquoted here-document. The shell expands a variable without parsing
// its value again, so quotes, semicolons, $(...), backquotes and newlines
// in event data arrive as data.
//
// Where the shell would not expand the reference, or would evaluate its
// value, the hook is refused when it is loaded: a placeholder inside
// single quotes, $'...' or a here-document with a quoted delimiter, inside
// $((...)) or backquotes, or right after a '$' or a backslash. Values in
// env are passed as they are; they are never parsed as code either, unless
// the script itself evals them.
//
// # Running processes
//
// Command is the process runner the step kinds and tools share: its own
// process group, a timeout that kills the whole group (SIGTERM, then
// SIGKILL after a grace period), bounded output capture and a result that
// tells an exit status from a failure to run.
package steps
