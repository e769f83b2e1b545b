package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schema is a tool's JSON Schema, against which its arguments are
// checked before it runs. It is compiled and applied by
// github.com/google/jsonschema-go (drafts 2020-12 and 07, as MCP servers
// write them): $ref and $defs, anyOf, oneOf, allOf, not, pattern, enum,
// const and the numeric, length and count bounds are checked; format,
// other annotations and unknown keywords are not.
type Schema struct {
	rs *jsonschema.Resolved
}

// CompileSchema reads a JSON schema. An empty or null schema accepts any
// object. A $schema naming a draft the library does not know (draft-04,
// draft-06) is read as 2020-12, whose keywords those drafts share.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		t = []byte(`{"type":"object"}`)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(t, &s); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	switch strings.TrimSuffix(s.Schema, "#") {
	case "", "http://json-schema.org/draft-07/schema", "https://json-schema.org/draft-07/schema", "https://json-schema.org/draft/2020-12/schema":
	default:
		s.Schema = ""
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return &Schema{rs: rs}, nil
}

// ValidateJSON decodes args, which must be one JSON object, and checks
// them against s. The error says which argument is wrong and why, for the
// model to correct itself.
func (s *Schema) ValidateJSON(args []byte) error {
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("arguments are not valid JSON: more than one value")
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("arguments: want an object, got %s", typeOf(v))
	}
	if err := s.rs.Validate(v); err != nil {
		return fmt.Errorf("arguments do not match the tool's schema: %s", schemaMessage(err))
	}
	return nil
}

// schemaMessage makes the library's message shorter for the model: the
// schema locations it passed through, without the "validating" of each,
// on one line.
func schemaMessage(err error) string {
	msg := strings.ReplaceAll(err.Error(), "validating root: ", "")
	msg = strings.ReplaceAll(msg, "validating ", "")
	return strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")
}

func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64:
		if x == math.Trunc(x) {
			return "an integer"
		}
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
