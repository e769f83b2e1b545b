package engine

import (
	"sort"
	"strings"
)

// redactor replaces the values of a hook's secrets with [REDACTED:NAME].
type redactor struct{ r *strings.Replacer }

// newRedactor builds a redactor for the named secrets found in environ.
// Values shorter than 4 bytes are not redacted (they would mangle text
// without protecting anything).
func newRedactor(names []string, environ []string) *redactor {
	if len(names) == 0 {
		return nil
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	type pair struct{ name, value string }
	var pairs []pair
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && want[k] && len(v) >= 4 {
			pairs = append(pairs, pair{k, v})
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	// Longest values first, so a secret containing another is replaced whole.
	sort.Slice(pairs, func(i, j int) bool { return len(pairs[i].value) > len(pairs[j].value) })
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.value, "[REDACTED:"+p.name+"]")
	}
	return &redactor{strings.NewReplacer(args...)}
}

// String redacts s.
func (r *redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	return r.r.Replace(s)
}

// Value redacts every string inside v (maps and slices are copied).
func (r *redactor) Value(v any) any {
	if r == nil {
		return v
	}
	switch x := v.(type) {
	case string:
		return r.String(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = r.Value(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.Value(e)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = r.String(e)
		}
		return out
	}
	return v
}

// Run redacts a run record in place before it is stored.
func (r *redactor) Run(run *Run) {
	if r == nil {
		return
	}
	for _, s := range run.Steps {
		if s == nil {
			continue
		}
		s.Output = r.String(s.Output)
		s.Error = r.String(s.Error)
		if s.Fields != nil {
			s.Fields = r.Value(s.Fields).(map[string]any)
		}
	}
	run.Prompt = r.String(run.Prompt)
	run.Response = r.String(run.Response)
	run.Error = r.String(run.Error)
	run.Reason = r.String(run.Reason)
	if len(run.ToolCalls) > 0 {
		run.ToolCalls = []byte(r.String(string(run.ToolCalls)))
	}
}
