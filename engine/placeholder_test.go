package engine_test

import (
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

// TestLiteralPlaceholders: {{"text"}} stands for its text, which is how a
// template writes a literal "{{".
func TestLiteralPlaceholders(t *testing.T) {
	t.Parallel()
	scope := &engine.Scope{Hook: "h", Event: map[string]any{"name": "web"}}
	for _, tc := range []struct{ tmpl, want string }{
		{`docker ps --format {{"{{.Names}}"}}`, `docker ps --format {{.Names}}`},
		{`{{"{{"}}json .{{"}}"}}`, `{{json .}}`},
		{`{{ "{{" }}.Names}} of {{event.name}}`, `{{.Names}} of web`},
		{`{{"say \"hi\"\n"}}`, "say \"hi\"\n"},
		{`{{""}}x`, `x`},
		{`{{"}}"}} {{hook}}`, `}} h`},
	} {
		got, err := engine.Expand(tc.tmpl, scope, nil)
		if err != nil || got != tc.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tc.tmpl, got, err, tc.want)
		}
	}

	phs, err := engine.ParsePlaceholders(`a {{"{{"}} b {{step_0}}`)
	if err != nil || len(phs) != 2 {
		t.Fatalf("ParsePlaceholders: %v, %v", phs, err)
	}
	if !phs[0].IsLiteral() || phs[0].Literal != "{{" || phs[0].Path != `"{{"` || phs[0].Start != 2 || phs[0].End != 10 {
		t.Errorf("literal placeholder = %+v", phs[0])
	}
	if phs[1].IsLiteral() || phs[1].Path != "step_0" {
		t.Errorf("path placeholder = %+v", phs[1])
	}
	if v, err := scope.Lookup(phs[0].Path); err != nil || v != "{{" {
		t.Errorf("Lookup(%s) = %v, %v", phs[0].Path, v, err)
	}

	// A literal needs no step and no root: it always checks.
	if err := engine.CheckPlaceholders(`{{"{{step_9}}"}}`, nil, 1); err != nil {
		t.Errorf("CheckPlaceholders of a literal: %v", err)
	}

	for _, tc := range []struct{ tmpl, want string }{
		{`{{"unterminated}}`, "literal placeholder at offset 0"},
		{`x {{"a" b}}`, "literal placeholder at offset 2: want }} right after the string"},
		{`{{"a"`, "want }} right after"},
		{`{{'a'}}`, `invalid character '\''`},
		{`{{.Names}}`, "empty path segment"},
	} {
		_, err := engine.ParsePlaceholders(tc.tmpl)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePlaceholders(%q): err = %v, want %q", tc.tmpl, err, tc.want)
		}
	}
}
