package engine

import (
	"bytes"
	"encoding/json"
	"errors"
)

// ChangeJSON turns a handler's change into JSON: raw JSON stays as it is,
// a string must hold JSON, anything else is marshalled.
func ChangeJSON(v any) ([]byte, error) {
	switch x := v.(type) {
	case json.RawMessage:
		return validJSON(x)
	case []byte:
		return validJSON(x)
	case string:
		return validJSON([]byte(x))
	}
	return json.Marshal(v)
}

func validJSON(b []byte) ([]byte, error) {
	if !json.Valid(b) {
		return nil, errors.New("not valid JSON")
	}
	return b, nil
}

// CanonicalJSON decodes a JSON value and encodes it again: escapes such
// as \u0072 become the characters they stand for, a key given twice
// keeps its last value (as the tool's decoder would), keys are sorted and
// numbers kept as written. The tool:call:before handlers and the tool
// see these same canonical arguments, so a handler cannot be fooled by
// an encoding the tool reads differently. It reports false when raw is
// not one valid JSON value.
func CanonicalJSON(raw []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, false
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), true
}

// ToolInputJSON is the tool:call:before change of a tool's arguments as
// the tool gets them: ChangeJSON, then CanonicalJSON. The registry's
// second judgement and the tool see these same bytes.
func ToolInputJSON(v any) (json.RawMessage, error) {
	b, err := ChangeJSON(v)
	if err != nil {
		return nil, err
	}
	if canon, ok := CanonicalJSON(b); ok {
		b = canon
	}
	return b, nil
}
