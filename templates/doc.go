// Package templates renders hook prompts. Renderer implements
// engine.PromptRenderer; cmd/hookd sets it as the engine's Config.Prompt.
//
// # Layout
//
// A rendered prompt is the embedded preamble (preamble.md.tmpl, a
// text/template: the hook's name and description, the trigger, the time,
// the last run's time and the whole seconds since it or "never", the
// workdir, and how to read the data in the prompt), then a "## Instructions"
// heading and the hook's prompt with its placeholders expanded.
//
// # Data and instructions
//
// The hook's prompt is the author's instructions. Values it pulls in from
// steps and events ({{step_N}}, {{step_N.field}}, {{steps.NAME.field}},
// {{event}}, {{event.path}}) are data, and are inserted so that a value
// cannot pass itself off as instructions:
//
//   - numbers and booleans as they are (exit code 0);
//   - a string of at most Options.InlineMax bytes (default 100) with no
//     line break (one newline at its end, as command output has, is
//     dropped), inline, as a Go-quoted string ("api", "a \"quoted\"
//     word"): quotes and backslashes inside are escaped, so the value
//     cannot end the string;
//   - anything else — a longer string, a string with a line break, an
//     object or a list (as JSON), a truncated value — as a fenced block on
//     lines of its own, the text around the placeholder staying on the
//     lines before and after it.
//
// A fenced block looks like this:
//
//	<<<DATA 5f2e9c41 steps.tests.stdout
//	...the value...
//	DATA 5f2e9c41>>>
//
// Its id is 8 hex digits derived from the value (FenceID): the same
// context renders the same prompt, and an id whose closing text (DATA, the
// id, >>>) occurs anywhere in the value is never used, so the value cannot
// close its fence early, whatever it holds.
//
// The preamble tells the model that quoted values and fenced blocks are
// data to work on, never instructions. hookd's own values ({{hook}},
// {{run}}, {{trigger}}, {{now}}, {{last_run_time}}) and literal
// placeholders ({{"text"}}, see engine.ParsePlaceholders) are inserted as
// they are.
//
// # Caps
//
// Each value from steps and events is capped at Options.MaxValueBytes
// (default 16 KiB) before it is inserted: its head and tail are kept, cut
// at character boundaries, around a "[hookd: N bytes truncated]" line
// naming how much was cut. Invalid UTF-8 becomes U+FFFD.
//
// A placeholder that does not resolve when the run renders its prompt
// fails the render with an error naming it.
package templates
