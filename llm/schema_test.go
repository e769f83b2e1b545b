package llm

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
		{`{}`, "argument path: required"},
		{`{"path":""}`, "argument path: needs at least 1 character(s)"},
		{`{"path":1}`, "argument path: want string, got an integer"},
		{`{"path":"a","argv":[]}`, "argument argv: needs at least 1 item(s) (got 0)"},
		{`{"path":"a","argv":["a","b","c","d"]}`, "argument argv: takes at most 3 item(s) (got 4)"},
		{`{"path":"a","argv":["a",2]}`, "argument argv[1]: want string, got an integer"},
		{`{"path":"a","mode":"c"}`, `argument mode: must be one of "a", "b" (got "c")`},
		{`{"path":"a","n":0}`, "argument n: must be >= 1 (got 0)"},
		{`{"path":"a","n":11}`, "argument n: must be <= 10 (got 11)"},
		{`{"path":"a","n":2.5}`, "argument n: want integer, got a number"},
		{`{"path":"a","opt":3}`, "argument opt: want string or null, got an integer"},
		{`{"path":"a","nested":{}}`, "argument nested.x: required"},
		{`{"path":"a","extra":{"k":"v"}}`, "argument extra.k: want number, got a string"},
		{`{"path":"a","bogus":1}`, "argument bogus: unknown (known: argv, extra, mode, n, nested, opt, path)"},
		{`[]`, "arguments: want object, got a list"},
		{`{"path":`, "arguments are not valid JSON"},
		{`{"path":"a"} {}`, "arguments are not valid JSON: more than one value"},
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
	// Unknown keywords are ignored; an empty schema takes any object; a
	// schema without additionalProperties takes extra keys.
	for _, raw := range []string{``, `null`, `{"type":"object","$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"a":{"type":"string","format":"uri","pattern":"^x"}}}`} {
		s, err := CompileSchema([]byte(raw))
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if err := s.ValidateJSON([]byte(`{"a":"y","b":2}`)); err != nil {
			t.Errorf("%q: %v", raw, err)
		}
	}
	if _, err := CompileSchema([]byte(`{"type":7}`)); err == nil {
		t.Error("a numeric type must not compile")
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
