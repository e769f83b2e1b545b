package engine

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Filter is one step of a placeholder's filter chain: {{path | name arg}}.
type Filter struct {
	Name string
	Int  int    // the argument of lines, head, tail and truncate
	Text string // the argument of default
}

// String is the filter as written, normalised: `truncate 200`,
// `default "none"`.
func (f Filter) String() string {
	switch filters[f.Name].arg {
	case argInt:
		return f.Name + " " + strconv.Itoa(f.Int)
	case argText:
		return f.Name + " " + strconv.Quote(f.Text)
	}
	return f.Name
}

type filterArg int

const (
	argNone filterArg = iota
	argInt            // a whole number > 0
	argText           // a double-quoted string
)

type filterDef struct {
	arg filterArg
	doc string
	fn  func(v any, f Filter) any
}

// filters is the one table of placeholder filters: validation, rendering
// and `hookd help` read it.
var filters = map[string]filterDef{
	"json": {argNone, "a JSON literal: a string quoted and escaped, a number, an object or list as JSON",
		func(v any, _ Filter) any { return jsonText(v) }},
	"urlquery": {argNone, "percent-encoded for a URL query or path segment (space as %20)",
		func(v any, _ Filter) any { return strings.ReplaceAll(url.QueryEscape(Stringify(v)), "+", "%20") }},
	"base64": {argNone, "standard base64 with padding",
		func(v any, _ Filter) any { return base64.StdEncoding.EncodeToString([]byte(Stringify(v))) }},
	"trim": {argNone, "leading and trailing white space removed",
		func(v any, _ Filter) any { return strings.TrimSpace(Stringify(v)) }},
	"lower": {argNone, "lower case", func(v any, _ Filter) any { return strings.ToLower(Stringify(v)) }},
	"upper": {argNone, "upper case", func(v any, _ Filter) any { return strings.ToUpper(Stringify(v)) }},
	"head":  {argInt, "the first N lines", func(v any, f Filter) any { return headLines(Stringify(v), f.Int) }},
	"lines": {argInt, "the first N lines (as head N)", func(v any, f Filter) any { return headLines(Stringify(v), f.Int) }},
	"tail":  {argInt, "the last N lines", func(v any, f Filter) any { return tailLines(Stringify(v), f.Int) }},
	"truncate": {argInt, "at most N characters; … marks a cut",
		func(v any, f Filter) any { return truncateRunes(Stringify(v), f.Int) }},
	"default": {argText, "the text given when the value is empty (\"\", null or absent)",
		func(v any, f Filter) any {
			if v == nil || Stringify(v) == "" {
				return f.Text
			}
			return v
		}},
}

// FilterNames lists the placeholder filters, sorted.
func FilterNames() []string {
	out := make([]string, 0, len(filters))
	for n := range filters {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// FilterDoc describes a filter for help texts: its usage and what it does.
func FilterDoc(name string) (usage, doc string) {
	d, ok := filters[name]
	if !ok {
		return "", ""
	}
	usage = name
	switch d.arg {
	case argInt:
		usage += " N"
	case argText:
		usage += ` "text"`
	}
	return usage, d.doc
}

// parseFilters parses the filter chain after a placeholder's path: the
// text after its first '|'.
func parseFilters(chain string) ([]Filter, error) {
	var out []Filter
	for rest := chain; ; {
		rest = strings.TrimLeft(rest, " \t")
		name := rest
		if i := strings.IndexAny(rest, " \t|"); i >= 0 {
			name = rest[:i]
		}
		rest = strings.TrimLeft(rest[len(name):], " \t")
		def, ok := filters[name]
		switch {
		case name == "":
			return nil, fmt.Errorf("empty filter after '|'")
		case !ok:
			return nil, fmt.Errorf("unknown filter %q (filters: %s)", name, strings.Join(FilterNames(), ", "))
		}
		f := Filter{Name: name}
		switch def.arg {
		case argInt:
			arg := rest
			if i := strings.IndexAny(rest, " \t|"); i >= 0 {
				arg = rest[:i]
			}
			n, err := strconv.Atoi(arg)
			if arg == "" || err != nil || n <= 0 {
				return nil, fmt.Errorf("filter %s takes one whole number > 0: %s N (got %q)", name, name, arg)
			}
			f.Int = n
			rest = rest[len(arg):]
		case argText:
			q, err := strconv.QuotedPrefix(rest)
			if err != nil || !strings.HasPrefix(rest, `"`) {
				return nil, fmt.Errorf(`filter %s takes one double-quoted text: %s "text"`, name, name)
			}
			f.Text, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		}
		rest = strings.TrimLeft(rest, " \t")
		out = append(out, f)
		if rest == "" {
			return out, nil
		}
		if rest[0] != '|' {
			return nil, fmt.Errorf("filter %s: unexpected %q (filters are separated by '|'; %s takes %s)", name, rest, name, argWord(def.arg))
		}
		rest = rest[1:]
	}
}

func argWord(a filterArg) string {
	switch a {
	case argInt:
		return "one number"
	case argText:
		return "one quoted text"
	}
	return "no argument"
}

// applyFilters runs v through fs.
func applyFilters(v any, fs []Filter) any {
	for _, f := range fs {
		v = filters[f.Name].fn(v, f)
	}
	return v
}

// jsonText is v as a JSON literal.
func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b.Reset()
		_ = enc.Encode(Stringify(v))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// JSONEscape is s escaped for the inside of a JSON string literal,
// without the quotes.
func JSONEscape(s string) string {
	q := jsonText(s)
	return q[1 : len(q)-1]
}

func headLines(s string, n int) string {
	end := 0
	for i := 0; i < n; i++ {
		j := strings.IndexByte(s[end:], '\n')
		if j < 0 {
			return s
		}
		end += j + 1
	}
	return s[:end]
}

func tailLines(s string, n int) string {
	body := strings.TrimSuffix(s, "\n")
	start := len(body)
	for i := 0; i < n; i++ {
		j := strings.LastIndexByte(body[:start], '\n')
		if j < 0 {
			return s
		}
		start = j
	}
	return s[start+1:]
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, k := 0, 0
	for i = range s {
		if k == n {
			break
		}
		k++
	}
	return s[:i] + "…"
}
