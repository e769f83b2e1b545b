package config

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/hookd/hookd/engine"
	"gopkg.in/yaml.v3"
)

// Decoder decodes one mapping of a configuration file strictly into Go
// values. It implements engine.Decoder: the loader hands each step kind a
// Decoder over the step's kind-specific keys.
//
// Decode follows the field names of yaml struct tags (or the lower-cased
// Go field name; ",inline" embeds a struct). An unknown key, a wrong type
// or a duration without a unit is an error naming the file, line and
// field path. A field of type any receives plain values (string, bool,
// int, float64, []any, map[string]any), so a field that is either a
// string or a list can be decoded and inspected. time.Duration fields take
// Go duration strings, or whole seconds when the key ends in _seconds.
// Types implementing yaml.Unmarshaler or encoding.TextUnmarshaler decode
// themselves. Null values leave fields as they are.
//
// A Decoder is for the step kind's New that it is handed to: the loader
// reuses the nodes of a file's parsed tree for its next file, so a
// Decoder kept past New must not be used. What Decode fills (a yaml.Node
// field too) is the caller's to keep.
type Decoder struct {
	file   string
	path   string
	node   *yaml.Node // a mapping, or nil
	line   int
	known  []string // keys handled around this mapping, for suggestions
	used   bool
	budget *int // nodes left to visit in the file
	sc     *scratch
}

var _ engine.Decoder = (*Decoder)(nil)

// NewDecoder returns a Decoder over node (a mapping, or a document holding
// one) from file; field paths in errors start with path.
func NewDecoder(file, path string, node *yaml.Node) *Decoder {
	if node != nil && node.Kind == yaml.DocumentNode && len(node.Content) > 0 {
		node = node.Content[0]
	}
	budget := maxNodes
	d := &Decoder{file: file, path: path, node: node, budget: &budget}
	if node != nil {
		d.line = node.Line
	}
	return d
}

// Decode decodes the mapping into v, which must be a non-nil pointer. The
// error, if any, is an Errors list.
func (d *Decoder) Decode(v any) error {
	d.used = true
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &Error{File: d.file, Line: d.line, Field: d.path,
			Msg: fmt.Sprintf("config: Decode needs a non-nil pointer, got %T", v)}
	}
	s := d.sc.newState(d.file)
	s.budget, s.extra, s.extraPath = d.budget, d.known, d.path
	if d.node == nil {
		// Nothing to decode, but a struct still accepts an empty mapping.
		return nil
	}
	s.decode(d.node, d.path, rv.Elem())
	if l := s.result(); l != nil {
		return l
	}
	return nil
}

// Errorf returns an *Error located at field, a dotted key path inside the
// mapping ("command", "headers.Accept"), or at the mapping itself when
// the field is absent. Step kinds use it to report a bad value after
// decoding it.
func (d *Decoder) Errorf(field, format string, args ...any) error {
	line := d.line
	n := d.node
	for key := range strings.SplitSeq(field, ".") {
		n = resolve(n)
		if n == nil || n.Kind != yaml.MappingNode {
			break
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
				line = n.Content[i].Line
				break
			}
		}
		n = next
	}
	return &Error{File: d.file, Line: line, Field: join(d.path, field), Msg: fmt.Sprintf(format, args...)}
}

// unused reports the keys of a mapping that nobody decoded.
func (d *Decoder) unused(s *state) {
	if d.used || d.node == nil {
		return
	}
	for i := 0; i+1 < len(d.node.Content); i += 2 {
		k := d.node.Content[i]
		s.add(k.Line, join(d.path, k.Value), unknownField(k.Value, d.known, nil))
	}
}
