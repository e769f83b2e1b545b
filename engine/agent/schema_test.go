package agent

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSchema(t *testing.T) {
	const schema = `{"type":"object","properties":{
		"path":{"type":"string","minLength":1},
		"argv":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":3},
		"mode":{"enum":["a","b"]},
		"n":{"type":"integer","minimum":1,"maximum":10},
		"f":{"type":"number","exclusiveMinimum":0.5,"multipleOf":0.25},
		"opt":{"type":["string","null"]},
		"nested":{"type":"object","properties":{"x":{"type":"boolean"}},"required":["x"]},
		"extra":{"type":"object","additionalProperties":{"type":"number"}}
	},"required":["path"],"additionalProperties":false}`
	s, err := CompileSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ args, err string }{
		{`{"path":"a"}`, ""},
		{`{"path":"a","argv":["x","y"],"mode":"b","n":10,"opt":null,"nested":{"x":true},"extra":{"k":1.5}}`, ""},
		{`{}`, `arguments do not match the tool's schema: missing required field "path"`},
		{`{"path":""}`, "path: must be at least 1 character long (got 0)"},
		{`{"path":1}`, `path: must be a string (got 1)`},
		{`{"path":"a","argv":[]}`, "argv: must have at least 1 item (got 0)"},
		{`{"path":"a","argv":["a","b","c","d"]}`, "argv: must have at most 3 items (got 4)"},
		{`{"path":"a","argv":["a",2]}`, `argv[]: must be a string (got 2)`},
		{`{"path":"a","mode":"c"}`, "mode: must be one of a, b (got c)"},
		{`{"path":"a","n":0}`, "arguments do not match the tool's schema: n: must be at least 1 (got 0)"},
		{`{"path":"a","n":-3}`, "n: must be at least 1 (got -3)"},
		{`{"path":"a","f":0.5}`, "f: must be greater than 0.5 (got 0.5)"},
		{`{"path":"a","f":0.6}`, "f: must be a multiple of 0.25 (got 0.6)"},
		{`{"path":"a","n":11}`, "n: must be at most 10 (got 11)"},
		{`{"path":"a","n":2.5}`, `n: must be an integer (got 2.5)`},
		{`{"path":"a","opt":3}`, "opt: must be a string or null (got 3)"},
		{`{"path":"a","nested":{}}`, `nested: missing required field "x"`},
		{`{"path":"a","extra":{"k":"v"}}`, `extra.*: must be a number (got a string)`},
		{`{"path":"a","bogus":1}`, `unknown field "bogus" (the schema allows no others)`},
		{`[]`, "arguments: want an object, got a list"},
		{`{"path":`, "arguments are not valid JSON"},
		{`{"path":"a"} {}`, "arguments are not valid JSON: more than one value"},
	} {
		err := s.ValidateJSON([]byte(tc.args))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.args, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got %v, want %q", tc.args, err, tc.err)
		case err != nil && strings.Contains(err.Error(), "\n"):
			t.Errorf("%s: the message is not one line: %q", tc.args, err)
		}
	}
}

// TestSchemaMCPKeywords checks the keywords issue 14 found MCP servers
// use and the old hand-written subset ignored: $ref with $defs, anyOf,
// oneOf and pattern, in a schema as zod-to-json-schema writes it.
func TestSchemaMCPKeywords(t *testing.T) {
	const schema = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{
		"path":{"type":"string","pattern":"^[a-z/]+$"},
		"edit":{"$ref":"#/definitions/edit"},
		"target":{"anyOf":[{"type":"string"},{"type":"integer","minimum":0}]},
		"mode":{"oneOf":[{"const":"fast"},{"type":"string","maxLength":3}]}
	},"definitions":{"edit":{"type":"object","properties":{"oldText":{"type":"string"},"newText":{"type":"string"}},"required":["oldText","newText"],"additionalProperties":false}},
	"required":["path"],"additionalProperties":false}`
	s, err := CompileSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ args, err string }{
		{`{"path":"a/b","edit":{"oldText":"x","newText":"y"},"target":3,"mode":"abc"}`, ""},
		{`{"path":"a/b","target":"x"}`, ""},
		{`{"path":"A B"}`, `path: must match the pattern "^[a-z/]+$" (got "A B")`},
		{`{"path":"a","edit":{"oldText":"x"}}`, `edit: missing required field "newText"`},
		{`{"path":"a","edit":{"oldText":"x","newText":"y","extra":1}}`, `edit: unknown field "extra" (the schema allows no others)`},
		{`{"path":"a","target":-1}`, `target: matches none of the forms the schema allows (anyOf): target: must be a string (got -1); target: must be at least 0 (got -1)`},
		{`{"path":"a","target":true}`, "anyOf"},
		{`{"path":"a","mode":"slow"}`, "oneOf"},
		{`{"path":"a","mode":"fast"}`, ""}, // matches the const only: maxLength 3 fails
	} {
		err := s.ValidateJSON([]byte(tc.args))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.args, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got %v, want %q", tc.args, err, tc.err)
		}
	}
}

func TestSchemaLenient(t *testing.T) {
	// Annotations and unknown keywords are ignored; an empty schema takes
	// any object; a schema without additionalProperties takes extra keys;
	// an older draft's $schema is read as 2020-12.
	for _, raw := range []string{``, `null`, `true`, `{}`,
		`{"type":"object","$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"a":{"type":"string","format":"uri","x-ui":"wide"}}}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"a":{"type":"string"}}}`} {
		s, err := CompileSchema([]byte(raw))
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if err := s.ValidateJSON([]byte(`{"a":"y","b":2}`)); err != nil {
			t.Errorf("%q: %v", raw, err)
		}
	}
	for _, raw := range []string{`{"type":7}`, `{"properties":{"a":{"$ref":"#/$defs/missing"}}}`} {
		if _, err := CompileSchema([]byte(raw)); err == nil {
			t.Errorf("%s compiled", raw)
		}
	}
}

func TestCapText(t *testing.T) {
	s := strings.Repeat("é", 1000) // 2000 bytes
	out, cut := capText(s, 200)
	if !cut || len(out) > 200 || !utf8.ValidString(out) || !strings.Contains(out, "bytes truncated]") {
		t.Errorf("cut %v, len %d, valid %v: %q", cut, len(out), utf8.ValidString(out), out)
	}
	if out, cut := capText("short", 200); cut || out != "short" {
		t.Errorf("%q %v", out, cut)
	}
}
