package engine

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/testtool"
)

// sameAsEncodingJSON checks that MarshalData(m) writes what json.Marshal
// writes, or fails as it fails, and that the bytes read back to what
// they read back to with encoding/json.
func sameAsEncodingJSON(t *testing.T, m map[string]any) {
	t.Helper()
	want, wantErr := json.Marshal(m)
	got, err := MarshalData(m)
	if (err != nil) != (wantErr != nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("MarshalData: error %v (wrote %.500s); encoding/json: %v (wrote %.500s)", err, got, wantErr, want)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("MarshalData\n got %.2000s\nwant %.2000s", got, want)
	}
	if err != nil || m == nil {
		return
	}
	var back, wantBack map[string]any
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("MarshalData wrote %.2000s: not JSON: %v", got, err)
	}
	_ = json.Unmarshal(want, &wantBack)
	if !reflect.DeepEqual(back, wantBack) {
		t.Fatalf("MarshalData wrote %s, which reads back otherwise than encoding/json's %.2000s", got, want)
	}
}

func TestMarshalDataMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	cyclic := map[string]any{"a": 1}
	cyclic["self"] = cyclic
	deep := map[string]any{"leaf": "x"}
	for i := range 3 * maxDataDepth {
		if i%2 == 0 {
			deep = map[string]any{"d": deep}
		} else {
			deep = map[string]any{"l": []any{"x", deep}}
		}
	}
	for _, m := range []map[string]any{
		nil,
		{},
		{"hook": "h", "run_id": "01J", "status": "completed", "duration_ms": int64(12), "exit_code": 0, "fails_run": true},
		{"b": "2", "a": "1", "": "empty key", "é": "accent", "<k>": "html & key", "Z": nil},
		{"s": "quote \" backslash \\ slash / tab \t nl \n cr \r bell \a nul \x00 del \x7f"},
		{"html": "<script>a && b</script>", "seps": "line\u2028para\u2029", "bad utf8": "a\xffb\xc3", "emoji": "😀"},
		{"f": 1.5, "big": 1e21, "almost": 999999999999999999999.0, "tiny": 1e-7, "small": 0.000001, "neg": -2.5e-9,
			"zero": 0.0, "negzero": math.Copysign(0, -1), "int-ish": 3.0, "max": math.MaxFloat64, "min": math.SmallestNonzeroFloat64},
		{"ints": []any{int(-1), int64(math.MaxInt64), int64(math.MinInt64), int32(7), uint8(8), uint64(math.MaxUint64)}},
		{"list": []any{"x", 1.0, nil, true, []any{}, map[string]any{}}, "nil list": []any(nil), "nil map": map[string]any(nil)},
		{"strings": []string{"a", "<b>", "c\n"}, "nil strings": []string(nil), "empty strings": []string{}},
		{"other": []int{1, 2}, "raw": json.RawMessage(`{"z": 1, "a": [ 2 ]}`), "time": time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
			"struct": struct {
				A int `json:"a"`
				B string
			}{1, "<"}, "pm": map[string]int{"b": 2, "a": 1}, "num": json.Number("12.50")},
		{"nan": math.NaN()},
		{"inf": []any{math.Inf(1)}},
		{"chan": make(chan int)},
		{"cycle": cyclic},
		{"deep": deep},
	} {
		sameAsEncodingJSON(t, m)
	}

	// Random payloads of the kinds events carry: 200 by default (every
	// kind of value randomValue makes, many times over), 2,000 under
	// HOOKD_TEST_LONG=1.
	rng := rand.New(rand.NewPCG(1, 2))
	for range testtool.Count(200, 2000) {
		sameAsEncodingJSON(t, randomMap(rng, 0))
	}
}

func randomMap(rng *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for range rng.IntN(20) {
		m[randomString(rng)] = randomValue(rng, depth)
	}
	return m
}

func randomValue(rng *rand.Rand, depth int) any {
	switch rng.IntN(10) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return int(rng.Int64()) >> rng.IntN(64)
	case 3:
		return rng.Int64() >> rng.IntN(64)
	case 4:
		return math.Float64frombits(rng.Uint64()) // NaN and Inf too, now and then
	case 5:
		return (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(60)-30))
	case 6:
		if depth < 4 {
			return randomMap(rng, depth+1)
		}
	case 7:
		if depth < 4 {
			l := make([]any, rng.IntN(5))
			for i := range l {
				l[i] = randomValue(rng, depth+1)
			}
			return l
		}
	case 8:
		return []string{randomString(rng), randomString(rng)}
	}
	return randomString(rng)
}

func randomString(rng *rand.Rand) string {
	const alphabet = "ab_-. /<>&\"\\\n\t\x00\x1f\x7féü😀\u2028\u2029\xff\xc3"
	var b strings.Builder
	for range rng.IntN(12) {
		if rng.IntN(3) == 0 {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))]) // bytes, so broken UTF-8 too
		} else {
			r := []rune(alphabet)
			b.WriteRune(r[rng.IntN(len(r))])
		}
	}
	return b.String()
}

func FuzzMarshalData(f *testing.F) {
	f.Add("key", "value", 1.5, int64(3))
	f.Add("<&>", "\u2028\xff\"", 1e-7, int64(-1))
	f.Fuzz(func(t *testing.T, k, s string, x float64, n int64) {
		sameAsEncodingJSON(t, map[string]any{k: s, k + "f": x, k + "n": n,
			"nested": map[string]any{s: []any{k, x, n, nil}}, "strings": []string{k, s}})
	})
}

// TestStepResultMarshalJSONMatchesReflect: the hand-written MarshalJSON
// writes what encoding/json writes for the result's JSON form, and fails
// as it fails.
func TestStepResultMarshalJSONMatchesReflect(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 11, 26, 3, 4, 5, 123456789, time.FixedZone("X", 3600))
	for _, r := range []*StepResult{
		{},
		{Index: 2, Name: "n", Type: "shell", Output: "out\n", Started: started, Duration: 1500 * time.Millisecond,
			ExitCode: new(0), Fields: map[string]any{"stdout": "out\n", "stderr": "", "command": "true", "killed_pids": []int{4, 5}}},
		{Index: 1, Type: "http", StatusCode: 503, Error: "<bad> & \"worse\"", Fields: map[string]any{}},
		{Type: "jsontest_kind", Skipped: true, Started: time.Time{}},                                 // declares duration_ms and truncated
		{Type: "jsontest_declared", ExitCode: new(0), Duration: 2 * time.Millisecond},                // a DeclaredKind: timed_out, duration_ms
		{Type: "shell", ExitCode: new(3), Fields: map[string]any{"exit_code": "shadowed", "z": 1.0}}, // the typed field wins
		{Type: "shell", Fields: map[string]any{"exit_code": "kept", "count": nil}},                   // no typed one to win
		{Type: "x", Count: new(7), TimedOut: true, Truncated: true, Output: "\xff\u2029"},
		{Type: "x", Fields: map[string]any{"nan": math.NaN()}},             // an error either way
		{Type: "x", Started: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, // an error either way
		{Type: "x", Fields: map[string]any{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, // more keys than the stack holds
			"i": 9, "j": 10, "k": 11, "l": 12, "m": 13, "n": 14, "o": 15, "p": 16, "q": 17, "r": 18}, ExitCode: new(1), StatusCode: 200},
	} {
		want, wantErr := r.marshalJSONReflect()
		got, err := r.MarshalJSON()
		if (err != nil) != (wantErr != nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("MarshalJSON of %+v: error %v; by reflection: %v", r, err, wantErr)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("MarshalJSON of %+v\n got %s\nwant %s", r, got, want)
		}
		if err == nil && !json.Valid(got) {
			t.Errorf("MarshalJSON of %+v: %s is not JSON", r, got)
		}
	}
}

// TestMarshalStepsMatchesEncodingJSON: a run's steps are encoded as
// json.Marshal encodes them, nil ones and errors included.
func TestMarshalStepsMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	ok := &StepResult{Index: 0, Type: "shell", Output: "<out>\n", ExitCode: new(0), Started: time.Unix(1e9, 5).UTC(),
		Fields: map[string]any{"stdout": "<out>\n", "stderr": "", "command": "true"}}
	for _, steps := range [][]*StepResult{
		nil,
		{},
		{ok},
		{ok, nil, {Index: 2, Type: "http", StatusCode: 404, Skipped: true}},
		{ok, {Type: "x", Fields: map[string]any{"nan": math.NaN()}}},
	} {
		want, wantErr := json.Marshal(steps)
		got, err := MarshalSteps(steps)
		if (err != nil) != (wantErr != nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("MarshalSteps(%d steps): error %v; encoding/json: %v", len(steps), err, wantErr)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("MarshalSteps(%d steps)\n got %s\nwant %s", len(steps), got, want)
		}
	}
}

// jsonTestKind is a step kind that declares result fields.
type jsonTestKind struct{}

func init() { RegisterStep("jsontest_kind", jsonTestKind{}) }

func (jsonTestKind) New(*StepDef, Decoder) (Step, error) { return nil, nil }
func (jsonTestKind) ResultFields() []string              { return []string{"duration_ms", "truncated"} }
func (jsonTestKind) Processes() Processes                { return ProcessesNone }

func init() {
	RegisterStep("jsontest_declared", DeclaredKind{Build: func(*StepDef, Decoder) (Step, error) { return nil, nil },
		Fields: []string{"stdout", "timed_out", "duration_ms"}})
}

// TestMarshalStepsDeclaredFields: a result holds the typed fields its kind
// declares, false and zero included, whether the kind is a DeclaredKind
// or says so by ResultFields; and a DeclaredKind's result is encoded with
// no allocation but the bytes'.
func TestMarshalStepsDeclaredFields(t *testing.T) {
	// Not t.Parallel: it measures the process's allocations (testing.AllocsPerRun), which a test running beside it would add to.
	started := time.Unix(1e9, 0).UTC()
	for _, tt := range []struct {
		r    *StepResult
		want string
	}{
		{&StepResult{Type: "jsontest_declared", ExitCode: new(0), Duration: 2 * time.Millisecond, Started: started},
			`{"index":0,"type":"jsontest_declared","output":"","fields":{"duration_ms":2,"exit_code":0,"timed_out":false},"started":"2001-09-09T01:46:40Z","duration_ns":2000000}`},
		{&StepResult{Type: "jsontest_kind", Duration: 3 * time.Millisecond, Started: started},
			`{"index":0,"type":"jsontest_kind","output":"","fields":{"duration_ms":3,"truncated":false},"started":"2001-09-09T01:46:40Z","duration_ns":3000000}`},
		{&StepResult{Type: "jsontest_unknown", Duration: 3 * time.Millisecond, Started: started},
			`{"index":0,"type":"jsontest_unknown","output":"","started":"2001-09-09T01:46:40Z","duration_ns":3000000}`},
	} {
		got, err := MarshalSteps([]*StepResult{tt.r})
		if err != nil || string(got) != "["+tt.want+"]" {
			t.Errorf("MarshalSteps(%s): %s, %v\nwant [%s]", tt.r.Type, got, err, tt.want)
		}
		if v, ok := tt.r.Field("duration_ms"); ok != (tt.r.Type != "jsontest_unknown") || ok && v != tt.r.Duration.Milliseconds() {
			t.Errorf("Field(duration_ms) of %s = %v, %v", tt.r.Type, v, ok)
		}
	}
	r := []*StepResult{{Type: "jsontest_declared", ExitCode: new(0), Fields: map[string]any{"stdout": "x"}}}
	if n := testing.AllocsPerRun(100, func() { _, _ = MarshalSteps(r) }); n > 1 {
		t.Errorf("MarshalSteps of a DeclaredKind's result made %v allocations, want 1 (its bytes)", n)
	}
}

// TestAppendJSONStringMatchesEncodingJSON: every byte alone and in text,
// broken and whole UTF-8, the HTML characters and the JavaScript line
// separators are quoted as encoding/json quotes them.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	cases := []string{"", "plain", "a\"b\\c</script>&amp;", "\u2028\u2029é😀", "\xff\xc3(\xe2\x82", "tab\tnl\ncr\rbs\bff\f\x00\x1f\x7f"}
	for c := range 256 {
		cases = append(cases, string([]byte{byte(c)}), "x"+string([]byte{byte(c)})+"y")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		cases = append(cases, randomString(rng))
	}
	for _, s := range cases {
		sameQuoted(t, s)
	}
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add("<&>\u2028\xff\"\\\n")
	f.Fuzz(sameQuoted)
}

func sameQuoted(t *testing.T, s string) {
	t.Helper()
	want, _ := json.Marshal(s)
	if got := AppendJSONString([]byte("prefix"), s); string(got) != "prefix"+string(want) {
		t.Fatalf("AppendJSONString(%q) = %s, want %s", s, got[len("prefix"):], want)
	}
}
