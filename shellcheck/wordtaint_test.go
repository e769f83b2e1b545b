package shellcheck

import (
	"maps"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/shelltest"
	"mvdan.cc/sh/v3/syntax"
)

// TestWordTaintAsWalk checks that wordTaint, which reads most words
// without walking them, finds the data roots a walk of the whole word
// finds, for every word of scripts that put placeholders and variables
// holding data in every kind of place.
func TestWordTaintAsWalk(t *testing.T) {
	scripts := []string{
		`echo {{event.x}} "{{event.y}}" pre{{event.x}}post "a $E1 b" $HOME '{{now}}'`,
		`a={{event.x}}; b="$a"; c=${a}; echo "$b" "${c}" $c`,
		`echo ${X:-{{event.x}}} "${X:+$E1}" ${a[1]} "${a[$E1]}" ${#E1} ${!E1} ${E1/x/y} ${E1:1:2} ${E1#-}`,
		`arr=({{event.x}} b "$E1"); echo "${arr[@]}" "${arr[0]}"`,
		`echo $(echo {{event.x}}) "$(printf %s "$E1")" $((1+2)) <(cat "$E1") ` + "`date`",
		`for i in {{event.x}} $E1 "x$E1"; do echo "$i"; done`,
		`case {{event.x}} in a|$E1) echo "$E1";; *) echo no;; esac`,
		"cat <<EOF\n[{{event.x}}] $E1\nEOF\ncat <<'Q'\n$E1\nQ\ncat <<< \"$E1\"",
		`[ "{{event.x}}" = "$E1" ] && [[ -n $E1 ]] && test -v E1`,
		`f() { echo "$1" "$@"; }; f {{event.x}}; set -- "$E1"; echo "$2"`,
		`read -r v w; printf -v out '%s' "$E1"; echo "$out" "$v"`,
		`declare -i n=$E1; declare x="$E1"; local y=z; export Z="{{event.x}}"`,
		`sh -c 'echo "$E1" $0' {{event.x}}; eval "echo $E1"`,
		`echo "a"'b'$'c'"$E1"'d'{{event.x}} ~/x *.go {a,b}`,
		`printf '%s\n' {{event.x}} | while IFS= read -r l; do echo "[$l]"; done`,
		`x=${E1%%/*} y="${E1,,}" z=${E1@Q}; echo $x $y $z`,
	}
	for _, bc := range shelltest.Contexts {
		line := strings.ReplaceAll(strings.ReplaceAll(bc.Line, "{{X}}", "{{event.v}}"), "@", "1")
		scripts = append(scripts, line)
	}
	words := 0
	for _, src := range scripts {
		c := testChecker(t, src)
		syntax.Walk(c.file, func(n syntax.Node) bool {
			switch n.(type) {
			case *syntax.Word, *syntax.ArrayExpr, *syntax.Stmt:
				words++
				got, want := c.wordTaint(n), walkTaint(c, n)
				if !maps.Equal(got, want) || (got == nil) != (want == nil) {
					t.Errorf("%q: word at %s: wordTaint %v, a walk %v", src, n.Pos(), got, want)
				}
			}
			return true
		})
	}
	if words < 100 {
		t.Fatalf("only %d words checked", words)
	}
}

// testChecker builds the checker of src as parseShellScript does, with
// E1 an env variable holding data, and learns which variables hold data.
func testChecker(t *testing.T, src string) *checker {
	t.Helper()
	phs, err := engine.ParsePlaceholders(src)
	if err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	var b strings.Builder
	occs := make([]occurrence, len(phs))
	last := 0
	for k, ph := range phs {
		b.WriteString(src[last:ph.Start])
		name := placeholderVarPrefix + strings.Repeat("1", 1+k%2)
		occs[k] = occurrence{ph: ph, n: 1 + k%2, off: b.Len(), name: name}
		b.WriteString("${" + name + "}")
		last = ph.End
	}
	b.WriteString(src[last:])
	_, file, err := joinContinuations(b.String(), occs)
	if err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	c := newChecker(file, occs, map[string]bool{"E1": true})
	c.learn()
	return c
}

// walkTaint is what wordTaint found before: the roots of every variable
// reference a walk of n meets.
func walkTaint(c *checker, n syntax.Node) map[string]bool {
	switch x := n.(type) {
	case *syntax.Word:
		if x == nil {
			return nil
		}
	case *syntax.ArrayExpr:
		if x == nil {
			return nil
		}
	}
	var out map[string]bool
	syntax.Walk(n, func(n syntax.Node) bool {
		if pe, ok := n.(*syntax.ParamExp); ok && c.isTainted(pe) {
			if out == nil {
				out = map[string]bool{}
			}
			for r := range c.roots(pe) {
				out[r] = true
			}
		}
		switch n.(type) {
		case *syntax.CallExpr, *syntax.DeclClause, *syntax.Stmt:
			// A command that prints data (printenv, a function
			// echoing its data argument): its output is data.
			if t := c.emitted(n); t != nil {
				if out == nil {
					out = map[string]bool{}
				}
				for r := range t {
					out[r] = true
				}
			}
		}
		return true
	})
	return out
}
