package config

import (
	"strings"
	"testing"
)

// TestSyntaxErrorHints: the YAML parser's words for the common mistakes
// get a hint, and the line that is wrong when the parser names the line
// its block began on.
func TestSyntaxErrorHints(t *testing.T) {
	t.Parallel()
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
		// yaml.v3 names the line above the tab's for these two.
		{"tab before a field's spaces", "trigger: {every: 1m}\nsteps:\n  - type: shell\n\t  command: x\n",
			"h.yaml:4: syntax error: found a tab character that violates indentation (a tab indents this line: YAML indents with spaces only)"},
		{"tab under a mapping", "trigger:\n  every: 1m\n\tcron: x\nsteps: []\n",
			"h.yaml:3: syntax error: found a tab character that violates indentation (a tab indents this line"},
		{"tab alone", "trigger:\n\tevery: 1m\nsteps: []\n",
			"h.yaml:2: syntax error: found character that cannot start any token (a tab indents this line"},
	} {
		_, err := ParseHook(strings.NewReader(tt.src), "h.yaml", Options{Root: t.TempDir(), DefaultName: "h"})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v\nwant %q", tt.name, err, tt.want)
		}
	}
	// hookd.yaml goes through the same parser.
	for _, tt := range []struct{ name, src, want string }{
		{"tab under llm", "db: x.db\nllm:\n  model: m\n\tmax_rounds: 3\n",
			"hookd.yaml:4: syntax error: found a tab character that violates indentation (a tab indents this line: YAML indents with spaces only)"},
		{"tab alone", "llm:\n\tmodel: m\n",
			"hookd.yaml:2: syntax error: found character that cannot start any token (a tab indents this line"},
	} {
		_, err := LoadDaemon(strings.NewReader(tt.src), "hookd.yaml")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("hookd.yaml, %s: %v\nwant %q", tt.name, err, tt.want)
		}
	}
}
