package config

import (
	"math/rand/v2"
	"testing"

	"github.com/hookd/hookd/internal/testtool"
	"gopkg.in/yaml.v3"
)

// TestPlainTagMatchesYAMLv3: plainTag answers what yaml.v3's ShortTag
// answers for an untagged scalar, on every string of up to three bytes
// over the bytes resolve treats differently (and a few it does not), on
// the words and numbers resolve knows, and on random longer strings made
// mostly of number and timestamp bytes. By default it checks every string
// of up to two bytes, every seventh of three (each pair of bytes with
// about nine third bytes, every byte in each place), the words, and
// 20,000 random strings; HOOKD_TEST_LONG=1 (as CI runs it) checks all
// the three-byte strings and 200,000 random ones.
func TestPlainTagMatchesYAMLv3(t *testing.T) {
	t.Parallel()
	const alphabet = "0123456789abcdefABCDEFxXoObB_+-.:, tTzZsmhlrunNiyYqQ~<>!#/\x80é"
	check := func(v string) {
		t.Helper()
		want := (&yaml.Node{Kind: yaml.ScalarNode, Value: v}).ShortTag()
		if got := plainTag(&yaml.Node{Kind: yaml.ScalarNode, Value: v}); got != want {
			t.Fatalf("plainTag(%q) = %s, yaml.v3: %s", v, got, want)
		}
	}
	stride := testtool.Count(7, 1) // 7 and len(alphabet), 61, share no factor
	check("")
	n := 0
	for i := 0; i < len(alphabet); i++ {
		a := alphabet[i : i+1]
		check(a)
		for j := 0; j < len(alphabet); j++ {
			b := a + alphabet[j:j+1]
			check(b)
			for k := 0; k < len(alphabet); k++ {
				if n++; n%stride == 0 {
					check(b + alphabet[k:k+1])
				}
			}
		}
	}
	for _, v := range []string{
		"true", "True", "TRUE", "tRUE", "trUe", "TRUe", "truE", "fALSE", "FaLSE", "nULL", "NuLL", "~a", "Nil", "false", "False", "FALSE", "falsey", "null", "Null", "NULL", "nulls",
		"yes", "no", "on", "off", ".nAn", ".iNF", "+.nan", "-.nan", "+.NaN", "-.InF", "+.iNf", ".Nan", ".Na", "-.in", "+.infinity", "y", "n", "~", "~~", ".nan", ".NaN", ".inf", "-.inf", "+.Inf", ".5", ".5e3",
		"0x1F", "0X1f", "0o17", "0O17", "-0o17", "0b101", "-0b101", "0B1", "017", "08", "09.5", "1_000", "1e3",
		"1E+3", "-1.5e-3", "+12", "9223372036854775807", "9223372036854775808", "18446744073709551616", "1e400",
		"2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14T21:59:43.10Z", "2001-12-14 21:59:43.10",
		"2001-12-14 21:59:43,10", "2001-1-2", "2001-13-40", "30s", "5m", "1h30m", "-u", "--since", "-n", "./x.sh",
		"0.5s", "1.5", "1.", "-.5", "+-1", "0x", "0b", "0o", "12:30", "1:2:3", "Infinity", "-inf", "nan",
	} {
		check(v)
	}
	r := rand.New(rand.NewPCG(1, 2))
	const numeric = "0123456789012345678901234567890123456789abcdefxob_+-.:, tTzZe"
	for range testtool.Count(20_000, 200_000) {
		b := make([]byte, 1+r.IntN(24))
		for i := range b {
			if r.IntN(20) == 0 {
				b[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				b[i] = numeric[r.IntN(len(numeric))]
			}
		}
		check(string(b))
	}
}
