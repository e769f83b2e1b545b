package engine

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestQuotedTextMatchesEncodingJSON: a string read through quotedText is
// what encoding/json reads: escapes of every kind, surrogate pairs whole,
// alone and broken, invalid UTF-8 as U+FFFD.
func TestQuotedTextMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	cases := []string{`""`, `"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u0041\u00e9\u2028\ud83d\ude00"`,
		`"\ud83d"`, `"\ude00x"`, `"\ud83d\u0041"`, `"\ud83dx\ude00"`, `"\uD83D\uDE00"`, "\"\xff\xc3(\xe2\x82\"", `"é😀"`, `null`}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		b, _ := json.Marshal(randomString(rng))
		cases = append(cases, string(b))
	}
	for _, q := range cases {
		sameUnquoted(t, q)
	}
}

func FuzzQuotedText(f *testing.F) {
	f.Add(`"\ud83d\ude00\n\u00e9"`)
	f.Add("\"\xff\\ud800\"")
	f.Fuzz(func(t *testing.T, q string) {
		if !json.Valid([]byte(q)) {
			return
		}
		sameUnquoted(t, q)
	})
}

func sameUnquoted(t *testing.T, q string) {
	t.Helper()
	want, got := "unset", quotedText("unset")
	wantErr := json.Unmarshal([]byte(q), &want)
	err := json.Unmarshal([]byte(q), &got)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("quotedText of %s: error %v; encoding/json: %v", q, err, wantErr)
	}
	if err == nil && string(got) != want {
		t.Fatalf("quotedText of %s = %q, want %q", q, got, want)
	}
}
