package triggers

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// cond is one compiled payload filter: the value at path must equal one of
// want. Numbers in want are float64.
type cond struct {
	path []string
	want []any
}

// ValidateWhere reports whether where is a valid set of payload filters:
// each key a dotted path with no empty segment, each value a scalar (string,
// number, bool or null) or a non-empty list of scalars.
func ValidateWhere(where map[string]any) error {
	_, err := compileWhere(where)
	return err
}

// compileWhere validates where and compiles it, ordered by key.
func compileWhere(where map[string]any) ([]cond, error) {
	if len(where) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(where))
	for k := range where {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	conds := make([]cond, 0, len(keys))
	for _, k := range keys {
		if k == "" {
			return nil, errors.New("empty key")
		}
		path := strings.Split(k, ".")
		if slices.Contains(path, "") {
			return nil, fmt.Errorf("%s: empty path segment", k)
		}
		want, err := compileValues(where[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		conds = append(conds, cond{path: path, want: want})
	}
	return conds, nil
}

// compileValues returns the values a filter accepts: v itself, or the
// elements of the list v.
func compileValues(v any) ([]any, error) {
	if s, ok := scalar(v); ok {
		return []any{s}, nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, fmt.Errorf("must be a string, number, bool or null, or a list of them (got %T)", v)
	}
	if rv.Len() == 0 {
		return nil, errors.New("empty list matches nothing")
	}
	want := make([]any, 0, rv.Len())
	for i := range rv.Len() {
		e := rv.Index(i).Interface()
		s, ok := scalar(e)
		if !ok {
			return nil, fmt.Errorf("[%d]: must be a string, number, bool or null (got %T)", i, e)
		}
		want = append(want, s)
	}
	return want, nil
}

// scalar returns v with numbers as float64, and whether v is a scalar.
func scalar(v any) (any, bool) {
	switch v := v.(type) {
	case nil, string, bool:
		return v, true
	}
	if f, ok := number(v); ok {
		return f, true
	}
	return nil, false
}

// number returns v as a float64 if v is a number: JSON decodes numbers as
// float64 (or json.Number), YAML as int.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float32:
		return float64(n), true
	case int8:
		return float64(n), true
	case int16:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint8:
		return float64(n), true
	case uint16:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case json.Number:
		f, err := strconv.ParseFloat(string(n), 64)
		return f, err == nil
	}
	return 0, false
}

// matchWhere reports whether data satisfies every filter.
func matchWhere(conds []cond, data map[string]any) bool {
	for i := range conds {
		v, ok := lookup(data, conds[i].path)
		if !ok || !anyEqual(conds[i].want, v) {
			return false
		}
	}
	return true
}

// anyEqual reports whether v equals one of want.
func anyEqual(want []any, v any) bool {
	for _, w := range want {
		if equal(w, v) {
			return true
		}
	}
	return false
}

// lookup follows path through nested objects (and lists, by index).
func lookup(data map[string]any, path []string) (any, bool) {
	var cur any = data
	for _, seg := range path {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[seg]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, ok := index(seg, len(c))
			if !ok {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// index parses seg as an index into a list of length n (without the
// allocation of a strconv error).
func index(seg string, n int) (int, bool) {
	if seg == "" || len(seg) > 1 && seg[0] == '0' {
		return 0, false
	}
	i := 0
	for j := 0; j < len(seg); j++ {
		if seg[j] < '0' || seg[j] > '9' {
			return 0, false
		}
		i = i*10 + int(seg[j]-'0')
		if i >= n {
			return 0, false
		}
	}
	return i, true
}

// equal reports whether the payload value v equals the compiled filter
// value w: strings and bools exactly, numbers numerically, null only null.
func equal(w, v any) bool {
	switch w := w.(type) {
	case string:
		s, ok := v.(string)
		return ok && s == w
	case bool:
		b, ok := v.(bool)
		return ok && b == w
	case float64:
		f, ok := number(v)
		return ok && f == w
	case nil:
		return v == nil
	}
	return false
}
