package redact_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/redact"
)

// TestRedactorWrappedBase64 performs the leaks of issue 27 through real
// programs: a secret (holding / and +) base64-encoded on its own and
// inside a longer file, wrapped as base64 does by default (76 columns),
// at 64 (PEM, openssl), at any -w N down to 1, with CRLF line ends as
// MIME writes them, between PEM armour lines; and JSON with every /
// escaped as \/ (PHP's json_encode), of the value and of its base64. No
// 8 characters of the secret's encoding may be left, and the text around
// it stays.
func TestRedactorWrappedBase64(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{"base64", "openssl", "python3", "sh"} {
		testtool.Need(t, bin)
	}
	const secret = "ghp_Zx8/1q9K+kT3vLw0/pYbN7mRcD2sFh6JuEa4GoXiVt5?>~"
	red := redact.New([]string{"TOKEN"}, []string{"TOKEN=" + secret})
	// The encoders run in one shell, each output after a \036 and its
	// name's number (a shell for each, 44 of them, was most of the
	// test's time).
	var names, scripts []string
	add := func(name, script string) { names, scripts = append(names, name), append(scripts, script) }
	// A file that holds the secret at different offsets, so that its
	// encoding starts at each of the three byte alignments and at
	// different columns of the wrapped lines.
	file := `printf 'header line\ntoken=%s\nport=8080\n' "$V"`
	for _, pre := range []string{"", "a", "ab", "abc", strings.Repeat("x", 40), strings.Repeat("y", 53)} {
		doc := `{ printf '%s' '` + pre + `'; ` + file + `; }`
		for _, w := range []string{"", " -w 64", " -w 10", " -w 3", " -w 1"} {
			add("base64"+w+" of a file at "+pre, doc+" | base64"+w)
		}
		add("MIME CRLF of a file at "+pre, doc+` | base64 -w 76 | sed 's/$/\r/'`)
		add("openssl base64 of a file at "+pre, doc+" | openssl base64")
	}
	add("base64 of the value", `printf '%s%s' "$V" "$V" | base64 -w 20`)
	add("PEM", `echo '-----BEGIN PRIVATE KEY-----'; printf 'key:%s' "$V" | base64 -w 64; echo '-----END PRIVATE KEY-----'`)
	add("json with \\/", `python3 -c 'import json, os; print(json.dumps({"token": os.environ["V"]}).replace("/", "\\/"))'`)
	add("json with \\/ of base64", `python3 -c 'import base64, json, os; print(json.dumps({"b": base64.b64encode(os.environ["V"].encode()).decode()}).replace("/", "\\/"))'`)
	var script strings.Builder
	script.WriteString("set -e\n")
	for i, s := range scripts {
		fmt.Fprintf(&script, "printf '\\036%d\\n'\n%s\n", i, s)
	}
	cmd := exec.Command("sh", "-c", script.String())
	cmd.Env = append(os.Environ(), "V="+secret)
	all, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, all)
	}
	outputs := map[string]string{}
	for _, part := range strings.Split(string(all), "\036")[1:] {
		num, out, _ := strings.Cut(part, "\n")
		i, err := strconv.Atoi(num)
		if err != nil || i >= len(names) {
			t.Fatalf("output %q: not after a number of the script", part)
		}
		outputs[names[i]] = out
	}
	if len(outputs) != len(names) {
		t.Fatalf("%d outputs of %d encoders:\n%s", len(outputs), len(names), all)
	}
	for how, out := range outputs {
		got := red.String(out)
		if !strings.Contains(got, "[REDACTED:TOKEN]") {
			t.Errorf("%s: %q became %q, with no [REDACTED:TOKEN]", how, out, got)
			continue
		}
		flat := func(s string) string {
			return strings.NewReplacer("\r", "", "\n", "", `\/`, "/").Replace(s)
		}
		if l := leaks(flat(got), secret, flat(out)); l != "" {
			t.Errorf("%s: %q became %q, which still holds %q", how, out, got, l)
		}
		if strings.Contains(how, "PEM") && !strings.HasPrefix(got, "-----BEGIN PRIVATE KEY-----\n") {
			t.Errorf("%s: the armour went: %q", how, got)
		}
		// The streaming writer decides the same, however the text is cut.
		for _, chunk := range []int{1, 7, 64} {
			var b bytes.Buffer
			w := red.Writer(&b)
			for i := 0; i < len(out); i += chunk {
				_, _ = w.Write([]byte(out[i:min(i+chunk, len(out))]))
			}
			_ = w.Close()
			if b.String() != got {
				t.Errorf("%s in chunks of %d: writer gave %q, String gave %q", how, chunk, b.String(), got)
			}
		}
	}
}

// TestRedactorWrappedKeepsText: joining lines to find a wrapped secret
// changes nothing else: base64 of other data, prose and code keep their
// line breaks.
func TestRedactorWrappedKeepsText(t *testing.T) {
	red := redact.New([]string{"TOKEN"}, []string{"TOKEN=hunter2hunter2-long-value"})
	other := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("other data "), 30))
	var wrapped strings.Builder
	for i := 0; i < len(other); i += 76 {
		wrapped.WriteString(other[i:min(i+76, len(other))] + "\n")
	}
	for _, s := range []string{wrapped.String(), "hunter2\nhunter2-long\n", "a\nb\nc\r\nd\n", "func x() {\n\treturn y\n}\n"} {
		if got := red.String(s); got != s {
			t.Errorf("String(%q) = %q, want it unchanged", s, got)
		}
	}
}
