package config

import (
	"regexp"
	"testing"
)

// TestNameSyntax holds the identifier checks to the regexps they stand
// for, on every string of up to two characters from a set that holds
// each class's edges, and on longer ones.
func TestNameSyntax(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		n    *nameSyntax
		re   *regexp.Regexp
	}{
		{"hookName", hookName, regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)},
		{"stepName", stepName, regexp.MustCompile(`^[A-Za-z0-9_-]+$`)},
		{"envName", envName, regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)},
	}
	chars := []string{"a", "z", "A", "Z", "0", "9", "_", ".", "-", "@", "[", "`", "{", "/", ":", " ", "\x00", "\n", "\x7f", "é", "\xff", "Ａ"}
	strs := []string{"", "deploy-prod.v2", "HOOKD_P1", "_x", "9lives", "a b", "x\n", "name$", "über", "a.b-c_d0", "-", "..", "step-1_a"}
	for _, a := range chars {
		strs = append(strs, a)
		for _, b := range chars {
			strs = append(strs, a+b, "ab"+a+b, a+b+"yz")
		}
	}
	for _, c := range cases {
		for _, s := range strs {
			if got, want := c.n.MatchString(s), c.re.MatchString(s); got != want {
				t.Errorf("%s.MatchString(%q) = %v, the regexp says %v", c.name, s, got, want)
			}
		}
	}
}
