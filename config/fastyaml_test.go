package config

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hookd/hookd/internal/benchhooks"
	"gopkg.in/yaml.v3"
)

// yamlV3Top parses data as parseDoc does with yaml.v3: one document
// (a second one, or an error after the first, is an error) whose top
// node is returned.
func yamlV3Top(data []byte) (top *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml.v3 panicked: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("after the first document: %v", err)
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("no content")
	}
	return doc.Content[0], nil
}

// nodeDiff describes the first difference between two trees in the
// fields config reads (all but the comments), or returns "".
func nodeDiff(path string, got, want *yaml.Node) string {
	if got == nil || want == nil {
		if got != want {
			return fmt.Sprintf("%s: node %v, want %v", path, got, want)
		}
		return ""
	}
	type fields struct {
		Kind         yaml.Kind
		Style        yaml.Style
		Tag, Value   string
		Anchor       string
		Alias        *yaml.Node
		Line, Column int
		Len          int
	}
	g := fields{got.Kind, got.Style, got.Tag, got.Value, got.Anchor, got.Alias, got.Line, got.Column, len(got.Content)}
	w := fields{want.Kind, want.Style, want.Tag, want.Value, want.Anchor, want.Alias, want.Line, want.Column, len(want.Content)}
	if g != w {
		return fmt.Sprintf("%s:\n got %+v\nwant %+v", path, g, w)
	}
	for i := range got.Content {
		if d := nodeDiff(fmt.Sprintf("%s[%d]", path, i), got.Content[i], want.Content[i]); d != "" {
			return d
		}
	}
	return ""
}

// checkFastYAML checks the property (fastYAMLProblem): fastParse declines
// data, or gives yaml.v3's exact tree. It reports whether fastParse took
// it.
func checkFastYAML(t *testing.T, name string, data []byte) bool {
	t.Helper()
	took, problem := fastYAMLProblem(data)
	if problem != "" {
		t.Fatalf("%s: %s; input %q", name, problem, data)
	}
	return took
}

// yamlCorpus returns the YAML the repository holds, by name: hook files
// (hooks.d, every testdata tree), the benchmark's files, the yaml blocks
// of the README and docs, and the string literals of the Go tests that
// look like YAML (the hooks other packages' tests write).
// It is read once per test binary (the walk parses every Go test file of
// the repository, over a second under -race, and six tests ask for it);
// each caller gets its own copy, which it may change.
func yamlCorpus(t testing.TB) map[string][]byte {
	t.Helper()
	corpus.Do(func() { corpus.texts, corpus.err = readYAMLCorpus() })
	if corpus.err != nil {
		t.Fatal(corpus.err)
	}
	out := make(map[string][]byte, len(corpus.texts))
	for name, data := range corpus.texts {
		out[name] = bytes.Clone(data)
	}
	return out
}

// corpus holds what readYAMLCorpus read, for yamlCorpus.
var corpus struct {
	sync.Once
	texts map[string][]byte
	err   error
}

// readYAMLCorpus walks the repository for yamlCorpus.
func readYAMLCorpus() (map[string][]byte, error) {
	out := map[string][]byte{}
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // made and removed by another package's test while this walked (cmd/hookd's canary directories)
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		switch ext := filepath.Ext(path); {
		case ext == ".yaml" || ext == ".yml" || ext == ".json" && strings.Contains(path, "testdata"):
			data, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed since the walk listed it
			}
			if err != nil {
				return err
			}
			if ext == ".json" {
				data = bytes.ReplaceAll(data, []byte("\t"), []byte(" ")) // as parseDoc does
			}
			out[path] = data
		case ext == ".md":
			data, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed since the walk listed it
			}
			if err != nil {
				return err
			}
			for i, m := range yamlFence.FindAllSubmatch(data, -1) {
				out[fmt.Sprintf("%s#yaml%d", path, i)] = m[1]
			}
		case strings.HasSuffix(path, "_test.go"):
			lits, err := yamlLiterals(path)
			if err != nil {
				return err
			}
			for name, lit := range lits {
				out[name] = lit
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range 8 {
		out[fmt.Sprintf("benchhooks.HookFile(%d)", i)] = benchhooks.HookFile(i)
	}
	return out, nil
}

var yamlFence = regexp.MustCompile("(?ms)^```ya?ml\n(.*?)^```")

// yamlLiterals returns the string literals of a Go file that span lines
// and hold a "key:".
func yamlLiterals(path string) (map[string][]byte, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil || !strings.Contains(s, "\n") || !strings.Contains(s, ":") {
			return true
		}
		out[fmt.Sprintf("%s@%d", path, lit.ValuePos)] = []byte(s)
		return true
	})
	return out, nil
}

// TestFastYAMLMatchesYAMLv3 runs every YAML text of the repository
// through both parsers, and checks that the shipped examples and the
// benchmark's files take the fast path (so a loss of coverage shows).
func TestFastYAMLMatchesYAMLv3(t *testing.T) {
	t.Parallel()
	corpus := yamlCorpus(t)
	fast := 0
	for name, data := range corpus {
		took := checkFastYAML(t, name, data)
		if took {
			fast++
		}
		mustTake := strings.HasPrefix(name, "benchhooks.HookFile(") ||
			strings.HasPrefix(name, filepath.Join("..", "hooks.d")+string(filepath.Separator))
		if mustTake && !took {
			t.Errorf("%s: fastParse declined it; the shipped examples and the benchmark's files must take the fast path", name)
		}
	}
	t.Logf("%d of %d texts took the fast path", fast, len(corpus))
}

// fastYAMLSeeds are inputs at the edges of the subset.
var fastYAMLSeeds = []string{
	"a: b\n",
	"a: b",
	"a: b: c\n",
	"a: b:\n",
	"a:\n",
	"a:",
	"a:\nb: 1\n",
	"a: # c\n  b: 1\n",
	"a: # c\nb: 1\n",
	"key: [a, b,]\n",
	"key: [a, b]\n",
	"key: [a,b]\n",
	"key: [ a , b ]\n",
	"key: []\n",
	"key: {}\n",
	"key: [[a], [b, [c]]]\n",
	"key: {a: {b: c}}\n",
	"key: {a: [1, 2], b: 'x', c: \"y\"}\n",
	"key: {a: b, a: c}\n",
	"key: {a: }\n",
	"key: {a:b}\n",
	"key: {a}\n",
	"key: [a: b]\n",
	"key: [a:b]\n",
	"key: [-a, -]\n",
	"key: [a b, c  d]\n",
	"key: [a] # c\n",
	"key: [a]#c\n",
	"key: [a] b\n",
	"key: [a\n  ,b]\n",
	"{a: {b: c}}\n",
	"[a]\n",
	"- - a\n",
	"- a\n- b\n",
	"a:\n- a\n- b\nc: d\n",
	"a:\n  - a\n  - b\nc: d\n",
	"a:\n  -\n  - b\n",
	"a:\n-\nb: c\n",
	"a:\n  - - x\n    - y\n  - z\n",
	"a:\n  - k: v\n    l: w\n  - k: x\n",
	"a:\n  -   k: v\n      l: w\n",
	"a:\n  - k: v\n   l: w\n",
	"a:\n  - k:\n    - x\n",
	"a:\n  - k:\n      m: n\n",
	"a:\n  -\n    k: v\n",
	"a:\n  - k: v\n  l: w\n",
	"a: |\n  x\n\n",
	"a: |\n  x\n\nb: c\n",
	"a: |-\n  x\n\n",
	"a: |+\n  x\n\n",
	"a: |+\n  x\n\n\nb: 1\n",
	"a: |\n  x\n   y\n  z\n",
	"a: |\n  x\n \n  y\n",
	"a: |\n  x\n     \n  y\n",
	"a: |\n  x\n  # not a comment\n# a comment\nb: 1\n",
	"a: |\n\n  x\n",
	"a: |\n  x",
	"a: |\n",
	"a: |",
	"a: |\nb: c\n",
	"a: |2\n   x\n",
	"a: | # c\n  x\n",
	"a: |#c\n  x\n",
	"a: >\n  x\n  y\n",
	"a: |\n    x\n  y\n",
	"a: |\n    x\n  # c\n    y\n",
	"- |\n x\n",
	"a:\n- |\n x\n",
	"a:\n  - |\n   x\n",
	"a:\n  - |\n  x\n",
	"a: b  \nc: d \t\n",
	"a: b   \nc: d  \n",
	"a: 'x # y'\n",
	"a: \"x # y\"\n",
	"a: x # y\n",
	"a: x# y\n",
	"a: x #y: z\n",
	"a:b\n",
	"a:b: c\n",
	"-a: b\n",
	"a: -a\n",
	"- -a\n",
	"a: - b\n",
	"a: -\n",
	"a: \"a\\\"b\"\n",
	"a: \"a\\/b\"\n",
	"a: \"a\\tb\\n\\\\\"\n",
	"a: \"a\\x41\"\n",
	"a: \"a\\\nb\"\n",
	"a: 'it''s'\n",
	"a: ''\n",
	"a: \"\"\n",
	"'a b': c\n",
	"\"a\": c\n",
	"\"a\":c\n",
	"'a' : c\n",
	"a : c\n",
	"a b: c d\n",
	"a:b: c\n",
	"http://x: y\n",
	"a: http://x:80/y\n",
	"a: ~\n",
	"a: null\n",
	"a: Null\n",
	"a: yes\n",
	"a: on\n",
	"a: true\n",
	"a: 0x1F\n",
	"a: 0o17\n",
	"a: 017\n",
	"a: 1e3\n",
	"a: 1_000\n",
	"a: .inf\n",
	"a: -.inf\n",
	"a: .nan\n",
	"a: 2001-12-14\n",
	"a: 2001-12-14 21:59:43.10 -5\n",
	"a: <<\n",
	"<<: {a: b}\n",
	"1: a\n2: b\n",
	"true: a\n",
	"null: a\n",
	"~: a\n",
	"a: &x b\nc: *x\n",
	"a: !!str 1\n",
	"? a\n: b\n",
	"%YAML 1.1\n---\na: b\n",
	"---\na: b\n",
	"a: b\n---\nc: d\n",
	"a: b\n...\n",
	"a: @b\n",
	"a: `b\n",
	"a: b\nb: c\na: d\n",
	"a: b\n  c\n",
	"a: b\n\n  c\n",
	"a: b\n  # c\n",
	"a: b\n  # c\n  d\n",
	"a: 'b\n  c'\n",
	"a:\n  b\n",
	"a:\n  'b'\n",
	"a:\n  [b]\n",
	"  a: b\n  c: d\n",
	"a: b\n c: d\n",
	"a:\n  b: c\n d: e\n",
	"# only a comment\n",
	"",
	"\n",
	"a: b\r\n",
	"a:\tb\n",
	"\ufeffa: b\n",
	"a: caf\u00e9\n",
	"a: b\x00\n",
	"a: caf\u00e9 \u2014 na\u00efve\n",
	"\u00e9: x\n",
	"\u00e9:\n",
	"\u00e9:\nb: 1\n",
	"\u00e9\u00e9: [\u00e9, b, {\u00fc: \u00f6}]\n",
	"a:\n  - \u00e9: b\n    c: d\n",
	"a: '\u00e9' # \u00fc \u2014 x\n",
	"# \u2014 comment \u2026\na: b # \u00e9\n",
	"a: |\n  \u00e9\n  \u65e5\u672c\n",
	"a: \U0001F600 x\n",
	"a: [\U0001F600, b]\n",
	"a: \ufffd\n",
	"a: \ufffe\n",
	"a: b\u2028c\n",
	"a: b\u2029c: d\n",
	"a: b\u0085c\n",
	"a: b\u0085\n",
	"a: \ufeffb\n",
	"a: b\n\ufeffc: d\n",
	"a: \u00a0b\n",
	"a: \u0080\n",
	"a: \xff\n",
	"a: \xc3\n",
	"a: \xc0\x80\n",
	"a: \xed\xa0\x80\n",
	"a: \xf4\x90\x80\x80\n",
	"a: x,y\n",
	"a: x[0]\n",
	"a: {x}y\n",
	"a: ?x\n",
	"a: :x\n",
	"a: x?\n",
	"a: [x?]\n",
	"a: [x#]\n",
	"a: [\"x\":y]\n",
	"a: [\"x\": y]\n",
	"a: {\"x\":y}\n",
	"a: {'x': y}\n",
	"a: \"x\"y\n",
	"a: 'x' # c\n",
	"a: 'x'# c\n",
	"- a\n",
	"a\n",
	"a: b\n- c\n",
	"a:\n  - b\n c: d\n",
	"a:\n  b:\n    c:\n      d: e\n",
	"a: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[x]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
	"a: " + strings.Repeat("x", 1100) + "\n",
	strings.Repeat("x", 1100) + ": a\n",
	"a:\n" + strings.Repeat("  ", 1) + "- " + strings.Repeat("- ", 60) + "x\n",
	manyKeys("k%d: v\n", 3000, ""),
	manyKeys("k%d: v\n", 3000, "k17: w\n"),
	manyKeys("k%d: v\n", 3000, "k2999: w\n"),
	"a: {" + manyKeys("\u00e9%d: \u00fc, ", 3000, "") + "b: c}\n",
	"a: {" + manyKeys("k%d: v, ", 3000, "k1: w, ") + "b: c}\n",
	"a: [" + manyKeys("\u00e9%d, ", 3000, "") + "\u00fc]\n",
}

// manyKeys repeats format with 0, 1, ... n-1, then adds last.
func manyKeys(format string, n int, last string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, format, i)
	}
	return b.String() + last
}

// FuzzFastYAML checks that fastParse either declines an input or gives
// exactly yaml.v3's tree; if yaml.v3 refuses an input, fastParse must
// decline it.
func FuzzFastYAML(f *testing.F) {
	for _, s := range fastYAMLSeeds {
		f.Add([]byte(s))
	}
	for _, data := range yamlCorpus(f) {
		f.Add(data)
	}
	for i := range 64 { // deep, valid documents for the mutator to start from
		f.Add([]byte(newGrammarGen(uint64(i)).doc()))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastYAML(t, "fuzz", data)
	})
}

// TestFastYAMLDeclines checks inputs that yaml.v3 parses but fastParse
// must leave to it: config reports repeated keys and merges itself, and
// the rest is outside the subset.
func TestFastYAMLDeclines(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"a: 1\na: 2\n",
		"a: {b: 1, b: 2}\n",
		manyKeys("k%d: v\n", 3000, "k17: w\n"),
		manyKeys("k%d: v\n", 3000, "k2999: w\n"),
		"a: {" + manyKeys("k%d: v, ", 3000, "k1: w, ") + "b: c}\n",
		"<<: {a: b}\n",
		"a: &x b\nc: *x\n",
		"a: !!str 1\n",
		"a: >\n  x\n",
		"a: b\n  c\n",
		"---\na: b\n",
		"- a\n",
		"a: \"\\x41\"\n",
	} {
		if _, err := yamlV3Top([]byte(s)); err != nil {
			t.Fatalf("%.40q: yaml.v3 refuses it (%v): pick another example", s, err)
		}
		if _, ok := fastParse([]byte(s)); ok {
			t.Errorf("%.40q: fastParse took it", s)
		}
	}
}

// BenchmarkParseHookYAML parses the 10,000 files of bench's BenchmarkLoadHookFiles
// in turn with fastParse, with one parser reused (as a loader's worker
// does) and with yaml.v3 as parseDoc did before it.
//
//	go test -run '^$' -bench 'BenchmarkParseHookYAML' -benchmem ./config/
func BenchmarkParseHookYAML(b *testing.B) {
	const n = 10_000
	var files [][]byte
	for i := range n {
		files = append(files, benchhooks.HookFile(i))
	}
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, ok := fastParse(files[i%n]); !ok {
				b.Fatal("declined")
			}
			i++
		}
	})
	b.Run("fast-reused", func(b *testing.B) { // as a loader's worker parses
		b.ReportAllocs()
		var p fastYAML
		i := 0
		for b.Loop() {
			if _, ok := p.parse(files[i%n]); !ok {
				b.Fatal("declined")
			}
			i++
		}
	})
	b.Run("yaml.v3", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := yamlV3Top(files[i%n]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// TestFastYAMLConcurrent parses in parallel, as the loader does, so that
// the race detector sees the tag memo shared by the parses.
func TestFastYAMLConcurrent(t *testing.T) {
	t.Parallel()
	var files [][]byte
	for i := range 64 {
		files = append(files, benchhooks.HookFile(i))
	}
	files = append(files, []byte("a: 1\nb: 0x1F\nc: 2001-12-14\nd: .inf\ne: ~\nf: yes\ng: 30s\n"))
	want := make([]*yaml.Node, len(files))
	for i, f := range files {
		var err error
		if want[i], err = yamlV3Top(f); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for k := range 200 {
				i := (g*7 + k) % len(files)
				got, ok := fastParse(files[i])
				if !ok {
					t.Errorf("file %d: declined", i)
					return
				}
				if d := nodeDiff("top", got, want[i]); d != "" {
					t.Errorf("file %d: %s", i, d)
					return
				}
			}
		})
	}
	wg.Wait()
}
