package config

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/hookd/hookd/internal/benchhooks"
	"gopkg.in/yaml.v3"
)

// TestFastYAMLReuse parses files of every size in turn with one parser,
// as a loader's worker does, so that each parse takes nodes and Content
// slices from arrays the previous parses filled: every tree must still be
// yaml.v3's, with nothing left over from the file before.
func TestFastYAMLReuse(t *testing.T) {
	t.Parallel()
	corpus := yamlCorpus(t)
	names := make([]string, 0, len(corpus))
	for name := range corpus {
		names = append(names, name)
	}
	slices.Sort(names)
	var files [][]byte
	for _, name := range names {
		files = append(files, corpus[name])
	}
	for i := range 8 {
		files = append(files, benchhooks.HookFile(i))
	}
	// Small after big and big after small.
	files = append(files, []byte("a: [1, {b: c}]\n"), benchhooks.HookFile(9), []byte("x: |\n  y\n"))
	files = append(files, slices.Clone(files)...)
	slices.Reverse(files[len(files)/2:])

	var p fastYAML
	taken := 0
	for i, data := range files {
		got, ok := p.parse(data)
		if !ok {
			continue
		}
		taken++
		want, err := yamlV3Top(data)
		if err != nil {
			t.Fatalf("file %d: fastParse took %q, which yaml.v3 refuses: %v", i, data, err)
		}
		if d := nodeDiff("top", got, want); d != "" {
			t.Fatalf("file %d, parsed after %d others: %s", i, i, d)
		}
	}
	if taken < 20 {
		t.Fatalf("fastParse took only %d of %d files", taken, len(files))
	}
}

// keptNode keeps the node it is decoded from, as a type implementing
// yaml.Unmarshaler may.
type keptNode struct{ n *yaml.Node }

func (k *keptNode) UnmarshalYAML(n *yaml.Node) error {
	k.n = n
	return nil
}

// TestDecodedNodeOutlivesParse decodes a file into a yaml.Node field and
// a yaml.Unmarshaler that keeps its node, then parses another file with
// the same parser, which reuses the first tree's nodes: what was decoded
// must still be the first file's.
func TestDecodedNodeOutlivesParse(t *testing.T) {
	t.Parallel()
	first := []byte("raw: {a: [1, 2], b: x}\nkept:\n  - c: d\n  - e\n")
	var p fastYAML
	top, ok := p.parse(first)
	if !ok {
		t.Fatal("fastParse declined the first file")
	}
	var v struct {
		Raw  yaml.Node `yaml:"raw"`
		Kept keptNode  `yaml:"kept"`
	}
	if err := NewDecoder("first.yaml", "", top).Decode(&v); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.parse([]byte("q: [r, s, t, u, v, w]\nz: {y: x, w: v}\nlist:\n  - 1\n  - 2\n  - 3\n")); !ok {
		t.Fatal("fastParse declined the second file")
	}
	want, err := yamlV3Top(first)
	if err != nil {
		t.Fatal(err)
	}
	if d := nodeDiff("raw", &v.Raw, want.Content[1]); d != "" {
		t.Errorf("the yaml.Node field changed with the next parse: %s", d)
	}
	if v.Kept.n == nil {
		t.Fatal("UnmarshalYAML was not called")
	}
	if d := nodeDiff("kept", v.Kept.n, want.Content[3]); d != "" {
		t.Errorf("the node kept by UnmarshalYAML changed with the next parse: %s", d)
	}
}

// TestUnprintable8 holds the eight-byte test of fastParse's first scan to
// the byte-by-byte one, with every byte value at every position among
// printable neighbours, and with pairs of byte values that may borrow
// into each other.
func TestUnprintable8(t *testing.T) {
	t.Parallel()
	bad := func(c byte) bool { return c < 0x20 && c != '\n' || c >= 0x7f }
	check := func(b [8]byte) {
		want := false
		for _, c := range b {
			want = want || bad(c)
		}
		if got := unprintable8(binary.LittleEndian.Uint64(b[:])); got != want {
			t.Fatalf("unprintable8(%q) = %v, want %v", b[:], got, want)
		}
	}
	for pos := range 8 {
		for c := range 256 {
			b := [8]byte{'a', ' ', '~', '\n', 'z', '!', '}', 'M'}
			b[pos] = byte(c)
			check(b)
		}
	}
	for c := range 256 {
		for d := range 256 {
			check([8]byte{byte(c), byte(d), ' ', '\n', '~', '~', byte(d), byte(c)})
			check([8]byte{'\n', byte(c), byte(d), '\n', byte(d), '\n', byte(c), '\n'})
		}
	}
}

// TestPairsOfFastTree checks the shortcut pairs takes for a tree from
// fastParse (no key to find twice, no merge): on every mapping of every
// corpus file fastParse takes, it gives what the full search gives, and
// reports nothing.
func TestPairsOfFastTree(t *testing.T) {
	t.Parallel()
	var walk func(n *yaml.Node, f func(*yaml.Node))
	walk = func(n *yaml.Node, f func(*yaml.Node)) {
		if n.Kind == yaml.MappingNode {
			f(n)
		}
		for _, c := range n.Content {
			walk(c, f)
		}
	}
	maps := 0
	for name, data := range yamlCorpus(t) {
		sc := new(scratch)
		sc.reset()
		s := sc.newState(name)
		top := s.parseDoc(data, true)
		if top == nil || !sc.uniqueKeys {
			continue
		}
		walk(top, func(m *yaml.Node) {
			maps++
			fast := s.pairs(m, "p")
			sc.uniqueKeys = false
			full := s.pairs(m, "p")
			sc.uniqueKeys = true
			if !slices.Equal(fast, full) {
				t.Errorf("%s: mapping at line %d: pairs %v, the full search %v", name, m.Line, fast, full)
			}
		})
		if s.count() > 0 {
			t.Errorf("%s: %v", name, s.result())
		}
	}
	if maps < 50 {
		t.Fatalf("only %d mappings checked", maps)
	}
}
