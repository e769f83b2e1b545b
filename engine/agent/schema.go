package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
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

// schemaMessage says what is wrong with the arguments plainly, for the
// model and for the person reading the record: the field (path.to.field,
// list[] for a list's items, map.* for an object's values) and the rule,
// with the numbers as JSON writes them — "n: must be at least 1 (got
// 0)", not the library's "/properties/n: minimum: 0/1 is less than
// 1.000000". A rule it does not know keeps the library's words after the
// field. Several failures (anyOf, oneOf) are joined with "; ".
func schemaMessage(err error) string {
	var b strings.Builder
	for _, line := range strings.Split(err.Error(), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		switch s := b.String(); {
		case s == "":
		case strings.HasSuffix(s, ":"):
			b.WriteByte(' ')
		default:
			b.WriteString("; ")
		}
		b.WriteString(schemaLine(line))
	}
	return b.String()
}

// schemaLine is schemaMessage of one line of the library's error:
// "validating PATH: [validating PATH: ]KEYWORD: DETAIL".
func schemaLine(line string) string {
	// Each location is the whole path from the schema's root, or from
	// where a $ref led: the field is their fields joined.
	var fields []string
	prev := ""
	for {
		rest, ok := strings.CutPrefix(line, "validating ")
		if !ok {
			break
		}
		p, after, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		if prev != "" && strings.HasPrefix(p, prev) && len(fields) > 0 {
			fields = fields[:len(fields)-1]
		}
		fields = append(fields, fieldOf(p))
		prev, line = p, after
	}
	var field string
	for _, f := range fields {
		if f != "" && field != "" && f[0] != '[' && f[0] != '.' {
			field += "."
		}
		field += f
	}
	prefix := ""
	if field != "" {
		prefix = field + ": "
	}
	for _, r := range schemaRules {
		if m := r.re.FindStringSubmatch(line); m != nil {
			return prefix + r.say(m)
		}
	}
	return prefix + line
}

// fieldOf names the argument a schema location checks: /properties/a/
// properties/b is a.b, /properties/l/items is l[], /properties/m/
// additionalProperties is m.*; the branches of anyOf, oneOf and allOf
// and the $defs a $ref leads to are left out.
func fieldOf(path string) string {
	if path == "root" {
		return ""
	}
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var b strings.Builder
	for i := 0; i < len(parts); i++ {
		switch parts[i] {
		case "properties", "patternProperties":
			if i+1 < len(parts) {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(parts[i+1])
				i++
			}
		case "items", "additionalItems":
			b.WriteString("[]")
		case "prefixItems":
			if i+1 < len(parts) {
				b.WriteString("[" + parts[i+1] + "]")
				i++
			}
		case "additionalProperties":
			b.WriteString(".*")
		case "anyOf", "oneOf", "allOf", "$defs", "definitions":
			i++
		}
	}
	return b.String()
}

// schemaRule rewrites one of the library's messages.
type schemaRule struct {
	re  *regexp.Regexp
	say func(m []string) string
}

var schemaRules = []schemaRule{
	{regexp.MustCompile(`^minimum: (\S+) is less than (\S+)$`), func(m []string) string {
		return fmt.Sprintf("must be at least %s (got %s)", num(m[2]), num(m[1]))
	}},
	{regexp.MustCompile(`^maximum: (\S+) is greater than (\S+)$`), func(m []string) string {
		return fmt.Sprintf("must be at most %s (got %s)", num(m[2]), num(m[1]))
	}},
	{regexp.MustCompile(`^exclusiveMinimum: (\S+) is less than or equal to (\S+)$`), func(m []string) string {
		return fmt.Sprintf("must be greater than %s (got %s)", num(m[2]), num(m[1]))
	}},
	{regexp.MustCompile(`^exclusiveMaximum: (\S+) is greater than or equal to (\S+)$`), func(m []string) string {
		return fmt.Sprintf("must be less than %s (got %s)", num(m[2]), num(m[1]))
	}},
	{regexp.MustCompile(`^multipleOf: (\S+) is not a multiple of (\S+)$`), func(m []string) string {
		return fmt.Sprintf("must be a multiple of %s (got %s)", num(m[2]), num(m[1]))
	}},
	{regexp.MustCompile(`^minLength: .* contains (\d+) Unicode code points, fewer than (\d+)$`), func(m []string) string {
		return fmt.Sprintf("must be at least %s long (got %s)", count(m[2], "character", "characters"), m[1])
	}},
	{regexp.MustCompile(`^maxLength: .* contains (\d+) Unicode code points, more than (\d+)$`), func(m []string) string {
		return fmt.Sprintf("must be at most %s long (got %s)", count(m[2], "character", "characters"), m[1])
	}},
	{regexp.MustCompile(`^minItems: array length (\d+) is less than (\d+)$`), func(m []string) string {
		return fmt.Sprintf("must have at least %s (got %s)", count(m[2], "item", "items"), m[1])
	}},
	{regexp.MustCompile(`^maxItems: array length (\d+) is greater than (\d+)$`), func(m []string) string {
		return fmt.Sprintf("must have at most %s (got %s)", count(m[2], "item", "items"), m[1])
	}},
	{regexp.MustCompile(`^minProperties: object has (\d+) properties, less than (\d+)$`), func(m []string) string {
		return fmt.Sprintf("must have at least %s (got %s)", count(m[2], "field", "fields"), m[1])
	}},
	{regexp.MustCompile(`^maxProperties: object has (\d+) properties, greater than (\d+)$`), func(m []string) string {
		return fmt.Sprintf("must have at most %s (got %s)", count(m[2], "field", "fields"), m[1])
	}},
	{regexp.MustCompile(`^type: (.*) has type "(\w+)", want "(\w+)"$`), func(m []string) string {
		return fmt.Sprintf("must be %s (got %s)", jsonType(m[3]), gotValue(m[2], m[1]))
	}},
	{regexp.MustCompile(`^type: (.*) has type "(\w+)", want one of "(.*)"$`), func(m []string) string {
		var want []string
		for _, t := range strings.Split(m[3], ", ") {
			want = append(want, jsonType(t))
		}
		return fmt.Sprintf("must be %s (got %s)", strings.Join(want, " or "), gotValue(m[2], m[1]))
	}},
	{regexp.MustCompile(`^enum: (.*) does not equal any of: \[(.*)\]$`), func(m []string) string {
		return fmt.Sprintf("must be one of %s (got %s)", strings.Join(strings.Fields(m[2]), ", "), m[1])
	}},
	{regexp.MustCompile(`^const: (.*) does not equal (.*)$`), func(m []string) string {
		return fmt.Sprintf("must be %s (got %s)", m[2], m[1])
	}},
	{regexp.MustCompile(`^pattern: (".*") does not match regular expression (".*")$`), func(m []string) string {
		return fmt.Sprintf("must match the pattern %s (got %s)", m[2], m[1])
	}},
	{regexp.MustCompile(`^required: missing properties: \[(.*)\]$`), func(m []string) string {
		return "missing required " + plural(m[1], "field", "fields") + " " + strings.Join(strings.Fields(m[1]), ", ")
	}},
	{regexp.MustCompile(`^unexpected additional properties \[(.*)\]$`), func(m []string) string {
		return "unknown " + plural(m[1], "field", "fields") + " " + strings.Join(strings.Fields(m[1]), ", ") + " (the schema allows no others)"
	}},
	{regexp.MustCompile(`^(anyOf|oneOf): did not validate against any of .*$`), func(m []string) string {
		return "matches none of the forms the schema allows (" + m[1] + "):"
	}},
}

// num writes a number of the library's message as JSON would: "0/1" (a
// big.Rat) is 0, "1.000000" is 1.
func num(s string) string {
	if r, ok := new(big.Rat).SetString(s); ok {
		if r.IsInt() {
			return r.Num().String()
		}
		f, _ := r.Float64()
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return s
}

// jsonType is a JSON Schema type with its article: "an integer".
func jsonType(t string) string {
	switch t {
	case "integer", "object", "array":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

// gotValue says what an argument of the wrong type was: its number, or
// its type.
func gotValue(typ, value string) string {
	if typ == "integer" || typ == "number" {
		return value
	}
	return jsonType(typ)
}

// count is n with its word: "1 item", "3 items".
func count(n, one, many string) string {
	if n == "1" {
		return n + " " + one
	}
	return n + " " + many
}

// plural picks the word for a list of quoted names as the library
// writes them: ["a" "b"] has two.
func plural(list, one, many string) string {
	if len(strings.Fields(list)) == 1 {
		return one
	}
	return many
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
