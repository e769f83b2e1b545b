package steps

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/process"
	"github.com/hookd/hookd/redact"
)

// encodedSecrets are values a program encodes for the attacks below: one
// with / and + (a base64-looking token), one with JSON's special
// characters and non-ASCII ones, and a short one.
var encodedSecrets = map[string]string{
	"TOK": "ghp_R2d2/C3po+Zz9Yy8Xx7Ww6Vv5Uu4Tt",
	"UNI": `pa/ss"wö\rd-<é>&=+'x🔑/q`,
	"SML": "k/9=Zq_1",
}

// stripBreaks removes the line breaks of s: a wrapped encoding read as
// one line.
func stripBreaks(s string) string {
	return strings.NewReplacer("\r", "", "\n", "").Replace(s)
}

// encodedLeak reports a piece of the encoding of secret, placed after
// prefix, that out still holds once its lines are joined: any 8
// characters of the part of its base64 encodings (standard and URL
// alphabets) that depends on the secret alone, or of its hex encodings,
// or any 8 bytes of the secret itself.
func encodedLeak(out, prefix, secret string) string {
	joined := stripBreaks(out)
	var forms []string
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		s := enc.EncodeToString([]byte(prefix + secret))
		first, last := (8*len(prefix)+5)/6, 8*(len(prefix)+len(secret))/6
		forms = append(forms, s[first:last])
	}
	h := hex.EncodeToString([]byte(secret))
	forms = append(forms, h, strings.ToUpper(h), secret)
	for _, f := range forms {
		for i := 0; i+8 <= len(f); i++ {
			if strings.Contains(joined, f[i:i+8]) {
				return f[i : i+8]
			}
		}
	}
	return ""
}

// runEncoder runs script with sh -c, with S set to secret and P to
// prefix, through a Command with red, and returns what the script wrote
// (raw) and the Command's stdout (out, redacted as it streamed). The
// script runs once: its output goes to a file, which cat then streams
// to the Command, so raw and out are the same bytes, before and after
// the redactor, without running the encoder twice.
func runEncoder(t *testing.T, script, prefix, secret string, red *redact.Redactor) (raw, out string) {
	t.Helper()
	rawFile := filepath.Join(t.TempDir(), "raw")
	c := &process.Command{Argv: []string{"sh", "-c", "{ " + script + "\n} >\"$RAW\" && exec cat \"$RAW\""}, Redactor: red, Env: []string{
		"PATH=" + os.Getenv("PATH"), "LC_ALL=C.UTF-8", "PYTHONIOENCODING=utf-8", "S=" + secret, "P=" + prefix, "RAW=" + rawFile}}
	r := c.Run(context.Background())
	if r.Err != nil || r.ExitCode != 0 {
		t.Fatalf("%s: exit %d, %v\n%s", script, r.ExitCode, r.Err, r.Stderr)
	}
	b, err := os.ReadFile(rawFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), r.Stdout
}

// encodeCases calls f for the cases of a battery of programs over the
// secrets and prefixes: by default one secret for each program and
// prefix, a different one for each prefix and program in turn, so that
// every program still meets every secret and every prefix (and every
// secret every prefix), in a third of the runs; under HOOKD_TEST_LONG=1
// (as CI runs it) every secret for each.
func encodeCases(nprog int, prefixes []string, f func(prog int, name, secret, prefix string)) {
	names := make([]string, 0, len(encodedSecrets))
	for name := range encodedSecrets {
		names = append(names, name)
	}
	sort.Strings(names)
	for i := range nprog {
		for j, prefix := range prefixes {
			for k, name := range names {
				if !testtool.Long() && k != (i+j)%len(names) {
					continue
				}
				f(i, name, encodedSecrets[name], prefix)
			}
		}
	}
}

func redactorOf(secrets map[string]string) *redact.Redactor {
	var names, environ []string
	for k, v := range secrets {
		names, environ = append(names, k), append(environ, k+"="+v)
	}
	return redact.New(names, environ)
}

// TestCommandRedactsWrappedEncodings runs real encoders on a secret
// placed after prefixes of every length modulo 3 (so every alignment of
// base64) and redacts their output as it streams: base64 wrapped at its
// default 76 columns, at any -w N, openssl's 64 columns (PEM-style), with
// CRLF line ends (sed, and Python's MIME encoder), base64url, hex (xxd -p
// at 60 columns, od, basenc --base16 at odd widths), and the value
// itself folded into lines. Each output, unredacted, is checked to hold
// the encoding first, so the check can fail. By default each program
// runs at each of the three alignments, with the three secrets in turn
// (encodeCases); HOOKD_TEST_LONG=1 runs every secret at every prefix.
func TestCommandRedactsWrappedEncodings(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{"base64", "basenc", "openssl", "python3", "xxd", "od", "fold", "sed"} {
		testtool.Need(t, bin)
	}
	programs := []struct{ name, script string }{
		{"base64", `printf %s "$P$S" | base64`},
		{"openssl base64", `printf %s "$P$S" | openssl base64`},
		{"base64 -w 64 crlf", `printf %s "$P$S" | base64 -w 64 | sed 's/$/\r/'`},
		{"python mime crlf", `python3 -c 'import email.base64mime as m, os, sys; sys.stdout.write(m.body_encode(os.environ["P"].encode() + os.environ["S"].encode(), 60, "\r\n"))'`},
		{"basenc base64url -w 9", `printf %s "$P$S" | basenc --base64url -w 9`},
		{"xxd -p", `printf %s "$P$S" | xxd -p`},
		{"od hex", `printf %s "$P$S" | od -An -v -tx1 | tr -d ' '`},
		{"basenc base16 -w 7", `printf %s "$P$S" | basenc --base16 -w 7`},
		{"fold -w 5", `printf '%s\n' "$P$S" | fold -w 5`},
		{"fold -w 3 crlf", `printf '%s\n' "$P$S" | fold -w 3 | sed 's/$/\r/'`},
	}
	for _, n := range []int{1, 2, 3, 4, 5, 7, 11, 16, 60, 64, 100} {
		programs = append(programs, struct{ name, script string }{fmt.Sprintf("base64 -w %d", n),
			fmt.Sprintf(`printf %%s "$P$S" | base64 -w %d`, n)})
	}
	red := redactorOf(encodedSecrets)
	// Prefixes of 0, 1 and 5 bytes put the secret at each of base64's
	// three alignments; under HOOKD_TEST_LONG=1 (as CI runs it) 3 and 15
	// bytes too, which move it along the other wrap widths' lines.
	prefixes := []string{"", "u", "user:"}
	if testtool.Long() {
		prefixes = append(prefixes, "us:", "Authorization-x")
	}
	encodeCases(len(programs), prefixes, func(i int, name, secret, prefix string) {
		p := programs[i]
		raw, out := runEncoder(t, p.script, prefix, secret, red)
		if encodedLeak(raw, prefix, secret) == "" {
			t.Fatalf("%s of %s after %q: the unredacted output %q holds no encoding of it", p.name, name, prefix, raw)
		}
		if l := encodedLeak(out, prefix, secret); l != "" || !strings.Contains(out, "[REDACTED:"+name+"]") {
			t.Errorf("%s of %s after %q: %q leaks %q", p.name, name, prefix, out, l)
		}
	})
}

// TestCommandRedactsJSONEscapes runs real JSON encoders on a secret with
// a slash, quotes, a backslash, HTML characters and non-ASCII ones: Perl's
// JSON::PP with escape_slash (\/, as PHP's json_encode writes a slash),
// also ASCII-only (\u00f6, surrogate pairs), Python's json.dumps (ASCII
// and not, which leaves < > & as they are), and jq (-a and not). The
// redacted output must decode to the prefix and [REDACTED:NAME] alone.
// By default each encoder runs after each prefix, with the three secrets
// in turn (encodeCases); HOOKD_TEST_LONG=1 runs every secret after every
// prefix.
func TestCommandRedactsJSONEscapes(t *testing.T) {
	t.Parallel()
	for _, bin := range []string{"perl", "python3", "jq"} {
		testtool.Need(t, bin)
	}
	if out, err := exec.Command("perl", "-MJSON::PP", "-e", "1").CombinedOutput(); err != nil {
		msg := fmt.Sprintf("Perl's JSON::PP is not installed (Debian package perl): %v: %s", err, out)
		if os.Getenv(testtool.RequireEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	programs := []struct{ name, script string }{
		{"perl escape_slash", `perl -MJSON::PP -MEncode -e 'print JSON::PP->new->utf8->escape_slash->encode([decode_utf8($ENV{P}.$ENV{S})])'`},
		{"perl ascii escape_slash", `perl -MJSON::PP -MEncode -e 'print JSON::PP->new->ascii->escape_slash->encode([decode_utf8($ENV{P}.$ENV{S})])'`},
		{"python json.dumps", `python3 -c 'import json, os; print(json.dumps([os.environ["P"] + os.environ["S"]]))'`},
		{"python json.dumps utf-8", `python3 -c 'import json, os; print(json.dumps([os.environ["P"] + os.environ["S"]], ensure_ascii=False))'`},
		{"jq", `jq -cn --arg v "$P$S" '[$v]'`},
		{"jq -a", `jq -acn --arg v "$P$S" '[$v]'`},
	}
	red := redactorOf(encodedSecrets)
	encodeCases(len(programs), []string{"", "x/", "head "}, func(i int, name, secret, prefix string) {
		p := programs[i]
		raw, out := runEncoder(t, p.script, prefix, secret, red)
		var got []string
		if err := json.Unmarshal([]byte(raw), &got); err != nil || len(got) != 1 || got[0] != prefix+secret {
			t.Fatalf("%s of %s: unredacted %q decodes to %q (%v)", p.name, name, raw, got, err)
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 || got[0] != prefix+"[REDACTED:"+name+"]" {
			t.Errorf("%s of %s after %q: %q (unredacted %q) decodes to %q (%v)", p.name, name, prefix, out, raw, got, err)
		}
	})
}
