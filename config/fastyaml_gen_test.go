package config

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

var fastYAMLGenerated = flag.Int("fastyaml.generated", 4000, "documents TestFastYAMLGenerated generates")

// TestFastYAMLGenerated checks the fastParse property on random documents
// built from the constructs of the subset, and on the same documents with
// one byte changed to a character that matters to YAML: the first mostly
// take the fast path, the second sit on the edges of the subset.
func TestFastYAMLGenerated(t *testing.T) {
	n := *fastYAMLGenerated
	if testing.Short() {
		n = 400
	}
	seed := uint64(2026)
	if *fastYAMLGenerated != 4000 {
		seed = rand.Uint64() // a longer run explores further
	}
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(15, seed))
	fast, mutatedFast := 0, 0
	for i := range n {
		g := &yamlGen{r: r}
		g.mapping(0, 0)
		doc := g.b.String()
		if checkFastYAML(t, fmt.Sprintf("generated %d", i), []byte(doc)) {
			fast++
		}
		m := []byte(doc)
		if len(m) > 0 {
			k := r.IntN(len(m))
			c := yamlSignificant[r.IntN(len(yamlSignificant))]
			switch r.IntN(3) {
			case 0:
				m[k] = c
			case 1:
				m = append(m[:k], append([]byte{c}, m[k:]...)...)
			default:
				m = append(m[:k], m[k+1:]...)
			}
		}
		if checkFastYAML(t, fmt.Sprintf("mutated %d", i), m) {
			mutatedFast++
		}
	}
	t.Logf("fast path: %d of %d generated documents, %d of %d mutated ones", fast, n, mutatedFast, n)
	// The generator must keep exercising the fast path, or this test
	// proves nothing.
	if fast < n/2 || mutatedFast < n/4 {
		t.Errorf("too few documents took the fast path: %d and %d of %d", fast, mutatedFast, n)
	}
}

const yamlSignificant = " \n-:#'\"|>[]{},?&*!%@`\\.~0a"

// yamlGen writes a random document of the subset.
type yamlGen struct {
	r *rand.Rand
	b strings.Builder
}

func (g *yamlGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

var (
	genKeys = []string{"a", "b", "name", "type", "command", "b c", "k-1", "x_y", "1", "true", "null", "~",
		"-k", "k:x", "http://h:1", "'q'", "'it''s'", "\"d\"", "\"e f\"", "\"t\\tu\"", "on", "<x>", "k#1",
		"cl\u00e9", "'\u00fc'", "\u65e5\u672c"}
	genPlain = []string{"x", "hello world", "1", "-1", "0x1F", "0o17", "017", "1e3", "1_000", ".inf", "-.inf", ".nan",
		"yes", "No", "on", "true", "False", "~", "null", "NULL", "2001-12-14", "2001-12-14 21:59:43.10 -5",
		"a:b", "http://x:8/y", "x#y", "-a", "--allow=go test ./...", "a[0]", "x,y", "it's", "say \"hi\"",
		"5m", "*/15 * * * *", "{{steps.a.output}}", "a  b", "x?", "=", "$HOME/x", "(a)", "./run.sh -v", "\\d+",
		"na\u00efve \u2014 x", "\u00e9", "\U0001F600:x"}
	genQuoted = []string{"''", "'x'", "'it''s'", "' a '", "'# x'", "'a: b'", "\"\"", "\"x\"", "\"a\\\"b\"",
		"\"t\\tn\\n\"", "\"\\\\\"", "\"# x\"", "\"a: b\"", "\"{{x}}\"", "'\"'", "\"'\"", "\"\\e\\0\\a\"",
		"'\u00e9 '", "\"\u2026\""}
)

func (g *yamlGen) scalar(flow bool) string {
	switch g.r.IntN(3) {
	case 0:
		return g.pick(genQuoted...)
	default:
		s := g.pick(genPlain...)
		if flow && strings.ContainsAny(s, ",[]{}#:?") {
			return "'" + strings.ReplaceAll(s, "'", "''") + "'"
		}
		return s
	}
}

func (g *yamlGen) flow(depth int) string {
	if depth > 2 || g.r.IntN(3) == 0 {
		return g.scalar(true)
	}
	n := g.r.IntN(4)
	sp := g.pick("", " ")
	var parts []string
	if g.r.IntN(2) == 0 {
		for range n {
			parts = append(parts, g.flow(depth+1))
		}
		return "[" + sp + strings.Join(parts, ","+g.pick(" ", "", "  ")) + sp + "]"
	}
	seen := map[string]bool{}
	for range n {
		k := g.pick("a", "b", "c", "'d'", "\"e\"", "f g", "\u00e9")
		if seen[k] {
			continue
		}
		seen[k] = true
		parts = append(parts, k+":"+g.pick(" ", "  ")+g.flow(depth+1))
	}
	return "{" + sp + strings.Join(parts, ", ") + sp + "}"
}

func (g *yamlGen) tail() string {
	switch g.r.IntN(8) {
	case 0:
		return g.pick("  # note", " # \u2014 n\u00f6te")
	case 1:
		return " "
	case 2:
		return " #"
	}
	return ""
}

func (g *yamlGen) line(indent int, s string) {
	g.b.WriteString(strings.Repeat(" ", indent))
	g.b.WriteString(s)
	g.b.WriteString("\n")
}

// between writes blank and comment lines, sometimes.
func (g *yamlGen) between(indent int) {
	switch g.r.IntN(10) {
	case 0:
		g.b.WriteString("\n")
	case 1:
		g.line(g.r.IntN(indent+3), "# comment")
	case 2:
		g.line(0, strings.Repeat(" ", g.r.IntN(4)))
	}
}

func (g *yamlGen) literal(indent int) {
	// the header is written; content is indented past indent
	in := indent + 1 + g.r.IntN(3)
	for range 1 + g.r.IntN(4) {
		switch g.r.IntN(6) {
		case 0:
			g.b.WriteString("\n")
		case 1:
			g.line(in+1+g.r.IntN(2), "more indented")
		case 2:
			g.line(in, "# kept")
		case 3:
			g.line(0, strings.Repeat(" ", g.r.IntN(in+3)))
		default:
			g.line(in, g.pick("echo hi", "x", "printf '%s\\n' {{a}}", "a: b", "- c", "  ", "trailing  ", "gr\u00fc\u00dfe \u2014 x"))
		}
	}
	if g.r.IntN(3) == 0 {
		g.b.WriteString("\n")
	}
}

// value writes what follows "key:" or "-" (the indicator is written) in
// a collection at indent.
func (g *yamlGen) value(indent, depth int, inMapping bool) {
	choice := g.r.IntN(10)
	if depth > 4 && choice >= 6 {
		choice = 0
	}
	switch choice {
	case 0, 1:
		g.b.WriteString(" " + g.scalar(false) + g.tail() + "\n")
	case 2:
		g.b.WriteString(" " + g.flow(0) + g.tail() + "\n")
	case 3:
		g.b.WriteString(" " + g.pick("|", "|-", "|+", "| # c") + "\n")
		g.literal(indent)
	case 4:
		g.b.WriteString(g.tail() + "\n") // empty
	case 5:
		if !inMapping {
			g.b.WriteString(g.pick(" ", "   "))
			col := g.b.Len() - strings.LastIndexByte(g.b.String(), '\n') - 1
			g.mappingInline(col, depth+1)
			return
		}
		g.b.WriteString(" " + g.scalar(false) + "\n")
	case 6, 7:
		g.b.WriteString(g.tail() + "\n")
		g.between(indent)
		g.mapping(indent+1+g.r.IntN(3), depth+1)
	default:
		g.b.WriteString(g.tail() + "\n")
		g.between(indent)
		in := indent + 1 + g.r.IntN(3)
		if inMapping && g.r.IntN(2) == 0 {
			in = indent // indentless
		}
		g.sequence(in, depth+1)
	}
}

func (g *yamlGen) key(seen map[string]bool) string {
	for {
		k := g.pick(genKeys...)
		if !seen[k] {
			seen[k] = true
			return k
		}
	}
}

func (g *yamlGen) mapping(indent, depth int) {
	seen := map[string]bool{}
	for i := range 1 + g.r.IntN(4) {
		if i > 0 {
			g.between(indent)
		}
		g.b.WriteString(strings.Repeat(" ", indent) + g.key(seen) + ":")
		g.value(indent, depth, true)
	}
}

// mappingInline writes a compact mapping whose first key is at column
// col of the current line.
func (g *yamlGen) mappingInline(col, depth int) {
	seen := map[string]bool{}
	for i := range 1 + g.r.IntN(3) {
		if i > 0 {
			g.between(col)
			g.b.WriteString(strings.Repeat(" ", col))
		}
		g.b.WriteString(g.key(seen) + ":")
		g.value(col, depth, true)
	}
}

func (g *yamlGen) sequence(indent, depth int) {
	for i := range 1 + g.r.IntN(4) {
		if i > 0 {
			g.between(indent)
		}
		g.b.WriteString(strings.Repeat(" ", indent) + "-")
		if depth < 5 && g.r.IntN(8) == 0 {
			g.b.WriteString(" ")
			g.sequenceInline(indent+2, depth+1)
			continue
		}
		g.value(indent, depth, false)
	}
}

// sequenceInline writes a compact sequence ("- - a") whose first '-' is
// at column col of the current line.
func (g *yamlGen) sequenceInline(col, depth int) {
	for i := range 1 + g.r.IntN(3) {
		if i > 0 {
			g.b.WriteString(strings.Repeat(" ", col))
		}
		g.b.WriteString("-")
		g.value(col, depth, false)
	}
}
