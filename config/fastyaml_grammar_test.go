package config

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/testtool"
)

// grammarGen writes random YAML documents from the grammar of hook files and
// its edges (the one generator of the fastParse differential test): block mappings and sequences (indented, indentless, compact
// "- k: v" and "- - a") at random indentation, plain, quoted and literal
// scalars, one-line flow collections, comments and blank lines at any
// indentation, and, now and then, a byte or construct just outside
// fastParse's subset (an odd indentation, a tab, a CR, an anchor, a
// folded scalar, a continuation line, a document marker...). Byte
// mutation rarely builds valid deep YAML; this does, so that the
// differential test of fastParse against yaml.v3 runs mostly on the
// fast path, where a divergence could hide.
type grammarGen struct {
	r     *rand.Rand
	b     strings.Builder
	odd   float64 // probability of each odd choice
	depth int
	keys  int
}

func newGrammarGen(seed uint64) *grammarGen {
	g := &grammarGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	// Most documents stay in the subset; some are full of edges.
	switch g.r.IntN(4) {
	case 0:
		g.odd = 0
	case 1, 2:
		g.odd = 0.01
	default:
		g.odd = 0.04
	}
	return g
}

func (g *grammarGen) chance(p float64) bool { return g.r.Float64() < p }
func (g *grammarGen) oddly() bool           { return g.odd > 0 && g.chance(g.odd) }
func (g *grammarGen) pick(s ...string) string {
	return s[g.r.IntN(len(s))]
}
func (g *grammarGen) spaces(n int) {
	for range n {
		g.b.WriteByte(' ')
	}
}

// lineAt writes the spaces of a line at column ind, or, oddly, one off.
func (g *grammarGen) lineAt(ind int) {
	at := ind
	if g.oddly() {
		at = max(0, ind+g.r.IntN(3)-1)
	}
	g.spaces(at)
}

// wide returns text beyond ASCII that yaml.v3 takes as ordinary
// characters (of 2, 3 and 4 bytes, a no-break space, U+FFFD), or, oddly,
// one it does not (NEL, LS and PS break lines; a BOM; C1 controls,
// U+FFFE; bytes that are not UTF-8).
func (g *grammarGen) wide() string {
	if g.oddly() {
		return g.pick("\u0085", "\u2028", "\u2029", "\ufeff", "\u0080", "\u009f", "\ufffe", "\uffff", "\x7f", "\xff", "\xc3", "\xe2\x80", "\xed\xa0\x80", "\xc0\xaf", "\U0010ffff", "\U000e0001")
	}
	return g.pick("é", "—", "…", "中文", "ключ", "😀", "\u00a0", "\ufffd", "ß", "\u00ad", "\u200b", "€", "\U00010000", "\ue000")
}

// text returns a word of plain text, now and then beyond ASCII.
func (g *grammarGen) text(ascii string) string {
	if g.chance(0.08) {
		switch g.r.IntN(3) {
		case 0:
			return g.wide() + ascii
		case 1:
			return ascii + g.wide()
		}
		return g.wide()
	}
	return ascii
}

// doc writes one document: a block mapping at the top.
func (g *grammarGen) doc() string {
	g.b.Reset()
	g.depth, g.keys = 0, 0
	if g.oddly() {
		g.b.WriteString(g.pick("---\n", "--- # c\n", "%YAML 1.2\n---\n", "\ufeff", " ", "- a\n"))
	}
	for g.chance(0.2) {
		g.filler(0)
	}
	top := 0
	if g.chance(0.1) {
		top = 1 + g.r.IntN(3) // an indented top level
	}
	n := g.r.IntN(6) + 1
	if g.chance(0.05) {
		n = 17 + g.r.IntN(24) // past the few keys a repeated key is looked for among without an index
	}
	g.mapping(top, n)
	g.end()
	s := g.b.String()
	if g.oddly() {
		s = g.corrupt(s)
	}
	return s
}

// end finishes the document: trailing blank lines, spaces or comments,
// with or without a final line break.
func (g *grammarGen) end() {
	for g.chance(0.2) {
		g.filler(0)
	}
	if g.oddly() {
		g.b.WriteString(g.pick("...\n", "---\n", "---\nb: 1\n", "... # c\n"))
	}
	switch g.r.IntN(8) {
	case 0: // no final line break
		s := strings.TrimRight(g.b.String(), "\n")
		g.b.Reset()
		g.b.WriteString(s)
	case 1:
		g.spaces(g.r.IntN(4))
	case 2:
		g.b.WriteString("\n\n")
	}
}

// corrupt puts one byte or token outside the subset somewhere.
func (g *grammarGen) corrupt(s string) string {
	if s == "" {
		return s
	}
	i := g.r.IntN(len(s) + 1)
	ins := g.pick("\t", "\r", "\r\n", "&a ", "*a", "!!str ", "? ", ": ", " #", "#", "-", "- ", "'", "\"", "\\", "[", "]", "{", "}", ",", "|", ">", "@", "`", "%", "\x00", "\u00e9", "\u2028", " ", "  ", "\n", "\n ", ":", "<<", "---", "...")
	if g.chance(0.3) && i < len(s) { // replace a byte
		return s[:i] + ins + s[i+1:]
	}
	return s[:i] + ins + s[i:]
}

// mutate changes one to three bytes of s (inserts, replaces or deletes),
// with bytes that matter to YAML, so that some of the changes stay in the
// subset and test where its edges are.
func (g *grammarGen) mutate(s string) string {
	const significant = " \n-:#'\"|>[]{},?&*!%@`\\.~0a\t\r"
	for range 1 + g.r.IntN(3) {
		i := g.r.IntN(len(s) + 1)
		c := string(significant[g.r.IntN(len(significant))])
		if g.chance(0.05) {
			c = g.wide()
		}
		switch op := g.r.IntN(3); {
		case op == 0 || i == len(s):
			s = s[:i] + c + s[i:]
		case op == 1:
			s = s[:i] + c + s[i+1:]
		default:
			s = s[:i] + s[i+1:]
		}
	}
	return s
}

// filler writes a blank line (maybe of spaces) or a comment line, at an
// indentation around ind.
func (g *grammarGen) filler(ind int) {
	if g.chance(0.5) {
		g.spaces(g.r.IntN(ind + 3))
		g.b.WriteByte('\n')
		return
	}
	n := ind + g.r.IntN(5) - 2
	if n < 0 || g.chance(0.2) {
		n = 0
	}
	g.spaces(n)
	g.b.WriteString(g.pick("#", "# c", "#: x", "# - a", "#|", "## k: v #", "# "+g.wide(), "#"+g.wide()+": x"))
	g.b.WriteByte('\n')
}

// lineEnd ends a line after a value: spaces, a comment, then a break.
func (g *grammarGen) lineEnd() {
	switch g.r.IntN(8) {
	case 0:
		g.spaces(g.r.IntN(3))
	case 1:
		g.spaces(g.r.IntN(3) + 1)
		g.b.WriteString(g.pick("# c", "#", "# a: b", "#- x", "# "+g.wide()))
	}
	if g.oddly() {
		g.b.WriteString(g.pick("#c", " x", " : y", ": z", " - a", " 'q'", " [a]"))
	}
	g.b.WriteByte('\n')
	for g.chance(0.1) {
		g.filler(g.r.IntN(6))
	}
}

// indent returns the indentation of a collection nested in one at ind.
func (g *grammarGen) indent(ind int) int {
	n := ind + 1 + g.r.IntN(4)
	if g.chance(0.5) {
		n = ind + 2
	}
	return n
}

// mapping writes n entries of a block mapping at ind, each key on a line
// of its own.
func (g *grammarGen) mapping(ind, n int) {
	g.depth++
	defer func() { g.depth-- }()
	for range n {
		g.lineAt(ind)
		g.entry(ind)
	}
}

// entry writes "key: value" from the key on, in a mapping at ind.
func (g *grammarGen) entry(ind int) {
	g.key()
	switch {
	case g.oddly():
		g.b.WriteString(g.pick(" :", ":", "  :", "::"))
	default:
		g.b.WriteByte(':')
	}
	g.value(ind, true)
}

// key writes a mapping key, usually a new one.
func (g *grammarGen) key() {
	g.keys++
	var k string
	switch g.r.IntN(12) {
	case 0:
		k = g.pick("'k%d'", "'k %d'", "'it''s %d'", "''", "'#%d'", "'a: %d'")
	case 1:
		k = g.pick("\"k%d\"", "\"k\\t%d\"", "\"\\\"%d\"", "\"a\\\\%d\"", "\"\"", "\"\\ %d\"")
	case 2:
		k = g.pick("%d", "k %d", "k-%d", "-k%d", "k.%d", "k_%d", "k/%d", "k:%d", "k#%d", "$k%d", "k%d?", "~k%d", "(k%d)", "k,%d", "k]%d", "k - %d", "k [%d]", "k{%d}", "k'%d", "k\"%d", "k!%d", "k&%d", "k*%d", "k|%d", "k>%d", "k %d #x",
			"http://h:%d", "<k%d>", "k=%d")
	case 3:
		if g.chance(0.1) {
			k = g.pick("<<", "true", "null", "~", "1", "0x10", "1.5", "yes", "on", "=")
		} else {
			k = g.pick("enabled", "command", "tools", "allow_commands", "write", "triggers", "name")
		}
	default:
		k = g.pick("k%d", "key%d", "a%d", "x_%d", "on%d")
	}
	if strings.Contains(k, "%d") {
		k = fmt.Sprintf(k, g.keys)
	}
	if g.chance(0.06) {
		w := g.wide()
		switch g.r.IntN(3) {
		case 0:
			k = w + k
		case 1:
			if k != "" && (k[0] == '\'' || k[0] == '"') {
				k = k[:1] + w + k[1:]
			} else {
				k += w
			}
		default:
			if g.chance(0.3) {
				k = strings.Repeat(w, g.r.IntN(1100/len(w)+1)) + k // long in bytes, maybe not in characters
			}
		}
	}
	if g.oddly() {
		k = g.pick("&a "+k, "!!str "+k, "? "+k, "*a", "["+k+"]", "{"+k+": 1}", k+" #", strings.Repeat("k", 1020+g.r.IntN(10)))
	}
	g.b.WriteString(k)
}

// value writes what follows a mapping's ':' or a sequence's '-', in a
// collection at ind, up to and including the line break(s).
func (g *grammarGen) value(ind int, inMapping bool) {
	deep := g.depth > 5
	choice := g.r.IntN(20)
	if deep && choice >= 12 {
		choice = g.r.IntN(12)
	}
	switch {
	case choice < 5:
		g.b.WriteString(g.pick(" ", " ", "  ", "   "))
		g.plain()
		g.continuation(ind)
		g.lineEnd()
	case choice < 7:
		g.b.WriteByte(' ')
		g.quotedScalar()
		g.lineEnd()
	case choice < 9:
		g.b.WriteString(g.pick(" ", " ", "  "))
		g.flow(0)
		g.lineEnd()
	case choice < 12:
		g.b.WriteString(g.pick(" ", " ", "  ", "   "))
		g.literal(ind)
	case choice < 13:
		// Empty.
		g.emptyValue()
	case choice < 16:
		g.emptyValue()
		at := g.indent(ind)
		if g.oddly() {
			at = ind
		}
		g.mapping(at, g.r.IntN(4)+1)
	case choice < 19:
		g.emptyValue()
		at := g.indent(ind)
		if inMapping && g.chance(0.4) || g.oddly() {
			at = ind // indentless
		}
		g.sequence(at, g.r.IntN(4)+1)
	default:
		if inMapping && g.oddly() {
			g.b.WriteString(" - a\n") // not allowed
			return
		}
		g.b.WriteString(" ")
		g.plain()
		g.lineEnd()
	}
}

// emptyValue ends the line of an empty value: maybe spaces or a comment.
func (g *grammarGen) emptyValue() {
	switch g.r.IntN(4) {
	case 0:
		g.spaces(g.r.IntN(3))
	case 1:
		g.spaces(g.r.IntN(3) + 1)
		g.b.WriteString(g.pick("# c", "#", "# - x"))
	}
	g.b.WriteByte('\n')
	for g.chance(0.15) {
		g.filler(g.r.IntN(6))
	}
}

// continuation sometimes continues a plain scalar on a more indented
// line (a multi-line scalar), or writes a line that could be taken so.
func (g *grammarGen) continuation(ind int) {
	if !g.oddly() {
		return
	}
	g.b.WriteByte('\n')
	if g.chance(0.3) {
		g.b.WriteByte('\n')
	}
	g.spaces(ind + 1 + g.r.IntN(3))
	g.b.WriteString(g.pick("more", "x: y", "- z", "# c", "'q'"))
}

// sequence writes n entries of a block sequence whose '-' are at ind.
func (g *grammarGen) sequence(ind, n int) {
	g.depth++
	defer func() { g.depth-- }()
	for range n {
		g.lineAt(ind)
		g.b.WriteByte('-')
		g.seqValue(ind)
	}
}

// seqValue writes what follows a '-' at ind.
func (g *grammarGen) seqValue(ind int) {
	if g.chance(0.25) && g.depth < 8 {
		sp := 1 + g.r.IntN(3)
		if g.chance(0.6) {
			sp = 1
		}
		g.spaces(sp)
		g.compact(ind + 1 + sp)
		return
	}
	g.value(ind, false)
}

// compact writes a collection that starts on the line of a '-', its
// first token in column col: "- k: v" (more keys follow in col) or
// "- - a".
func (g *grammarGen) compact(col int) {
	if g.chance(0.3) {
		g.b.WriteByte('-')
		g.seqValue(col)
		for range g.r.IntN(3) {
			g.lineAt(col)
			g.b.WriteByte('-')
			g.seqValue(col)
		}
		return
	}
	g.depth++
	defer func() { g.depth-- }()
	g.entry(col)
	for range g.r.IntN(3) {
		g.lineAt(col)
		g.entry(col)
	}
}

// plain writes a one-line plain scalar.
func (g *grammarGen) plain() {
	switch g.r.IntN(6) {
	case 0:
		g.b.WriteString(g.pick("1", "-1", "+1", "0", "007", "0x1F", "0o17", "0b101", "1e3", "1.5", "-.5", "1_000", ".inf", "-.Inf", ".nan", "1:30", "1,000", "2001-12-14", "2001-12-14T21:59:43Z", "2001-12-14 21:59:43.10 -5"))
	case 1:
		g.b.WriteString(g.pick("true", "false", "True", "False", "FALSE", "yes", "no", "No", "on", "off", "y", "n", "null", "Null", "~", "NULL", "nil"))
	case 2:
		if g.oddly() {
			g.b.WriteString(g.pick("-", "a :", "a: b", "a #b", "a\t", "- a", "a:"))
			return
		}
		g.b.WriteString(g.pick("a:b", "a#b", "a,b", "a]b", "a}b", "x[0]", "a{b}", "a?", "a!", "a&b", "a*b", "a|b", "a>b", "a'b", "a\"b", "a%b", "a@b", "a`b", "-a", "--", "---x", "...x", ".", "/", "=", "<<", "<", "$HOME", "\\n", "(a)", "^a", ";a", "+a", "~a", "_a", "http://x:80/y", "a#", "a-"))
	case 3:
		g.b.WriteString(g.pick("a - b", "a -b", "a ? b", "a ! b", "a & b", "a * b", "a | b", "a > b", "a [b]", "a {b}", "a ] b", "a, b", "a ' b", "a \" b", "a % b", "a @ b", "a ` b", "./run.sh --flag", "echo 'hi' \"there\"", "curl -s http://example.com/x?y=1&z=2", "grep -e a -e b", "ls -la /tmp", "a  b   c", "x y",
			"--allow=go test ./...", "say \"hi\"", "it's", "5m", "$HOME/x", "\\d+", "x,y", "x#y", "hello world", "naïve — x", "😀:x",
			"*/15 * * * *", "{{steps.a.output}}")) // the last two: an alias and a flow mapping to yaml.v3
	default:
		g.b.WriteString(g.text(g.pick("value", "v", "some words here", "x", "hello-world", "a.b.c", "CamelCase", "snake_case", "v1.2.3")))
	}
}

// quotedScalar writes a one-line single- or double-quoted scalar (and now
// and then one over two lines).
func (g *grammarGen) quotedScalar() {
	if g.chance(0.5) {
		g.b.WriteString(g.pick("'x'", "''", "'it''s'", "'a # b'", "'a: b'", "' lead'", "'trail '", "'\\n'", "'\"'", "''''", "'[a]'", "' a '", "'# x'", "'"+g.text("x")+"'", "'"+g.wide()+" '' "+g.wide()+"'"))
	} else {
		if g.oddly() {
			g.b.WriteString(g.pick(`"\/"`, `"\x41"`, `"\u00e9"`, `"\N\_"`, `"\q"`, `"\U0001F600"`))
		} else {
			g.b.WriteString(g.pick(`"x"`, `""`, `"a\"b"`, `"a\\b"`, `"\t\n\r"`, `"\0\a\b\v\f\e"`, `"\ \'"`, `"a # b"`, `"a: b"`, `"{{x}}"`, `"'"`, `" lead"`, `"trail "`, `"`+g.text("x")+`"`, `"`+g.wide()+`\"\t`+g.wide()+`"`))
		}
	}
	if g.oddly() {
		g.b.WriteString(g.pick("x", ":", ": y", "'", "\""))
	}
}

// literal writes a literal block scalar ('|' is next) in a collection at
// ind: its header, then lines at a content indentation with now and then
// a more indented line, blank lines of any number of spaces, and trailing
// blank lines.
func (g *grammarGen) literal(ind int) {
	if g.oddly() {
		g.b.WriteString(g.pick("|2", "|1-", "|+2", ">", ">-", "|-+", "|x", "|0"))
	} else {
		g.b.WriteString(g.pick("|", "|", "|-", "|+"))
	}
	switch g.r.IntN(6) {
	case 0:
		g.spaces(1 + g.r.IntN(2))
	case 1:
		g.spaces(1 + g.r.IntN(2))
		g.b.WriteString(g.pick("# c", "#"))
	}
	g.b.WriteByte('\n')
	bi := g.indent(ind)
	if g.oddly() {
		bi = max(0, ind+g.r.IntN(2)) // not indented enough: empty
	}
	for g.chance(0.15) || g.oddly() {
		g.spaces(g.r.IntN(bi + 3)) // a leading blank line, maybe more indented than the text
		g.b.WriteByte('\n')
	}
	n := g.r.IntN(4)
	if g.chance(0.85) {
		n++
	}
	for i := range n {
		if i > 0 {
			for g.chance(0.2) {
				g.spaces(g.r.IntN(bi + 3))
				g.b.WriteByte('\n')
			}
		}
		extra := 0
		if i > 0 && g.chance(0.15) || g.oddly() {
			extra = 1 + g.r.IntN(3) // more indented (the first line sets the indentation)
		}
		g.spaces(bi + extra)
		g.b.WriteString(g.pick("line", "# not a comment", "a: b", "- x", "'q'", "|", "x #y", "---", "{a}", "x ", "a  b", "printf '%s\\n' {{a}}", g.text("w")))
		g.b.WriteByte('\n')
	}
	for g.chance(0.3) {
		g.spaces(g.r.IntN(bi + 3))
		g.b.WriteByte('\n')
	}
	if g.chance(0.1) {
		g.spaces(g.r.IntN(bi + 2))
		g.b.WriteString(g.pick("# c", "#"))
		g.b.WriteByte('\n')
	}
}

// flow writes a one-line flow collection or a scalar inside one.
func (g *grammarGen) flow(depth int) {
	if depth > 0 && (depth > 3 || g.chance(0.6)) {
		switch g.r.IntN(5) {
		case 0:
			g.quotedScalar()
		case 1:
			g.b.WriteString(g.pick("a b", "-a", "1", "true", "~", "null", "a.b", "x/y", "$v", "a - b", "a -", "a'b", "a\"b", "a!b", "a&b", "a*b", "a|b", "a>b", "a%b", "a@b", "a`b", "a-", "a  b", "a=b", "a\\b"))
		default:
			g.b.WriteString(g.text(g.pick("a", "b", "c", "k", "v", "x")))
		}
		if g.oddly() {
			g.b.WriteString(g.pick(":", ":x", "#", " #c", "?", "-", "\n"))
		}
		return
	}
	isMap := g.chance(0.4)
	open, closer := "[", "]"
	if isMap {
		open, closer = "{", "}"
	}
	g.b.WriteString(open)
	sp := g.pick("", "", " ")
	g.b.WriteString(sp)
	n := g.r.IntN(4)
	for i := range n {
		if i > 0 {
			g.b.WriteString(g.pick(",", ", ", ", ", " ,", " , ", ",  "))
		}
		if isMap {
			fmt.Fprintf(&g.b, g.pick("a%d", "b%d", "'c%d'", "\"d%d\"", "e f%d", "-g%d", "%d", g.wide()+"%d"), i)
			g.b.WriteString(g.pick(": ", ": ", ":  "))
			if g.oddly() {
				g.b.WriteString(g.pick(":", "", "? "))
			}
		}
		g.flow(depth + 1)
	}
	if n > 0 && g.oddly() {
		g.b.WriteString(",")
	}
	g.b.WriteString(sp)
	g.b.WriteString(closer)
}

// fastYAMLDocs is how many generated documents TestFastYAMLGrammar
// checks: 20,000 under HOOKD_TEST_LONG=1 (as CI runs), the first 5,000 of
// them by default, HOOKD_FASTYAML_DOCS for a long local run (from
// HOOKD_FASTYAML_SEED, so that runs can be split).
func fastYAMLDocs(t *testing.T) (n int, seed uint64) {
	n = testtool.Count(5000, 20000)
	if testing.Short() {
		n = 2000
	}
	if s := os.Getenv("HOOKD_FASTYAML_DOCS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("HOOKD_FASTYAML_DOCS: %v", err)
		}
		n = v
	}
	if s := os.Getenv("HOOKD_FASTYAML_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("HOOKD_FASTYAML_SEED: %v", err)
		}
		seed = v
	}
	return n, seed
}

// fastYAMLProblem returns how fastParse breaks its property on data, or
// "": fastParse declines data or gives yaml.v3's exact tree, leaves its
// input alone, and the tree holds no reference into it (a pooled
// buffer). took reports whether fastParse took data.
func fastYAMLProblem(data []byte) (took bool, problem string) {
	orig := bytes.Clone(data)
	got, ok := fastParse(data)
	if !bytes.Equal(data, orig) {
		return ok, "fastParse changed its input"
	}
	if !ok {
		return false, ""
	}
	want, err := yamlV3Top(data)
	if err != nil {
		return true, "fastParse took what yaml.v3 refuses: " + err.Error()
	}
	if d := nodeDiff("top", got, want); d != "" {
		return true, "the trees differ at " + d
	}
	defer copy(data, orig)
	for i := range data {
		data[i] = 'X'
	}
	if d := nodeDiff("top", got, want); d != "" {
		return true, "the tree changed with its input at " + d
	}
	return true, ""
}

// shrinkYAML makes a failing input smaller while it still fails: whole
// lines first, then single bytes.
func shrinkYAML(s string) string {
	fails := func(s string) bool { _, p := fastYAMLProblem([]byte(s)); return p != "" }
	for changed := true; changed; {
		changed = false
		lines := strings.SplitAfter(s, "\n")
		for i := 0; i < len(lines); i++ {
			if lines[i] == "" {
				continue
			}
			t := strings.Join(lines[:i], "") + strings.Join(lines[i+1:], "")
			if fails(t) {
				s, lines, changed = t, append(lines[:i:i], lines[i+1:]...), true
				i--
			}
		}
		for i := 0; i < len(s); i++ {
			if t := s[:i] + s[i+1:]; fails(t) {
				s, changed = t, true
				i--
			}
		}
	}
	return s
}

// TestFastYAMLGrammar checks fastParse against yaml.v3 on generated
// documents and on the same documents with one to three bytes changed to
// ones that matter to YAML (mutants, on the edges of the subset): each is
// declined or parsed into yaml.v3's exact tree, with its input left
// alone (fastYAMLProblem), and many take the fast path (else the test
// would prove little).
func TestFastYAMLGrammar(t *testing.T) {
	t.Parallel()
	n, seed := fastYAMLDocs(t)
	progress := os.Getenv("HOOKD_FASTYAML_DOCS") != ""
	fast, fastMutants, failed := 0, 0, 0
	for i := range n {
		g := newGrammarGen(seed + uint64(i))
		s := g.doc()
		m := g.mutate(s)
		for j, doc := range []string{s, m} {
			took, problem := fastYAMLProblem([]byte(doc))
			if took && j == 0 {
				fast++
			} else if took {
				fastMutants++
			}
			if problem == "" {
				continue
			}
			failed++
			short := shrinkYAML(doc)
			_, p := fastYAMLProblem([]byte(short))
			t.Errorf("seed %d (mutant %v): %s\ninput %q\nshrunk to %q: %s", seed+uint64(i), j == 1, problem, doc, short, p)
			if failed == 20 {
				t.Fatal("too many failures")
			}
		}
		if progress && (i+1)%200000 == 0 {
			fmt.Fprintf(os.Stderr, "%s: %d documents and as many mutants, %d and %d took the fast path\n", time.Now().UTC().Format(time.TimeOnly), i+1, fast, fastMutants)
		}
	}
	t.Logf("%d documents (seeds %d to %d), %d (%.1f%%) took the fast path; of as many mutants, %d", n, seed, seed+uint64(n)-1, fast, 100*float64(fast)/float64(max(n, 1)), fastMutants)
	if fast*10 < n*4 || fastMutants*10 < n {
		t.Errorf("only %d of %d generated documents and %d of as many mutants took the fast path; the generator strays too far from the subset", fast, n, fastMutants)
	}
}

// TestFastYAMLLoadsAsYAMLv3 loads every text of the repository that the
// fast path takes as a hook file twice: as it is, and with a document end
// marker ("...") after it, which sends it to yaml.v3 with the same tree.
// The hooks (but for the Version, a hash of the bytes) or the errors
// must be the same: what a file means does not depend on which parser
// read it.
func TestFastYAMLLoadsAsYAMLv3(t *testing.T) {
	t.Parallel()
	opts := Options{Root: t.TempDir(), DefaultName: "h"}
	compared := 0
	for name, data := range yamlCorpus(t) {
		if !bytes.HasSuffix(data, []byte("\n")) {
			continue // a line break would change a trailing | block
		}
		if _, ok := fastParse(data); !ok {
			continue // yaml.v3 reads it either way
		}
		slow := append(bytes.Clone(data), "...\n"...)
		if _, ok := fastParse(slow); ok {
			t.Fatalf("%s: fastParse took a document end marker", name)
		}
		h1, _, errs1 := parseHook(data, "h.yaml", opts)
		h2, _, errs2 := parseHook(slow, "h.yaml", opts)
		if e1, e2 := fmt.Sprint(errs1), fmt.Sprint(errs2); e1 != e2 {
			t.Errorf("%s: the fast path reports\n%s\nyaml.v3's\n%s", name, e1, e2)
			continue
		}
		if h1 != nil && h2 != nil {
			h1.Source.Version, h2.Source.Version = "", ""
		}
		if d := valueDiff("hook", reflect.ValueOf(h1), reflect.ValueOf(h2), map[[2]uintptr]bool{}); d != "" {
			t.Errorf("%s: the hook loaded by the fast path and by yaml.v3 differ at %s", name, d)
		}
		compared++
	}
	if compared < 100 {
		t.Errorf("only %d texts compared", compared)
	}
	t.Logf("%d texts loaded both ways", compared)
}

// valueDiff is reflect.DeepEqual that names the first difference, and
// takes two funcs as equal when both are set (a built step holds an HTTP
// client's CheckRedirect, say, which DeepEqual never finds equal).
func valueDiff(path string, a, b reflect.Value, seen map[[2]uintptr]bool) string {
	if a.IsValid() != b.IsValid() {
		return path + ": one is missing"
	}
	if !a.IsValid() {
		return ""
	}
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s: %s and %s", path, a.Type(), b.Type())
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func:
		if a.IsNil() != b.IsNil() {
			return path + ": one is nil"
		}
		if a.IsNil() {
			return ""
		}
	}
	switch a.Kind() {
	case reflect.Pointer:
		k := [2]uintptr{a.Pointer(), b.Pointer()}
		if seen[k] {
			return ""
		}
		seen[k] = true
		return valueDiff(path, a.Elem(), b.Elem(), seen)
	case reflect.Interface:
		return valueDiff(path, a.Elem(), b.Elem(), seen)
	case reflect.Struct:
		for i := range a.NumField() {
			if d := valueDiff(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i), seen); d != "" {
				return d
			}
		}
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: %d and %d elements", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if d := valueDiff(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i), seen); d != "" {
				return d
			}
		}
	case reflect.Map:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: %d and %d entries", path, a.Len(), b.Len())
		}
		it := a.MapRange()
		for it.Next() {
			if d := valueDiff(fmt.Sprintf("%s[%v]", path, it.Key()), it.Value(), b.MapIndex(it.Key()), seen); d != "" {
				return d
			}
		}
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		// Set on both sides: built from the same text.
	default:
		if x, y := fmt.Sprint(a), fmt.Sprint(b); x != y {
			return fmt.Sprintf("%s: %s and %s", path, x, y)
		}
	}
	return ""
}
