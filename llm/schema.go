package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Schema is the subset of JSON Schema that tool arguments are checked
// against before a tool runs: type (one or a list), properties, required,
// additionalProperties (false or a schema), items, enum, minimum, maximum,
// minLength, maxLength, minItems, maxItems. Other keywords are accepted
// and ignored, so an MCP server's richer schema still compiles.
type Schema struct {
	types      []string
	properties map[string]*Schema
	required   []string
	additional *Schema // nil: any additional property is allowed
	noExtra    bool    // additionalProperties: false
	items      *Schema
	enum       []json.RawMessage
	min, max   *float64
	minLen     *int
	maxLen     *int
	minItems   *int
	maxItems   *int
}

// rawSchema is how a schema is written.
type rawSchema struct {
	Type                 json.RawMessage            `json:"type"`
	Properties           map[string]json.RawMessage `json:"properties"`
	Required             []string                   `json:"required"`
	AdditionalProperties json.RawMessage            `json:"additionalProperties"`
	Items                json.RawMessage            `json:"items"`
	Enum                 []json.RawMessage          `json:"enum"`
	Minimum              *float64                   `json:"minimum"`
	Maximum              *float64                   `json:"maximum"`
	MinLength            *int                       `json:"minLength"`
	MaxLength            *int                       `json:"maxLength"`
	MinItems             *int                       `json:"minItems"`
	MaxItems             *int                       `json:"maxItems"`
}

// CompileSchema reads a JSON schema. An empty or null schema accepts any
// object.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return &Schema{types: []string{"object"}}, nil
	}
	return compile(raw, "")
}

func compile(raw json.RawMessage, path string) (*Schema, error) {
	if t := bytes.TrimSpace(raw); string(t) == "true" || string(t) == "{}" {
		return &Schema{}, nil
	}
	var r rawSchema
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("schema%s: %w", at(path), err)
	}
	s := &Schema{required: r.Required, enum: r.Enum, min: r.Minimum, max: r.Maximum,
		minLen: r.MinLength, maxLen: r.MaxLength, minItems: r.MinItems, maxItems: r.MaxItems}
	if len(r.Type) > 0 {
		var one string
		if err := json.Unmarshal(r.Type, &one); err == nil {
			s.types = []string{one}
		} else if err := json.Unmarshal(r.Type, &s.types); err != nil {
			return nil, fmt.Errorf("schema%s: type must be a string or a list of strings", at(path))
		}
	}
	if len(r.Properties) > 0 {
		s.properties = make(map[string]*Schema, len(r.Properties))
		for k, v := range r.Properties {
			p, err := compile(v, path+"."+k)
			if err != nil {
				return nil, err
			}
			s.properties[k] = p
		}
	}
	switch ap := bytes.TrimSpace(r.AdditionalProperties); {
	case len(ap) == 0, string(ap) == "true":
	case string(ap) == "false":
		s.noExtra = true
	default:
		a, err := compile(ap, path+".*")
		if err != nil {
			return nil, err
		}
		s.additional = a
	}
	if len(r.Items) > 0 && r.Items[0] == '{' {
		it, err := compile(r.Items, path+"[]")
		if err != nil {
			return nil, err
		}
		s.items = it
	}
	return s, nil
}

// ValidateJSON decodes args and checks them against s. The error says
// which argument is wrong and why, for the model to correct itself.
func (s *Schema) ValidateJSON(args []byte) error {
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("arguments are not valid JSON: more than one value")
	}
	return s.Validate(v)
}

// Validate checks a decoded JSON value (numbers as json.Number or
// float64) against s.
func (s *Schema) Validate(v any) error { return s.validate(v, "") }

func (s *Schema) validate(v any, path string) error {
	if len(s.types) > 0 {
		ok := false
		for _, t := range s.types {
			if hasType(v, t) {
				ok = true
				break
			}
		}
		if !ok {
			return fmt.Errorf("argument%s: want %s, got %s", at(path), strings.Join(s.types, " or "), typeOf(v))
		}
	}
	if len(s.enum) > 0 {
		got, _ := json.Marshal(v)
		ok := false
		var allowed []string
		for _, e := range s.enum {
			if jsonEqual(got, e) {
				ok = true
				break
			}
			allowed = append(allowed, string(bytes.TrimSpace(e)))
		}
		if !ok {
			return fmt.Errorf("argument%s: must be one of %s (got %s)", at(path), strings.Join(allowed, ", "), got)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range s.required {
			if _, ok := x[k]; !ok {
				return fmt.Errorf("argument%s: required", at(path+"."+k))
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p, ok := s.properties[k]
			switch {
			case ok:
			case s.additional != nil:
				p = s.additional
			case s.noExtra:
				known := make([]string, 0, len(s.properties))
				for n := range s.properties {
					known = append(known, n)
				}
				sort.Strings(known)
				return fmt.Errorf("argument%s: unknown (known: %s)", at(path+"."+k), strings.Join(known, ", "))
			default:
				continue
			}
			if err := p.validate(x[k], path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		if s.minItems != nil && len(x) < *s.minItems {
			return fmt.Errorf("argument%s: needs at least %d item(s) (got %d)", at(path), *s.minItems, len(x))
		}
		if s.maxItems != nil && len(x) > *s.maxItems {
			return fmt.Errorf("argument%s: takes at most %d item(s) (got %d)", at(path), *s.maxItems, len(x))
		}
		if s.items != nil {
			for i, e := range x {
				if err := s.items.validate(e, path+"["+strconv.Itoa(i)+"]"); err != nil {
					return err
				}
			}
		}
	case string:
		n := len([]rune(x))
		if s.minLen != nil && n < *s.minLen {
			return fmt.Errorf("argument%s: needs at least %d character(s)", at(path), *s.minLen)
		}
		if s.maxLen != nil && n > *s.maxLen {
			return fmt.Errorf("argument%s: takes at most %d character(s) (got %d)", at(path), *s.maxLen, n)
		}
	case json.Number, float64:
		f, _ := number(x)
		if s.min != nil && f < *s.min {
			return fmt.Errorf("argument%s: must be >= %v (got %v)", at(path), *s.min, x)
		}
		if s.max != nil && f > *s.max {
			return fmt.Errorf("argument%s: must be <= %v (got %v)", at(path), *s.max, x)
		}
	}
	return nil
}

// at formats a path inside the arguments: "" for the whole, " limit" or
// " argv[2]" otherwise.
func at(path string) string {
	if path == "" {
		return "s"
	}
	return " " + strings.TrimPrefix(path, ".")
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	}
	return 0, false
}

func hasType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := number(v)
		return ok
	case "integer":
		f, ok := number(v)
		return ok && f == math.Trunc(f) && !math.IsInf(f, 0)
	}
	return true // a type we do not know: do not refuse
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
	case json.Number, float64:
		if f, _ := number(x); f == math.Trunc(f) {
			return "an integer"
		}
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
