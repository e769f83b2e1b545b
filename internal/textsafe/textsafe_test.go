package textsafe_test

import (
	"testing"

	"github.com/hookd/hookd/internal/textsafe"
)

func TestAppend(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text\n\twith tab", "plain text\n\twith tab"},
		{"invoice\u202efdp.exe", `invoice\u202efdp.exe`},
		{"\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069", `\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069`},
		{"\x1b[2J\x7f\u0085", `\u001b[2J\u007f\u0085`},
		{"caf\xc3", `caf\xc3`},
		{"naïve – ok \u2029", "naïve – ok \u2029"},
	} {
		if got := string(textsafe.Append(nil, []byte(c.in))); got != c.want {
			t.Errorf("Append(%q) = %q, want %q", c.in, got, c.want)
		}
		if clean := textsafe.Clean([]byte(c.in)); clean != (c.in == c.want) {
			t.Errorf("Clean(%q) = %v", c.in, clean)
		}
	}
}
