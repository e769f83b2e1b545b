package config

import (
	"encoding"
	"reflect"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"
)

var (
	nodeType     = reflect.TypeFor[yaml.Node]()
	durationType = reflect.TypeFor[time.Duration]()
	unmarshaler  = reflect.TypeFor[yaml.Unmarshaler]()
	textType     = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decode decodes n into rv strictly, reporting every problem under path.
// A null or absent node leaves rv as it is.
func (s *state) decode(n *yaml.Node, path string, rv reflect.Value) {
	n = resolve(n)
	if isNull(n) {
		return
	}
	t := rv.Type()
	if t.Kind() == reflect.Pointer {
		if rv.IsNil() {
			rv.Set(reflect.New(t.Elem()))
		}
		s.decode(n, path, rv.Elem())
		return
	}
	if !s.enter(n, path) {
		return
	}
	defer s.leave(n)
	switch c := classOf(t); {
	case c == classNode:
		// A copy: the loader reuses the nodes of a file's tree for the
		// next file (fastYAML.parse), and this one is kept.
		rv.Set(reflect.ValueOf(*copyTree(n, nil)))
		return
	case c == classDuration:
		if d, ok := s.duration(n, path); ok {
			rv.SetInt(int64(d))
		}
		return
	case c == classUnmarshaler && rv.CanAddr():
		if err := rv.Addr().Interface().(yaml.Unmarshaler).UnmarshalYAML(copyTree(n, nil)); err != nil { // it may keep it
			s.errorf(n, path, "%s", err)
		}
		return
	case c == classText && rv.CanAddr():
		if n.Kind != yaml.ScalarNode {
			s.errorf(n, path, "expected a string, got %s", describe(n))
		} else if err := rv.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			s.errorf(n, path, "%s", err)
		}
		return
	}
	switch t.Kind() {
	case reflect.String:
		if str, ok := s.str(n, path); ok {
			rv.SetString(str)
		}
	case reflect.Bool:
		if b, ok := s.boolean(n, path); ok {
			rv.SetBool(b)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if i, ok := s.integer(n, path); ok {
			if rv.OverflowInt(i) {
				s.errorf(n, path, "%d is out of range", i)
				return
			}
			rv.SetInt(i)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if i, ok := s.integer(n, path); ok {
			if i < 0 || rv.OverflowUint(uint64(i)) {
				s.errorf(n, path, "%d is out of range", i)
				return
			}
			rv.SetUint(uint64(i))
		}
	case reflect.Float32, reflect.Float64:
		tag := n.ShortTag()
		if n.Kind != yaml.ScalarNode || tag != "!!int" && tag != "!!float" {
			s.errorf(n, path, "expected a number, got %s", describe(n))
			return
		}
		var f float64
		if err := n.Decode(&f); err != nil {
			s.errorf(n, path, "not a number: %s", n.Value)
			return
		}
		rv.SetFloat(f)
	case reflect.Interface:
		if t.NumMethod() != 0 {
			s.errorf(n, path, "cannot decode into Go type %s", t)
			return
		}
		if v := s.anyNode(n, path); v != nil {
			rv.Set(reflect.ValueOf(v))
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			s.errorf(n, path, "expected a list, got %s", describe(n))
			return
		}
		out := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, c := range n.Content {
			s.decode(c, index(path, i), out.Index(i))
		}
		rv.Set(out)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			s.errorf(n, path, "cannot decode into Go type %s", t)
			return
		}
		if n.Kind != yaml.MappingNode {
			s.errorf(n, path, "expected a mapping, got %s", describe(n))
			return
		}
		if rv.IsNil() {
			rv.Set(reflect.MakeMap(t))
		}
		for _, p := range s.pairs(n, path) {
			ev := reflect.New(t.Elem()).Elem()
			s.decode(p.v, join(path, p.key), ev)
			rv.SetMapIndex(reflect.ValueOf(p.key).Convert(t.Key()), ev)
		}
	case reflect.Struct:
		s.decodeStruct(n, path, rv)
	default:
		s.errorf(n, path, "cannot decode into Go type %s", t)
	}
}

// copyTree returns a deep copy of the tree at n, in which an alias
// points at the copy of its anchor. copies maps the nodes copied so far
// to their copies (nil: none yet).
func copyTree(n *yaml.Node, copies map[*yaml.Node]*yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if c, ok := copies[n]; ok {
		return c
	}
	if copies == nil {
		copies = map[*yaml.Node]*yaml.Node{}
	}
	c := new(yaml.Node)
	*c = *n
	copies[n] = c
	if n.Content != nil {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, k := range n.Content {
			c.Content[i] = copyTree(k, copies)
		}
	}
	c.Alias = copyTree(n.Alias, copies)
	return c
}

// typeClass says how decode treats a type before its kind: a yaml.Node,
// a duration, a type that unmarshals itself, or by its kind.
type typeClass int

const (
	classPlain typeClass = iota // by its kind
	classNode
	classDuration
	classUnmarshaler // *T implements yaml.Unmarshaler (which wins over TextUnmarshaler)
	classText        // *T implements encoding.TextUnmarshaler only
)

// typeClasses holds classOf's answer for each type: a loader decodes the
// same few types in every file, and Implements searches method sets.
var typeClasses sync.Map // reflect.Type -> typeClass

// classOf returns the class of type t, computed once a type.
func classOf(t reflect.Type) typeClass {
	if c, ok := typeClasses.Load(t); ok {
		return c.(typeClass)
	}
	c := classPlain
	switch pt := reflect.PointerTo(t); {
	case t == nodeType:
		c = classNode
	case t == durationType:
		c = classDuration
	case pt.Implements(unmarshaler):
		c = classUnmarshaler
	case pt.Implements(textType):
		c = classText
	}
	typeClasses.Store(t, c)
	return c
}

// field is a struct field a mapping key decodes into.
type field struct {
	name  string
	index []int
}

// structFieldCache holds structFields' answer for each struct type (a
// loader decodes the same few types in every file).
var structFieldCache sync.Map // reflect.Type -> structInfo

// structInfo is a struct type's fields and their names, in order.
type structInfo struct {
	fields []field
	names  []string
}

// fieldsOf returns the fields of struct type t, computed once a type.
func fieldsOf(t reflect.Type) structInfo {
	if v, ok := structFieldCache.Load(t); ok {
		return v.(structInfo)
	}
	info := structInfo{fields: structFields(t)}
	info.names = make([]string, len(info.fields))
	for i, f := range info.fields {
		info.names[i] = f.name
	}
	structFieldCache.Store(t, info)
	return info
}

// structFields lists the keys of struct type t: the yaml tag's name, or
// the lower-cased field name; ",inline" embeds a struct's keys.
func structFields(t reflect.Type) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(","+opts+",", ",inline,") && f.Type.Kind() == reflect.Struct {
			for _, sub := range structFields(f.Type) {
				sub.index = append([]int{i}, sub.index...)
				out = append(out, sub)
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, field{name: name, index: []int{i}})
	}
	return out
}

func (s *state) decodeStruct(n *yaml.Node, path string, rv reflect.Value) {
	if n.Kind != yaml.MappingNode {
		s.errorf(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	info := fieldsOf(rv.Type())
	fields, names := info.fields, info.names
	for _, p := range s.pairs(n, path) {
		var f *field
		for i := range fields {
			if fields[i].name == p.key {
				f = &fields[i]
				break
			}
		}
		if f == nil {
			known := names
			if path == s.extraPath {
				known = append(append([]string(nil), names...), s.extra...)
			}
			s.add(p.k.Line, join(path, p.key), unknownField(p.key, known, names))
			continue
		}
		s.decode(p.v, join(path, p.key), rv.FieldByIndex(f.index))
	}
}

// anyValue decodes n into plain Go values: string, bool, int, float64,
// []any and map[string]any. Timestamps and other tagged scalars stay
// strings, as written.
func (s *state) anyValue(n *yaml.Node, path string) any {
	n = resolve(n)
	if isNull(n) || !s.enter(n, path) {
		return nil
	}
	defer s.leave(n)
	return s.anyNode(n, path)
}

// anyNode is anyValue for a node that was entered already.
func (s *state) anyNode(n *yaml.Node, path string) any {
	switch n.Kind {
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			if v, done := s.anyLeaf(c, path, pathSeg{index: i}); done {
				out[i] = v
			} else {
				out[i] = s.anyValue(c, index(path, i))
			}
		}
		return out
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for _, p := range s.pairs(n, path) {
			if v, done := s.anyLeaf(p.v, path, pathSeg{key: p.k, index: -1}); done {
				out[p.key] = v
			} else {
				out[p.key] = s.anyValue(p.v, join(path, p.key))
			}
		}
		return out
	}
	return anyScalar(n)
}

// anyLeaf is anyValue for the child of a collection at path that seg
// names, when the child is null or a scalar: it builds the child's path
// only to report it (a scalar yields no error of its own). It reports
// false, having done nothing, for a collection.
func (s *state) anyLeaf(n *yaml.Node, path string, seg pathSeg) (any, bool) {
	n = resolve(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.ScalarNode {
		return nil, false
	}
	if r := s.tryEnter(n); r != entered {
		s.refuse(n, lazyPath{root: path, segs: []pathSeg{seg}}.String(), r)
		return nil, true
	}
	s.leave(n)
	return anyScalar(n), true
}

// anyScalar is the plain Go value of scalar n.
func anyScalar(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!bool":
		var b bool
		if scalarBool(n, &b) {
			return b
		}
	case "!!int":
		if i, ok := decimal(n.Value); ok && i == int64(int(i)) {
			return int(i) // what yaml.v3 gives an int that fits
		}
		fallthrough
	case "!!float":
		var v any
		if err := n.Decode(&v); err == nil {
			return v
		}
	}
	return n.Value
}

// scalarBool decodes a !!bool scalar into b as n.Decode does, reporting
// whether it could; the spellings YAML resolves untagged are read here,
// anything else is left to yaml.v3.
func scalarBool(n *yaml.Node, b *bool) bool {
	switch n.Value {
	case "true", "True", "TRUE":
		*b = true
		return true
	case "false", "False", "FALSE":
		*b = false
		return true
	}
	return n.Decode(b) == nil
}

// scalarInt decodes an !!int scalar into i as n.Decode does, reporting
// whether it could: a plain decimal is read here, the other forms (0x,
// 0o, 0b, a leading 0 or +, underscores, out of range) by yaml.v3.
func scalarInt(n *yaml.Node, i *int64) bool {
	if v, ok := decimal(n.Value); ok {
		*i = v
		return true
	}
	return n.Decode(i) == nil
}

// decimal parses s when it is "0" or an optional '-' and 1 to 18 digits
// not starting with 0: the integers whose meaning YAML and strconv agree
// on and that fit any int64.
func decimal(s string) (int64, bool) {
	d := strings.TrimPrefix(s, "-")
	if d == "" || len(d) > 18 || d[0] == '0' && d != "0" {
		return 0, false
	}
	var v int64
	for i := 0; i < len(d); i++ {
		c := d[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if len(d) < len(s) {
		v = -v
	}
	return v, true
}

func (s *state) str(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		s.errorf(n, path, "expected a string, got %s", describe(n))
		return "", false
	}
	return n.Value, true
}

// text accepts any scalar as its literal text: `model: 4` is "4".
func (s *state) text(n *yaml.Node, path string) (string, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode {
		s.errorf(n, path, "expected a string, got %s", describe(n))
		return "", false
	}
	if n.ShortTag() == "!!null" {
		return "", true
	}
	return n.Value, true
}

func (s *state) boolean(n *yaml.Node, path string) (bool, bool) {
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || !scalarBool(n, &b) {
		s.errorf(n, path, "expected true or false, got %s", describe(n))
		return false, false
	}
	return b, true
}

func (s *state) integer(n *yaml.Node, path string) (int64, bool) {
	var i int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		s.errorf(n, path, "expected an integer, got %s", describe(n))
		return 0, false
	}
	if !scalarInt(n, &i) {
		s.errorf(n, path, "integer %s is out of range", n.Value)
		return 0, false
	}
	return i, true
}

// duration decodes a Go duration string ("90s", "2h"). A bare number is
// an error, except 0, except in a field named *_seconds, which takes
// whole seconds, and except a hook's or step's timeout, where a whole
// number is seconds as in agent-queue (timeout: 60 is one minute).
func (s *state) duration(n *yaml.Node, path string) (time.Duration, bool) {
	if strings.HasSuffix(path, "_seconds") || isTimeout(path) && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" {
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			s.errorf(n, path, "expected whole seconds, got %s", describe(n))
			return 0, false
		}
		i, ok := s.integer(n, path)
		if !ok {
			return 0, false
		}
		if i > int64(maxDuration/time.Second) || i < -int64(maxDuration/time.Second) {
			s.errorf(n, path, "%d seconds is out of range", i)
			return 0, false
		}
		return time.Duration(i) * time.Second, true
	}
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!int", "!!float":
			if n.Value == "0" {
				return 0, true
			}
			s.errorf(n, path, "a duration needs a unit: write %ss or %sm, not %s", n.Value, n.Value, n.Value)
			return 0, false
		case "!!str":
			d, err := time.ParseDuration(n.Value)
			if err != nil {
				s.errorf(n, path, "bad duration %q (want a number with a unit: 500ms, 90s, 15m, 2h)", n.Value)
				return 0, false
			}
			return d, true
		}
	}
	s.errorf(n, path, "expected a duration like 90s or 2h, got %s", describe(n))
	return 0, false
}

const maxDuration = time.Duration(1<<63 - 1)

// isTimeout reports whether path is a hook's timeout or a step's
// (steps[i].timeout), the fields agent-queue wrote in seconds.
func isTimeout(path string) bool {
	if path == "timeout" {
		return true
	}
	rest, ok := strings.CutSuffix(path, "].timeout")
	for _, list := range []string{"steps[", "context_steps["} {
		if i, ok2 := strings.CutPrefix(rest, list); ok && ok2 && !strings.ContainsAny(i, ".[]") {
			return true
		}
	}
	return false
}
