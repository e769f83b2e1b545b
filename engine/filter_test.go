package engine

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/hookd/hookd/redact"
)

func TestFilters(t *testing.T) {
	t.Parallel()
	scope := &Scope{Hook: "h", Event: map[string]any{
		"msg":   "He said \"hi\"\n\tand left </b>",
		"log":   "l1\nl2\nl3\nl4\n",
		"n":     float64(3),
		"obj":   map[string]any{"a": []any{"x", float64(1)}},
		"empty": "",
		"nil":   nil,
		"sp":    "  padded \n",
		"q":     "a b&c=d/é",
		"uni":   "héllo wörld",
	}}
	for _, c := range []struct{ tmpl, want string }{
		{`{{event.msg | json}}`, `"He said \"hi\"\n\tand left </b>"`},
		{`{{event.n | json}}`, `3`},
		{`{{event.obj | json}}`, `{"a":["x",1]}`},
		{`{{event.nil | json}}`, `null`},
		{`{{event.q | urlquery}}`, `a%20b%26c%3Dd%2F%C3%A9`},
		{`{{event.q | base64}}`, base64.StdEncoding.EncodeToString([]byte("a b&c=d/é"))},
		{`[{{event.sp | trim}}]`, `[padded]`},
		{`{{event.q | upper}}|{{event.uni | upper | lower}}`, `A B&C=D/É|héllo wörld`},
		{`{{event.log | head 2}}`, "l1\nl2\n"},
		{`{{event.log | lines 1}}`, "l1\n"},
		{`{{event.log | tail 2}}`, "l3\nl4\n"},
		{`{{event.log | tail 10}}`, "l1\nl2\nl3\nl4\n"},
		{`{{event.log | head 10}}`, "l1\nl2\nl3\nl4\n"},
		{`{{event.uni | truncate 5}}`, "héllo…"},
		{`{{event.uni | truncate 50}}`, "héllo wörld"},
		{`{{event.empty | default "none"}}`, "none"},
		{`{{event.nil | default "none"}}`, "none"},
		{`{{event.absent | default "n/a"}}`, "n/a"},
		{`{{event.n | default "none"}}`, "3"},
		{`{{event.empty | default "a | b" | upper}}`, "A | B"},
		{`{{event.log|tail 1|trim|json}}`, `"l4"`},
		{`{{ hook | upper }}`, "H"},
	} {
		got, err := Expand(c.tmpl, scope, nil)
		if err != nil {
			t.Errorf("%s: %v", c.tmpl, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s = %q, want %q", c.tmpl, got, c.want)
		}
	}
}

func TestFilterErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ tmpl, want string }{
		{`{{event.x | nope}}`, `unknown filter "nope" (filters: base64, default, head, json, lines, lower, tail, trim, truncate, upper, urlquery)`},
		{`{{event.x | truncate}}`, `filter truncate takes one whole number > 0: truncate N (got "")`},
		{`{{event.x | truncate x}}`, `filter truncate takes one whole number > 0: truncate N (got "x")`},
		{`{{event.x | tail 0}}`, `filter tail takes one whole number > 0`},
		{`{{event.x | head -3}}`, `filter head takes one whole number > 0`},
		{`{{event.x | json 2}}`, `filter json: unexpected "2" (filters are separated by '|'; json takes no argument)`},
		{`{{event.x | default none}}`, `filter default takes one double-quoted text: default "text"`},
		{`{{event.x | default}}`, `filter default takes one double-quoted text`},
		{`{{event.x | truncate 3 4}}`, `filter truncate: unexpected "4"`},
		{`{{event.x |}}`, `empty filter after '|'`},
		{`{{event.x | | json}}`, `empty filter after '|'`},
		{`{{ | json}}`, `empty path`},
	} {
		_, err := ParsePlaceholders(c.tmpl)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.tmpl, err, c.want)
		}
	}
	// The path is still checked against the hook's steps.
	if err := CheckPlaceholders(`{{steps.nope.stdout | json}}`, nil, 0); err == nil || !strings.Contains(err.Error(), `no step named "nope"`) {
		t.Errorf("unknown step under a filter: %v", err)
	}
}

// TestFiltersSeeRedactedValues: a secret that reaches a placeholder is
// redacted before any filter transforms it, so no filter can turn it
// into a form the redactor would miss (upper case, a prefix, a tail, an
// encoding of a part).
func TestFiltersSeeRedactedValues(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-Value-0042-xyz"
	red := redact.New([]string{"TOKEN"}, []string{"TOKEN=" + secret})
	scope := &Scope{Redactor: red, Event: map[string]any{
		"tok": secret, "line": "key=" + secret + "\nnext", "obj": map[string]any{"k": secret},
	}}
	for _, tmpl := range []string{
		`{{event.tok | upper}}`, `{{event.tok | lower}}`, `{{event.tok | truncate 10}}`, `{{event.line | head 1 | base64}}`,
		`{{event.tok | base64}}`, `{{event.tok | urlquery}}`, `{{event.obj | json}}`, `{{event.line | tail 2 | upper | urlquery}}`,
		`{{event.tok | default "x" | truncate 8 | base64}}`,
	} {
		got, err := Expand(tmpl, scope, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, leak := range leakForms(secret) {
			if strings.Contains(got, leak) {
				t.Errorf("%s = %q holds %q", tmpl, got, leak)
			}
		}
	}
	if got, _ := Expand(`{{event.tok | upper}}`, scope, nil); got != "[REDACTED:TOKEN]" {
		t.Errorf("upper of the secret: %q", got)
	}
}

// leakForms are pieces of secret a filter could make of it.
func leakForms(secret string) []string {
	out := []string{secret[:8], strings.ToUpper(secret[:8]), strings.ToLower(secret[:8]), secret[len(secret)-8:]}
	for _, s := range []string{secret, secret[:8], strings.ToUpper(secret)} {
		out = append(out, base64.StdEncoding.EncodeToString([]byte(s))[:8])
	}
	return out
}
