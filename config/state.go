package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Limits that keep a hostile file from exhausting the loader.
const (
	maxFileSize = 4 << 20 // bytes
	maxNodes    = 100_000 // nodes visited per file, counting each alias expansion
	maxDepth    = 64      // nesting
	maxErrors   = 50      // errors reported per file
)

// scratch is memory that a loader's worker keeps from file to file for
// what decoding a file needs only while it decodes it: the parser's
// nodes, and the key-value pairs of its mappings. Nothing loaded refers
// to it.
type scratch struct {
	fast      fastYAML
	pairArena []pair // pairs takes from its spare capacity
	states    slab[state]
	fields    slab[fields]
	decoders  slab[Decoder]
	segs      slab[pathSeg]

	// uniqueKeys says that the file's tree is fastParse's: its
	// mappings' keys are scalars, none repeated, no merge key (<<).
	uniqueKeys bool
}

// reset makes sc's memory ready for the next file and returns sc.
func (sc *scratch) reset() *scratch {
	if sc != nil {
		clear(sc.pairArena)
		sc.pairArena = sc.pairArena[:0]
		sc.states.reset()
		sc.fields.reset()
		sc.decoders.reset()
		sc.segs.reset()
		sc.uniqueKeys = false
	}
	return sc
}

// newState returns a new state for file, from sc when sc is set.
func (sc *scratch) newState(file string) *state {
	if sc == nil {
		return newState(file)
	}
	s := &sc.states.take(1, 4)[0]
	s.file, s.ownBudget, s.sc = file, maxNodes, sc
	s.budget, s.active = &s.ownBudget, s.activeBuf[:0]
	return s
}

// newFields returns a zero fields, from sc when sc is set.
func (sc *scratch) newFields() *fields {
	if sc == nil {
		return new(fields)
	}
	return &sc.fields.take(1, 16)[0]
}

// newDecoder returns a zero Decoder, from sc when sc is set.
func (sc *scratch) newDecoder() *Decoder {
	if sc == nil {
		return new(Decoder)
	}
	return &sc.decoders.take(1, 4)[0]
}

// pathSegs returns an empty slice with room for n path segments, from
// sc when sc is set.
func (sc *scratch) pathSegs(n int) []pathSeg {
	if sc == nil {
		return make([]pathSeg, 0, n)
	}
	return sc.segs.take(n, 4*n)[:0]
}

// pairs returns an empty slice with room for n pairs, from sc's arena
// when sc is set. Appending past n allocates.
func (sc *scratch) pairs(n int) []pair {
	if sc == nil {
		return make([]pair, 0, n)
	}
	a := sc.pairArena
	if cap(a)-len(a) < n {
		// A new array; the slices taken from the old one stay valid.
		a = make([]pair, 0, max(n, 2*cap(a), 64))
	}
	l := len(a)
	sc.pairArena = a[:l+n]
	return a[l : l : l+n]
}

// mapping returns an empty mapping node at n's position with room for
// the key-value pairs of n, from sc's slabs when sc is set.
func (sc *scratch) mapping(n *yaml.Node) *yaml.Node {
	if sc == nil {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column,
			Content: make([]*yaml.Node, 0, len(n.Content))}
	}
	m := &sc.fast.nodes.take(1, 16)[0]
	m.Kind, m.Tag, m.Line, m.Column = yaml.MappingNode, "!!map", n.Line, n.Column
	m.Content = sc.fast.ptrs.take(len(n.Content), 64)[:0]
	return m
}

// state collects the errors of one file while its nodes are decoded.
type state struct {
	file     string
	errs     Errors
	more     int          // errors past maxErrors, not kept
	budget   *int         // nodes left to visit, shared by the Decoders of a file
	active   []*yaml.Node // nodes being decoded (at most maxDepth), to stop alias cycles
	overflow bool

	ownBudget int           // what budget points to, but in a Decoder's state
	activeBuf [8]*yaml.Node // active's first array: most files nest less

	// sc, when set, is memory kept from the loader's previous file for
	// what decoding needs only while it decodes this one.
	sc *scratch

	// extra lists keys that the mapping at extraPath also accepts,
	// besides the fields of the struct decoded there (suggestions only).
	extra     []string
	extraPath string

	// cmds are the command: fields of the hook's steps that start
	// processes, for the warnings about them (Options.Warn).
	cmds []stepCommand
}

func newState(file string) *state {
	s := &state{file: file, ownBudget: maxNodes}
	s.budget, s.active = &s.ownBudget, s.activeBuf[:0]
	return s
}

func (s *state) add(line int, path, msg string) {
	s.addError(&Error{File: s.file, Line: line, Field: path, Msg: msg})
}

func (s *state) addError(e *Error) {
	if len(s.errs) >= maxErrors {
		s.more++
		return
	}
	s.errs = append(s.errs, e)
}

// count is the number of errors found so far, kept or not.
func (s *state) count() int { return len(s.errs) + s.more }

// result returns the errors found, sorted by line, without repeats, and
// saying how many more there were past maxErrors.
func (s *state) result() Errors {
	if len(s.errs) == 0 {
		return nil
	}
	l := s.errs
	sort.SliceStable(l, func(i, j int) bool { return l[i].Line < l[j].Line })
	var out Errors
	seen := map[string]bool{}
	for _, e := range l {
		if text := e.Error(); !seen[text] {
			seen[text] = true
			out = append(out, e)
		}
	}
	if s.more > 0 {
		out = append(out, &Error{File: s.file, Msg: fmt.Sprintf("%d more errors not shown", s.more)})
	}
	return out
}

func (s *state) errorf(n *yaml.Node, path, format string, args ...any) {
	s.add(n.Line, path, fmt.Sprintf(format, args...))
}

// enter accounts for one more node at one more level of nesting. It
// returns false, after reporting why, when n contains itself (through an
// alias) or a limit is passed; the caller then skips n and must not call
// leave.
func (s *state) enter(n *yaml.Node, path string) bool {
	if r := s.tryEnter(n); r != entered {
		s.refuse(n, path, r)
		return false
	}
	return true
}

// An enterResult says whether tryEnter entered a node, or why not.
type enterResult int

const (
	entered enterResult = iota
	enterCycle
	enterOverflow
)

// tryEnter is enter without the report, for callers that build the path
// of n only when there is something to report: it hands the report to
// refuse.
func (s *state) tryEnter(n *yaml.Node) enterResult {
	*s.budget--
	if slices.Contains(s.active, n) {
		return enterCycle
	}
	if *s.budget < 0 || len(s.active) >= maxDepth {
		return enterOverflow
	}
	s.active = append(s.active, n)
	return entered
}

// refuse reports why tryEnter did not enter n, at path.
func (s *state) refuse(n *yaml.Node, path string, r enterResult) {
	switch r {
	case enterCycle:
		s.errorf(n, path, "an alias refers to a value that contains it")
	case enterOverflow:
		if !s.overflow {
			s.overflow = true
			if len(path) > 80 {
				path = path[:80] + "..."
			}
			s.errorf(n, path, "nested too deeply or expands to too many values")
		}
	}
}

// leave ends what enter(n) began. Nodes are left in the reverse order of
// entering, so n is found at the end at once.
func (s *state) leave(n *yaml.Node) {
	for i := len(s.active) - 1; i >= 0; i-- {
		if s.active[i] == n {
			s.active = slices.Delete(s.active, i, i+1)
			return
		}
	}
}

// join appends key to a field path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is absent or an explicit null.
func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" || n.Kind == yaml.AliasNode
}

// describe names what a node holds, for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		switch n.ShortTag() {
		case "!!str":
			return "string " + strconv.Quote(v)
		case "!!int":
			return "integer " + v
		case "!!float":
			return "number " + v
		case "!!bool":
			return "boolean " + v
		case "!!null":
			return "null"
		case "!!timestamp":
			return "timestamp " + v
		}
		return n.ShortTag() + " " + strconv.Quote(v)
	}
	return "nothing"
}

// pair is one key of a mapping with its value.
type pair struct {
	key  string
	k, v *yaml.Node
}

// pairs lists the keys of mapping n, with YAML merge keys (<<) applied:
// explicit keys win over merged ones, earlier merges over later ones. A
// key given twice or a key that is not a scalar is reported.
func (s *state) pairs(n *yaml.Node, path string) []pair {
	out := s.sc.pairs(len(n.Content) / 2)
	if s.sc != nil && s.sc.uniqueKeys {
		// Nothing to find: every key is a scalar, taken once.
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			out = append(out, pair{k.Value, k, n.Content[i+1]})
		}
		return out
	}
	var merges []pair
	// seen finds a key already taken: by a search of out while it is
	// short (most mappings are), by a map past that.
	var index map[string]*yaml.Node
	seen := func(key string) (*yaml.Node, bool) {
		if index == nil && len(out) > 16 {
			index = make(map[string]*yaml.Node, 2*len(out))
			for _, p := range out {
				index[p.key] = p.k
			}
		}
		if index != nil {
			k, ok := index[key]
			return k, ok
		}
		for _, p := range out {
			if p.key == key {
				return p.k, true
			}
		}
		return nil, false
	}
	take := func(p pair) {
		out = append(out, p)
		if index != nil {
			index[p.key] = p.k
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			s.errorf(n.Content[i], path, "mapping keys must be strings")
			continue
		}
		if k.ShortTag() == "!!merge" {
			merges = append(merges, pair{"<<", k, v})
			continue
		}
		if first, dup := seen(k.Value); dup {
			s.errorf(k, join(path, k.Value), "duplicate key (first at line %d)", first.Line)
			continue
		}
		take(pair{k.Value, k, v})
	}
	for _, mp := range merges {
		m := resolve(mp.v)
		var srcs []*yaml.Node
		switch {
		case m != nil && m.Kind == yaml.MappingNode:
			srcs = []*yaml.Node{m}
		case m != nil && m.Kind == yaml.SequenceNode:
			srcs = m.Content
		}
		for _, src := range srcs {
			src = resolve(src)
			if src == nil || src.Kind != yaml.MappingNode {
				s.errorf(mp.k, path, "a merge (<<) needs a mapping or a list of mappings")
				continue
			}
			if !s.enter(src, path) {
				continue
			}
			for _, p := range s.pairs(src, path) {
				if _, dup := seen(p.key); !dup {
					take(p)
				}
			}
			s.leave(src)
		}
		if len(srcs) == 0 {
			s.errorf(mp.k, path, "a merge (<<) needs a mapping or a list of mappings")
		}
	}
	return out
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseDoc parses data as one YAML (or JSON) document and returns its top
// node, which is a mapping, or nil after reporting why not. An empty
// document is an error unless allowEmpty is set.
func (s *state) parseDoc(data []byte, allowEmpty bool) *yaml.Node {
	if strings.HasSuffix(s.file, ".json") {
		// JSON allows tabs where YAML does not; outside strings (where
		// raw tabs are invalid JSON anyway) they are only whitespace.
		data = bytes.ReplaceAll(data, []byte("\t"), []byte(" "))
	}
	fast := new(fastYAML)
	if s.sc != nil {
		fast = &s.sc.fast
	}
	if top, ok := fast.parse(data); ok {
		if s.sc != nil {
			s.sc.uniqueKeys = true
		}
		return top // the subset hook files use; yaml.v3's tree, faster
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := s.yamlDecode(dec, &doc); err != nil {
		if !errors.Is(err, io.EOF) {
			s.syntaxError(err, data)
		} else if !allowEmpty {
			s.add(1, "", "file is empty")
		}
		return nil
	}
	var next yaml.Node
	switch err := s.yamlDecode(dec, &next); {
	case err == nil:
		s.add(next.Line, "", "a file holds one YAML document; found a second one")
		return nil
	case !errors.Is(err, io.EOF):
		s.syntaxError(err, data)
		return nil
	}
	var top *yaml.Node
	if len(doc.Content) > 0 {
		top = resolve(doc.Content[0])
	}
	if isNull(top) {
		if !allowEmpty {
			s.add(1, "", "file is empty")
		}
		return nil
	}
	if top.Kind != yaml.MappingNode {
		s.errorf(top, "", "the top level must be a mapping of field: value, got %s", describe(top))
		return nil
	}
	return top
}

// yamlDecode runs the YAML parser, turning a panic inside it into an error.
func (s *state) yamlDecode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return dec.Decode(n)
}

// syntaxError reports the parser's err about data. A tab that indents a
// line is named as the cause: the parser's words for it ("found character
// that cannot start any token", "found a tab character that violates
// indentation") do not say so, or name the line above it.
func (s *state) syntaxError(err error, data []byte) {
	msg := err.Error()
	line := 1 // the parser did not say; point an editor at the top
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	switch {
	case strings.Contains(msg, "cannot start any token") && tabIndented(data, line):
		msg += tabHint
	case strings.Contains(msg, "tab character that violates indentation"):
		// The parser names the line before the tab's as often as the
		// tab's own.
		if n := tabIndentedFrom(data, line); n > 0 {
			line = n
		}
		msg += tabHint
	case strings.Contains(msg, "mapping values are not allowed"):
		if colonInValue(textLine(data, line)) {
			msg += ` (a value with ": " in it must be quoted: command: "echo a: b")`
		} else {
			msg += " (this line is indented deeper than a field of the mapping above it)"
		}
	case strings.Contains(msg, "did not find expected key"), strings.Contains(msg, "did not find expected '-' indicator"):
		// The parser names the line its block began on; the culprit is the
		// first line after it indented unlike the block's lines.
		if n := misindented(data, line); n > 0 {
			line = n
			msg += " (this line is indented unlike the lines above it at its level: line them up with spaces)"
		}
	case strings.Contains(msg, "could not find expected ':'"):
		msg += ` (a line that is neither "field: value" nor a list item: a text that goes on over lines must be indented under its field, or written with | )`
	case strings.Contains(msg, "found unexpected end of stream"):
		msg += " (a quote or bracket opened above is never closed)"
	}
	s.add(line, "", "syntax error: "+msg)
}

// textLine returns line n (from 1) of data.
func textLine(data []byte, n int) string {
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return lines[n-1]
}

// colonInValue reports whether line, a "field: value" or "- field:
// value", has a second ": " (or ends in ":") in its unquoted value.
func colonInValue(line string) bool {
	t := strings.TrimLeft(line, " ")
	t = strings.TrimPrefix(t, "- ")
	_, v, ok := strings.Cut(t, ": ")
	if !ok {
		return false
	}
	v = strings.TrimSpace(v)
	if v == "" || strings.ContainsAny(v[:1], `"'|>{[`) {
		return false
	}
	return strings.Contains(v, ": ") || strings.HasSuffix(v, ":")
}

// indentOf is the number of spaces line starts with, -1 for a line that
// is blank or a comment.
func indentOf(line string) int {
	t := strings.TrimLeft(line, " ")
	if t == "" || strings.HasPrefix(t, "#") {
		return -1
	}
	return len(line) - len(t)
}

// misindented finds, after line from (from 1), the first line indented
// to no level open above it — shallower than the lines of its block but
// deeper than the field that holds them — or at the level of a list's
// dashes without a dash. 0 when none is.
func misindented(data []byte, from int) int {
	var levels []int // the indentations open at this line, outermost first
	dashes := map[int]bool{}
	for i, line := range strings.Split(string(data), "\n") {
		ind := indentOf(line)
		if ind < 0 {
			continue
		}
		dash := strings.HasPrefix(line[ind:], "- ")
		popped := false
		for len(levels) > 0 && levels[len(levels)-1] > ind {
			levels, popped = levels[:len(levels)-1], true
		}
		top := -1
		if len(levels) > 0 {
			top = levels[len(levels)-1]
		}
		bad := popped && top != ind || top == ind && dashes[ind] && !dash
		if bad && i+1 > from {
			return i + 1
		}
		if top != ind {
			levels = append(levels, ind)
			dashes[ind] = dash
		}
	}
	return 0
}

// tabHint is what a syntax error caused by a tab that indents a line
// adds.
const tabHint = " (a tab indents this line: YAML indents with spaces only)"

// tabIndentedFrom is the first line from line from (from 1) on that a
// tab indents (tabIndented), 0 when none is.
func tabIndentedFrom(data []byte, from int) int {
	lines := strings.Split(string(data), "\n")
	for n := max(from, 1); n <= len(lines); n++ {
		if t := strings.TrimLeft(lines[n-1], " \t"); strings.Contains(lines[n-1][:len(lines[n-1])-len(t)], "\t") {
			return n
		}
	}
	return 0
}

// tabIndented reports whether line n (from 1) of data has a tab in its
// indentation.
func tabIndented(data []byte, n int) bool {
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(data, '\n')
		if j < 0 {
			return false
		}
		data = data[j+1:]
	}
	indent := bytes.TrimLeft(data, " \t")
	return bytes.IndexByte(data[:len(data)-len(indent)], '\t') >= 0
}

// readAll reads a whole file from r, refusing absurd sizes.
func readAll(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("file is larger than %d MiB", maxFileSize>>20)
	}
	return data, nil
}
