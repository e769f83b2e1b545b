package config

import (
	"strings"
	"testing"
)

// TestSyntaxErrorHints: the YAML parser's words for the common mistakes
// get a hint, and the line that is wrong when the parser names the line
// its block began on.
func TestSyntaxErrorHints(t *testing.T) {
	for _, tt := range []struct{ name, src, want string }{
		{"unquoted colon", "trigger: {every: 1m}\nsteps:\n  - type: shell\n    command: echo a: b\n",
			`h.yaml:4: syntax error: mapping values are not allowed in this context (a value with ": " in it must be quoted`},
		{"indented too deep", "trigger: {every: 1m}\nsteps:\n  - type: shell\n     command: x\n",
			"h.yaml:4: syntax error: mapping values are not allowed in this context (this line is indented deeper"},
		{"field off its level", "trigger:\n  every: 1m\n cron: x\nsteps: []\n",
			"h.yaml:3: syntax error: did not find expected key (this line is indented unlike"},
		{"list item field under the dash", "trigger: {every: 1m}\nsteps:\n  - type: shell\n  command: x\n",
			"h.yaml:4: syntax error: did not find expected '-' indicator (this line is indented unlike"},
		{"text on a new line", "trigger: {every: 1m}\nprompt: hello\nthere\nsteps: []\n",
			"h.yaml:3: syntax error: could not find expected ':' (a line that is neither"},
		{"unterminated quote", "prompt: 'hello\ntrigger: {every: 1m}\n",
			"syntax error: found unexpected end of stream (a quote or bracket opened above is never closed)"},
	} {
		_, err := ParseHook(strings.NewReader(tt.src), "h.yaml", Options{Root: t.TempDir(), DefaultName: "h"})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v\nwant %q", tt.name, err, tt.want)
		}
	}
}
