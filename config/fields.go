package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/hookd/hookd/internal/human"
	"gopkg.in/yaml.v3"
)

// fields is a mapping whose keys were checked against a fixed set, read
// field by field by the hand-written parts of the loader (hook, trigger,
// daemon settings), which need lines for their own checks.
type fields struct {
	s    *state
	path string
	node *yaml.Node
	keys []pair // the accepted keys, in file order; few, so searched in turn
}

// fields indexes mapping n. Keys other than known and the aliases'
// names are reported with a suggestion; aliases maps alias -> canonical.
func (s *state) fields(n *yaml.Node, path string, known []string, aliases map[string]string) *fields {
	f := s.sc.newFields()
	f.s, f.path, f.node = s, path, n
	if n.Kind != yaml.MappingNode {
		s.errorf(n, path, "expected a mapping, got %s", describe(n))
		return f
	}
	ps := s.pairs(n, path)
	f.keys = ps[:0] // filtered in place: pairs returns a fresh slice
	for _, p := range ps {
		if _, alias := aliases[p.key]; !alias && !slices.Contains(known, p.key) {
			all := append(slices.Clone(known), slices.Sorted(maps.Keys(aliases))...)
			msg := unknownField(p.key, all, known)
			if path == "" && slices.Contains(known, "steps") && slices.Contains(stepKeys, p.key) {
				// skip_llm_if: at the top of a hook file
				msg = fmt.Sprintf("unknown field here: %s is a step's key; write it in the step it belongs to (steps[N].%s)", p.key, p.key)
			}
			s.add(p.k.Line, join(path, p.key), msg)
			continue
		}
		f.keys = append(f.keys, p)
	}
	return f
}

// lookup returns the pair of key.
func (f *fields) lookup(key string) (pair, bool) {
	for _, p := range f.keys {
		if p.key == key {
			return p, true
		}
	}
	return pair{}, false
}

// get returns the value of key, or nil when it is absent or null.
func (f *fields) get(key string) *yaml.Node {
	p, ok := f.lookup(key)
	if !ok || isNull(p.v) {
		return nil
	}
	return resolve(p.v)
}

// has reports whether key is written, even with a null value.
func (f *fields) has(key string) bool {
	_, ok := f.lookup(key)
	return ok
}

// keyLine returns the line of key, or of the mapping when it is absent.
func (f *fields) keyLine(key string) int {
	if p, ok := f.lookup(key); ok {
		return p.k.Line
	}
	return f.node.Line
}

// either returns the value of key or of its alias, with the field path
// of the one written. Writing both is an error.
func (f *fields) either(key, alias string) (*yaml.Node, string) {
	n, a := f.get(key), f.get(alias)
	if n != nil && a != nil {
		p, _ := f.lookup(alias)
		f.s.add(p.k.Line, join(f.path, alias),
			fmt.Sprintf("%s is an alias of %s, which is also given; keep one", alias, key))
	}
	if n == nil && a != nil {
		return a, join(f.path, alias)
	}
	return n, join(f.path, key)
}

// decode decodes key's value into dst (a pointer). It returns the value
// node, nil when the key is absent or null, and whether the value was
// present and decoded without error.
func (f *fields) decode(key string, dst any) (*yaml.Node, bool) {
	n := f.get(key)
	if n == nil {
		return nil, false
	}
	return n, f.s.decodeAt(n, join(f.path, key), dst)
}

// decodeAt decodes n, found at path, into dst (a pointer) and reports
// whether that worked.
func (s *state) decodeAt(n *yaml.Node, path string, dst any) bool {
	before := s.count()
	s.decode(n, path, reflect.ValueOf(dst).Elem())
	return s.count() == before
}

// positive reports a duration or count that is not > 0.
func positive[T ~int | ~int64](s *state, n *yaml.Node, path string, v T) {
	if v <= 0 {
		s.errorf(n, path, "must be > 0 (got %s)", written(n, v))
	}
}

// nonNegative reports a duration or count that is < 0.
func nonNegative[T ~int | ~int64](s *state, n *yaml.Node, path string, v T) {
	if v < 0 {
		s.errorf(n, path, "must be >= 0 (got %s)", written(n, v))
	}
}

// written is the value v an error quotes: what the file says at n (-1m,
// not Go's -1m0s; 90 for cooldown_seconds: 90), else a duration in words.
func written(n *yaml.Node, v any) string {
	if n != nil && n.Kind == yaml.ScalarNode && n.Value != "" {
		return n.Value
	}
	if d, ok := v.(time.Duration); ok {
		return human.Exact(d)
	}
	return fmt.Sprint(v)
}

// Identifiers: ^[A-Za-z0-9_.-]+$, ^[A-Za-z0-9_-]+$ and
// ^[A-Za-z_][A-Za-z0-9_]*$ (TestNameSyntax holds them to these regexps).
var (
	hookName = newNameSyntax(alnum+"_.-", alnum+"_.-")
	stepName = newNameSyntax(alnum+"_-", alnum+"_-")
	envName  = newNameSyntax(letters+"_", alnum+"_")
)

const (
	letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	alnum   = letters + "0123456789"
)

// A nameSyntax is a kind of identifier: a non-empty string of ASCII
// characters of a set, the first of a set of its own. Loading checks a
// few names a file; a table is a fraction of a regexp's time.
type nameSyntax struct {
	first, rest [256]bool
}

func newNameSyntax(first, rest string) *nameSyntax {
	n := new(nameSyntax)
	for i := range len(first) {
		n.first[first[i]] = true
	}
	for i := range len(rest) {
		n.rest[rest[i]] = true
	}
	return n
}

// MatchString reports whether s is such a name.
func (n *nameSyntax) MatchString(s string) bool {
	if s == "" || !n.first[s[0]] {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !n.rest[s[i]] {
			return false
		}
	}
	return true
}
