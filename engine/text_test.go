package engine_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hookd/hookd/engine"
)

func TestClip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven ch…"},
		{"héllo wörld", 5, "héll…"},
		{"ééééé", 5, "ééééé"}, // 10 bytes, 5 characters: not cut
		{"éééééé", 5, "éééé…"},
		{"日本語のテキスト", 4, "日本語…"},
		{"x", 0, ""},
	} {
		got := engine.Clip(c.in, c.n)
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
	// Cut at every length, no byte 0xc3 is ever left alone.
	s := strings.Repeat("aé", 50)
	for n := 1; n < 100; n++ {
		if got := engine.Clip(s, n); !utf8.ValidString(got) || utf8.RuneCountInString(got) > n {
			t.Fatalf("Clip(…, %d) = %q", n, got)
		}
	}
}
