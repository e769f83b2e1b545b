package triggers

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
)

func TestValidatePattern(t *testing.T) {
	valid := []string{
		"deploy", "deploy.failed", "deploy.*", "*.failed", "*", "*.*", "**",
		"deploy.**", "*.**", "hook.run.completed", "a-b:c_d.E1.9",
	}
	for _, p := range valid {
		if err := ValidatePattern(p); err != nil {
			t.Errorf("ValidatePattern(%q) = %v, want nil", p, err)
		}
	}
	invalid := map[string]string{
		"":          "empty event pattern",
		".":         "segment 1 is empty",
		"a.":        "segment 2 is empty",
		".a":        "segment 1 is empty",
		"a..b":      "segment 2 is empty",
		"a.**.b":    "** may only be the last segment",
		"**.a":      "** may only be the last segment",
		"de*ploy":   "a wildcard must be a whole segment",
		"a.b*":      "a wildcard must be a whole segment",
		"***":       "a wildcard must be a whole segment",
		"a b":       "invalid character ' '",
		"a/b":       "invalid character '/'",
		"caf\u00e9": "invalid character 'é'",
		"a.\xff":    "invalid character",
	}
	for p, want := range invalid {
		err := ValidatePattern(p)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidatePattern(%q) = %v, want an error containing %q", p, err, want)
		}
	}
}

func TestMatchPattern(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		nomatch []string
	}{
		{"deploy.failed", []string{"deploy.failed"}, []string{"deploy", "deploy.failed.x", "x.deploy.failed", "deploy.Failed", "deploy.failedx"}},
		{"deploy", []string{"deploy"}, []string{"deploy.failed", "deplo"}},
		{"deploy.*", []string{"deploy.failed", "deploy.ok"}, []string{"deploy", "deploy.prod.failed", "build.failed"}},
		{"*.failed", []string{"deploy.failed", "build.failed"}, []string{"failed", "deploy.prod.failed", "deploy.failed.x"}},
		{"*", []string{"deploy", "x"}, []string{"deploy.failed"}},
		{"*.*", []string{"a.b"}, []string{"a", "a.b.c"}},
		{"deploy.**", []string{"deploy.failed", "deploy.prod.failed", "deploy.a.b.c.d"}, []string{"deploy", "deployx.failed", "build.failed"}},
		{"**", []string{"a", "a.b", "hook.run.completed"}, nil},
		{"hook.*.completed", []string{"hook.run.completed"}, []string{"hook.run.failed", "hook.completed", "hook.a.b.completed"}},
		{"*.run.**", []string{"hook.run.completed", "x.run.a.b"}, []string{"hook.run", "hook.x.completed"}},
		{"a.*.**", []string{"a.b.c", "a.b.c.d"}, []string{"a.b", "a"}},
	}
	for _, tt := range tests {
		x := NewEventIndex()
		if err := x.Add("h", tt.pattern, nil); err != nil {
			t.Fatalf("Add(%q): %v", tt.pattern, err)
		}
		for _, typ := range tt.match {
			if got := x.Match(nil, &engine.Event{Type: typ}); !slices.Equal(got, []string{"h"}) {
				t.Errorf("pattern %q, event %q: matched %v, want [h]", tt.pattern, typ, got)
			}
			if !MatchPattern(tt.pattern, typ) {
				t.Errorf("MatchPattern(%q, %q) = false", tt.pattern, typ)
			}
		}
		for _, typ := range tt.nomatch {
			if got := x.Match(nil, &engine.Event{Type: typ}); len(got) != 0 {
				t.Errorf("pattern %q, event %q: matched %v, want none", tt.pattern, typ, got)
			}
			if MatchPattern(tt.pattern, typ) {
				t.Errorf("MatchPattern(%q, %q) = true", tt.pattern, typ)
			}
		}
	}
}

// payload decodes a JSON object, as events arrive from the API.
func payload(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("payload %s: %v", s, err)
	}
	return m
}

func TestMatchWhere(t *testing.T) {
	tests := []struct {
		where   map[string]any
		data    string
		matches bool
	}{
		{nil, `{}`, true},
		{map[string]any{"env": "prod"}, `{"env":"prod"}`, true},
		{map[string]any{"env": "prod"}, `{"env":"staging"}`, false},
		{map[string]any{"env": "prod"}, `{"env":"Prod"}`, false},
		{map[string]any{"env": "prod"}, `{}`, false},
		{map[string]any{"env": "prod"}, `{"env":["prod"]}`, false},
		{map[string]any{"env": "prod"}, `{"env":{"name":"prod"}}`, false},
		{map[string]any{"env": []any{"prod", "staging"}}, `{"env":"staging"}`, true},
		{map[string]any{"env": []string{"prod", "staging"}}, `{"env":"dev"}`, false},
		// Numbers compare numerically, whatever their Go type.
		{map[string]any{"code": 3}, `{"code":3}`, true},
		{map[string]any{"code": 3}, `{"code":3.0}`, true},
		{map[string]any{"code": 3.5}, `{"code":3.5}`, true},
		{map[string]any{"code": uint8(3)}, `{"code":3}`, true},
		{map[string]any{"code": json.Number("3")}, `{"code":3}`, true},
		{map[string]any{"code": 3}, `{"code":4}`, false},
		{map[string]any{"code": 3}, `{"code":"3"}`, false},
		{map[string]any{"code": "3"}, `{"code":3}`, false},
		{map[string]any{"code": []any{1, 2, 3}}, `{"code":2}`, true},
		{map[string]any{"code": []int{1, 2}}, `{"code":3}`, false},
		// Bools and null.
		{map[string]any{"ok": true}, `{"ok":true}`, true},
		{map[string]any{"ok": true}, `{"ok":false}`, false},
		{map[string]any{"ok": true}, `{"ok":"true"}`, false},
		{map[string]any{"ok": false}, `{}`, false},
		{map[string]any{"who": nil}, `{"who":null}`, true},
		{map[string]any{"who": nil}, `{}`, false},
		{map[string]any{"who": nil}, `{"who":"x"}`, false},
		// Nested paths and list indexes.
		{map[string]any{"deploy.env": "prod"}, `{"deploy":{"env":"prod"}}`, true},
		{map[string]any{"deploy.env": "prod"}, `{"deploy":{"env":"dev"}}`, false},
		{map[string]any{"deploy.env": "prod"}, `{"deploy":"prod"}`, false},
		{map[string]any{"deploy.env": "prod"}, `{"deploy.env":"prod"}`, false},
		{map[string]any{"a.b.c": 1}, `{"a":{"b":{"c":1}}}`, true},
		{map[string]any{"items.1.name": "b"}, `{"items":[{"name":"a"},{"name":"b"}]}`, true},
		{map[string]any{"items.2.name": "b"}, `{"items":[{"name":"a"},{"name":"b"}]}`, false},
		{map[string]any{"items.01.name": "b"}, `{"items":[{"name":"a"},{"name":"b"}]}`, false},
		{map[string]any{"items.x": "b"}, `{"items":["b"]}`, false},
		// Every filter must hold.
		{map[string]any{"env": "prod", "code": 3}, `{"env":"prod","code":3}`, true},
		{map[string]any{"env": "prod", "code": 3}, `{"env":"prod","code":4}`, false},
	}
	for _, tt := range tests {
		x := NewEventIndex()
		if err := x.Add("h", "deploy.failed", tt.where); err != nil {
			t.Fatalf("Add(where %v): %v", tt.where, err)
		}
		got := x.Match(nil, &engine.Event{Type: "deploy.failed", Data: payload(t, tt.data)})
		if (len(got) == 1) != tt.matches {
			t.Errorf("where %v, data %s: matched %v, want %v", tt.where, tt.data, got, tt.matches)
		}
	}
	// A nil payload has no keys.
	x := NewEventIndex()
	if err := x.Add("h", "a", map[string]any{"k": nil}); err != nil {
		t.Fatal(err)
	}
	if got := x.Match(nil, &engine.Event{Type: "a"}); len(got) != 0 {
		t.Errorf("nil payload matched %v", got)
	}
}

func TestValidateWhere(t *testing.T) {
	valid := []map[string]any{
		nil, {}, {"env": "prod"}, {"a.b": 1, "c": true, "d": nil, "e": 2.5},
		{"env": []any{"prod", 1, false, nil}}, {"env": []string{"a"}},
	}
	for _, w := range valid {
		if err := ValidateWhere(w); err != nil {
			t.Errorf("ValidateWhere(%v) = %v, want nil", w, err)
		}
	}
	invalid := []struct {
		where map[string]any
		want  string
	}{
		{map[string]any{"": "x"}, "empty key"},
		{map[string]any{"a..b": "x"}, "a..b: empty path segment"},
		{map[string]any{".a": "x"}, "empty path segment"},
		{map[string]any{"a": map[string]any{"b": 1}}, "a: must be a string, number, bool or null"},
		{map[string]any{"a": []any{}}, "a: empty list matches nothing"},
		{map[string]any{"a": []any{"x", []any{"y"}}}, "a: [1]: must be"},
		{map[string]any{"a": struct{}{}}, "must be"},
		{map[string]any{"a": json.Number("x")}, "must be"},
	}
	for _, tt := range invalid {
		err := ValidateWhere(tt.where)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ValidateWhere(%v) = %v, want an error containing %q", tt.where, err, tt.want)
		}
	}
}

func TestEventIndexAddRemove(t *testing.T) {
	x := NewEventIndex()
	match := func(typ string) []string { return x.Match(nil, &engine.Event{Type: typ}) }
	mustAdd := func(hook, pattern string) {
		t.Helper()
		if err := x.Add(hook, pattern, nil); err != nil {
			t.Fatalf("Add(%q, %q): %v", hook, pattern, err)
		}
	}
	mustAdd("a", "deploy.failed")
	mustAdd("b", "deploy.*")
	mustAdd("c", "deploy.**")
	mustAdd("d", "deploy.failed")
	if got, want := match("deploy.failed"), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("match = %v, want %v", got, want)
	}
	// Adding again replaces the registration.
	mustAdd("a", "build.*")
	if got, want := match("deploy.failed"), []string{"b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("after replacing a: match = %v, want %v", got, want)
	}
	if got, want := match("build.failed"), []string{"a"}; !slices.Equal(got, want) {
		t.Errorf("after replacing a: match build = %v, want %v", got, want)
	}
	// A bad Add leaves the registration in place.
	if err := x.Add("a", "build..x", nil); err == nil {
		t.Error("Add with a bad pattern: no error")
	}
	if err := x.Add("a", "build.x", map[string]any{"k": map[string]any{}}); err == nil || !strings.HasPrefix(err.Error(), "where: k: ") {
		t.Errorf("Add with a bad where: error %v", err)
	}
	if err := x.Add("", "build.x", nil); err == nil {
		t.Error("Add with an empty hook name: no error")
	}
	if got, want := match("build.failed"), []string{"a"}; !slices.Equal(got, want) {
		t.Errorf("after bad Adds: match = %v, want %v", got, want)
	}
	x.Remove("b")
	x.Remove("nope")
	if got, want := match("deploy.failed"), []string{"c", "d"}; !slices.Equal(got, want) {
		t.Errorf("after removing b: match = %v, want %v", got, want)
	}
	for _, h := range []string{"a", "c", "d"} {
		x.Remove(h)
	}
	if got := match("deploy.failed"); len(got) != 0 {
		t.Errorf("empty index matched %v", got)
	}
	if len(x.hooks) != 0 || len(x.exact) != 0 || !x.root.empty() {
		t.Errorf("empty index holds %d hooks, %d exact patterns, root empty %v", len(x.hooks), len(x.exact), x.root.empty())
	}
}

func TestEventIndexZero(t *testing.T) {
	var x EventIndex
	x.Remove("a")
	if got := x.Match(nil, &engine.Event{Type: "a"}); len(got) != 0 {
		t.Errorf("zero index matched %v", got)
	}
	if err := x.Add("a", "a", nil); err != nil {
		t.Fatal(err)
	}
	if got := x.Match(nil, nil); len(got) != 0 {
		t.Errorf("nil event matched %v", got)
	}
	if got := x.Match([]string{"z"}, &engine.Event{Type: "a"}); !slices.Equal(got, []string{"z", "a"}) {
		t.Errorf("Match appended %v, want [z a]", got)
	}
}

// TestMatchAgainstScan compares the index with matching every registration
// in turn, on random patterns and events.
func TestMatchAgainstScan(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "b", "c"}
	randType := func() string {
		segs := make([]string, 1+rng.IntN(4))
		for i := range segs {
			segs[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(segs, ".")
	}
	randPattern := func() string {
		segs := strings.Split(randType(), ".")
		for i := range segs {
			if rng.IntN(3) == 0 {
				segs[i] = "*"
			}
		}
		if rng.IntN(4) == 0 {
			segs[len(segs)-1] = "**"
		}
		return strings.Join(segs, ".")
	}
	x := NewEventIndex()
	patterns := map[string]string{}
	for i := range 2000 {
		h := fmt.Sprintf("h%d", rng.IntN(300))
		if rng.IntN(5) == 0 {
			x.Remove(h)
			delete(patterns, h)
			continue
		}
		p := randPattern()
		if err := x.Add(h, p, nil); err != nil {
			t.Fatalf("Add(%q): %v", p, err)
		}
		patterns[h] = p
		if i%10 != 0 {
			continue
		}
		for range 20 {
			typ := randType()
			var want []string
			for h, p := range patterns {
				if matchScan(p, typ) {
					want = append(want, h)
				}
			}
			slices.Sort(want)
			if got := x.Match(nil, &engine.Event{Type: typ}); !slices.Equal(got, want) {
				t.Fatalf("event %q: matched %v, want %v", typ, got, want)
			}
		}
	}
	for h := range patterns {
		x.Remove(h)
	}
	if !x.root.empty() || len(x.exact) != 0 {
		t.Error("index not empty after removing every hook")
	}
}

// matchScan is the obvious matcher the index must agree with.
func matchScan(pattern, typ string) bool {
	ps, ts := strings.Split(pattern, "."), strings.Split(typ, ".")
	for i, p := range ps {
		if p == "**" {
			return len(ts) > i
		}
		if i >= len(ts) || p != "*" && p != ts[i] {
			return false
		}
	}
	return len(ps) == len(ts)
}

func TestMatchAllocs(t *testing.T) {
	x := benchIndex(t)
	dst := make([]string, 0, 64)
	for _, typ := range []string{"nomatch.zzz", "svc042.nope", "svc042.event3.x.y", "svc042.event3", "a"} {
		ev := &engine.Event{Type: typ, Data: map[string]any{"env": "dev", "code": 7.0}}
		if n := testing.AllocsPerRun(100, func() { dst = x.Match(dst[:0], ev) }); n != 0 {
			t.Errorf("Match(%q) allocates %v times", typ, n)
		}
	}
}

// benchIndex holds 10,000 hooks over 1,000 event types svcNNN.eventN: most
// patterns exact, one in ten with a wildcard, two in three with a filter.
func benchIndex(t testing.TB) *EventIndex {
	x := NewEventIndex()
	for i := range 10000 {
		typ := i % 1000
		if i%40 >= 1 && i%40 <= 4 {
			typ = i * 37 % 1000 // spread the wildcards over the types
		}
		svc, ev := typ/10, typ%10
		var p string
		switch i % 40 {
		case 1:
			p = fmt.Sprintf("svc%03d.*", svc)
		case 2:
			p = fmt.Sprintf("svc%03d.**", svc)
		case 3:
			p = fmt.Sprintf("*.event%d", ev)
		case 4:
			p = fmt.Sprintf("*.event%d.**", ev)
		default:
			p = fmt.Sprintf("svc%03d.event%d", svc, ev)
		}
		var where map[string]any
		if k := i / 1000; k%3 != 1 {
			where = map[string]any{"env": []any{"prod", "staging"}, "code": k % 5}
		}
		if err := x.Add(fmt.Sprintf("hook-%05d", i), p, where); err != nil {
			t.Fatal(err)
		}
	}
	return x
}

func BenchmarkEventMatchNone(b *testing.B) {
	x := benchIndex(b)
	ev := &engine.Event{Type: "billing.invoice.paid", Data: map[string]any{"env": "prod"}}
	dst := make([]string, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		dst = x.Match(dst[:0], ev)
	}
	if len(dst) != 0 {
		b.Fatalf("matched %v", dst)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkEventMatchSome(b *testing.B) {
	x := benchIndex(b)
	ev := &engine.Event{Type: "svc042.event3", Data: map[string]any{"env": "prod", "code": 3.0}}
	dst := make([]string, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		dst = x.Match(dst[:0], ev)
	}
	if len(dst) == 0 {
		b.Fatal("matched nothing")
	}
	b.ReportMetric(float64(len(dst)), "hooks/event")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// FuzzPattern checks that validating, adding, matching and removing
// arbitrary patterns and event types never panics, and that the index
// agrees with the obvious matcher.
func FuzzPattern(f *testing.F) {
	for _, s := range [][2]string{
		{"deploy.*", "deploy.failed"}, {"deploy.**", "deploy.a.b"}, {"**", "x"},
		{"*.failed", "failed"}, {"a..b", "a..b"}, {"a.**.b", "a.x.b"}, {"", ""},
		{"de*ploy", "deploy"}, {"*", ""}, {"a.*", "a."}, {"hook.run.completed", "hook.run.completed"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, typ string) {
		verr := ValidatePattern(pattern)
		x := NewEventIndex()
		x.Add("other", "**", map[string]any{"k": 1})
		aerr := x.Add("h", pattern, nil)
		if (verr == nil) != (aerr == nil) {
			t.Fatalf("ValidatePattern(%q) = %v but Add = %v", pattern, verr, aerr)
		}
		got := x.Match(nil, &engine.Event{Type: typ})
		want := verr == nil && typ != "" && matchScan(pattern, typ)
		if want != slices.Equal(got, []string{"h"}) || !want && len(got) != 0 {
			t.Fatalf("pattern %q, event %q: matched %v, want match %v", pattern, typ, got, want)
		}
		x.Remove("h")
		x.Remove("other")
		if len(x.hooks) != 0 || len(x.exact) != 0 || !x.root.empty() {
			t.Fatalf("pattern %q: index not empty after Remove", pattern)
		}
	})
}

func TestProgressOnly(t *testing.T) {
	for p, want := range map[string]bool{
		"hook.step.started": true, "hook.step.*": true, "hook.step.**": true, "hook.llm.round": true,
		"hook.llm.*": true, "hook.tool.called": true,
		"hook.tool.denied": false, "hook.tool.*": false, "hook.**": false, "hook.*.*": false, "**": false,
		"hook.run.failed": false, "hookstep.x": false, "deploy.*": false,
	} {
		if got := ProgressOnly(p); got != want {
			t.Errorf("ProgressOnly(%q) = %v, want %v", p, got, want)
		}
		// Whatever ProgressOnly says of a pattern, it matches no other
		// engine event.
		if ProgressOnly(p) {
			for _, typ := range []string{"hook.run.started", "hook.run.completed", "hook.tool.denied"} {
				if MatchPattern(p, typ) {
					t.Errorf("%q is progress-only but matches %s", p, typ)
				}
			}
		}
	}
}
