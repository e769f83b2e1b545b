package config

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// fastParse parses the subset of YAML that hook files use and returns
// the top-level mapping as exactly the *yaml.Node tree that yaml.v3's
// Decoder gives (every field but the comments, which config does not
// read). On anything outside the subset it returns ok false and the
// caller parses with yaml.v3, so an unusual file, and every syntax error
// and its message, is still yaml.v3's: this parser only decides what it
// is sure of. FuzzFastYAML and TestFastYAMLMatchesYAMLv3 hold it to that.
//
// The subset: printable UTF-8 and newlines (no tab, CR, BOM, NEL, LS or
// PS; columns count characters, as yaml.v3's do); comments;
// a block mapping at the top; block mappings whose keys are
// plain or quoted one-line scalars, not repeated; block sequences,
// compact ("- key: v", "- - a") and indentless ("key:\n- a"); one-line
// plain, single- and double-quoted scalars (the escapes of ASCII
// characters); literal block scalars (|, |-, |+) without an indentation
// indicator or leading blank lines; one-line flow sequences and mappings,
// nested. Declined: anchors, aliases, tags, "? " keys, directives,
// document markers, folded scalars, multi-line plain, quoted or flow
// values, a value on the line after its key that is not a block
// collection, merge keys (<<), and any ambiguity of ':' or '#'.
//
// data is not referenced after fastParse returns: it is copied once into
// a string, and the Values of plain and quoted scalars are slices of it.
func fastParse(data []byte) (top *yaml.Node, ok bool) {
	var p fastYAML
	return p.parse(data)
}

// parse is fastParse with p's slabs: the nodes of the tree are taken from
// arrays that p keeps, and the next parse with p clears and reuses them,
// so a loader of many files allocates its nodes once. The caller must
// hold no node of a tree (nor a copy of one: its Content) past the next
// parse with p, or drop p's slabs (p.drop) before it.
func (p *fastYAML) parse(data []byte) (top *yaml.Node, ok bool) {
	wide := false
	for i := 0; i < len(data); {
		// Eight bytes at a time while each is a line break or within
		// ' '..'~'.
		if i+8 <= len(data) && !unprintable8(binary.LittleEndian.Uint64(data[i:])) {
			i += 8
			continue
		}
		if c := data[i]; c < 0x80 {
			if c == 0x7f || c < 0x20 && c != '\n' {
				return nil, false
			}
			i++
			continue
		}
		// yaml.v3 takes well-formed UTF-8 of printable characters; NEL,
		// LS and PS break lines and a BOM is skipped at a line's start.
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 || r < 0xa0 || r == 0x2028 || r == 0x2029 || r == 0xfeff || r > 0xfffd && r < 0x10000 {
			return nil, false
		}
		wide = true
		i += size
	}
	p.nodes.reset()
	p.ptrs.reset()
	clear(p.stack)
	*p = fastYAML{src: string(data), lineNo: 1, wide: wide,
		nodes: p.nodes, ptrs: p.ptrs, stack: p.stack[:0], buf: p.buf[:0]}
	// A key and a value a line, an item a comma: one slab for most files.
	p.chunk = 2*bytes.Count(data, newline) + bytes.Count(data, comma) + 8
	p.nextLine()
	if p.ind < 0 || p.seqEntry() {
		return nil, false
	}
	top, ok = p.mapping(p.ind, nil)
	if !ok || p.ind != -1 {
		return nil, false
	}
	return top, true
}

var newline, comma = []byte("\n"), []byte(",")

// unprintable8 reports whether one of the eight bytes of w is neither a
// line break nor within ' '..'~': below 0x20 but '\n', 0x7f, or 0x80 and
// above. Each byte's test is its own (no carry crosses bytes): the high
// bit of (b&0x7f)+k is set when b&0x7f >= 0x80-k.
func unprintable8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	low := w &^ highs
	control := ^(low + (0x80-0x20)*ones) // high bit: b&0x7f < 0x20
	nl := low ^ ('\n' * ones)            // zero where b&0x7f is '\n'
	notNL := nl + 0x7f*ones              // high bit: b&0x7f != '\n'
	del := low + ones                    // high bit: b&0x7f == 0x7f
	return (w|control&notNL|del)&highs != 0
}

const (
	fastMaxDepth  = 48   // nesting of collections, block and flow
	fastMaxKeyLen = 1000 // yaml.v3 refuses simple keys over 1024 bytes
)

// fastYAML is the state of one fastParse. Block parsing works line by
// line: after a block value, pos is at the first non-space byte of the
// next line that is neither blank nor a comment, and ind is its
// indentation (-1 at the end of the input).
type fastYAML struct {
	src       string
	pos       int // offset of the next byte to read
	lineNo    int // 1-based line of pos
	lineStart int // offset of the start of pos's line
	ind       int
	depth     int
	wide      bool // src has characters of more than one byte

	colLine, colPos, colRunes int // col's last answer when wide

	chunk int              // size of a new slab array
	nodes slab[yaml.Node]  // the nodes are taken from it
	ptrs  slab[*yaml.Node] // the Content slices are taken from it
	stack []*yaml.Node     // children of the collections being parsed
	buf   []byte           // scratch for values that are not slices of src
}

// drop forgets p's slabs: the tree of the last parse is the caller's to
// keep, and the next parse allocates new ones.
func (p *fastYAML) drop() {
	p.nodes, p.ptrs = slab[yaml.Node]{}, slab[*yaml.Node]{}
}

func (p *fastYAML) node(kind yaml.Kind, tag string, line, col int) *yaml.Node {
	n := &p.nodes.take(1, p.chunk)[0]
	n.Kind, n.Tag, n.Line, n.Column = kind, tag, line, col+1
	return n
}

// content moves the children pushed since start into n.Content.
func (p *fastYAML) content(n *yaml.Node, start int) {
	kids := p.stack[start:]
	if len(kids) > 0 {
		n.Content = p.ptrs.take(len(kids), p.chunk)
		copy(n.Content, kids)
	}
	clear(kids)
	p.stack = p.stack[:start]
}

// A slab hands out runs of zeroed elements from a few large arrays,
// which reset clears for the next use.
type slab[T any] struct {
	arrays [][]T // all[:next] are in use, the last of them being cur
	next   int
	cur    []T // cur[:used] is taken
	used   int
}

// take returns k zeroed elements (len and cap k), from a new array of
// max(k, size) elements when no kept one has room.
func (s *slab[T]) take(k, size int) []T {
	if len(s.cur)-s.used < k {
		if s.next == len(s.arrays) || len(s.arrays[s.next]) < k {
			a := make([]T, max(k, size))
			if s.next == len(s.arrays) {
				s.arrays = append(s.arrays, a)
			} else {
				// Keep the short array for a later, smaller take.
				s.arrays = append(s.arrays, s.arrays[s.next])
				s.arrays[s.next] = a
			}
		}
		s.cur, s.used = s.arrays[s.next], 0
		s.next++
	}
	r := s.cur[s.used : s.used+k : s.used+k]
	s.used += k
	return r
}

// reset clears what was taken since the last reset, to be taken again.
func (s *slab[T]) reset() {
	if s.next > 0 {
		for _, a := range s.arrays[:s.next-1] {
			clear(a)
		}
		clear(s.cur[:s.used])
	}
	s.next, s.cur, s.used = 0, nil, 0
}

// col is pos's column from 0, counted in characters as yaml.v3 does.
func (p *fastYAML) col() int {
	if !p.wide {
		return p.pos - p.lineStart
	}
	// Count from the last column asked on this line: linear on a long line.
	if p.colLine != p.lineStart || p.colPos > p.pos {
		p.colLine, p.colPos, p.colRunes = p.lineStart, p.lineStart, 0
	}
	p.colRunes += utf8.RuneCountInString(p.src[p.colPos:p.pos])
	p.colPos = p.pos
	return p.colRunes
}

// repeated reports whether key is one of the keys of the mapping whose
// key-value pairs are on the stack from start, which has no repeated keys
// so far. Past a few keys it keeps them in *index (allocated here), so
// that a mapping of many keys takes linear time.
func (p *fastYAML) repeated(start int, key string, index *map[string]bool) bool {
	const few = 16
	if *index == nil {
		if len(p.stack)-start < 2*few {
			for i := start; i < len(p.stack); i += 2 {
				if p.stack[i].Value == key {
					return true
				}
			}
			return false
		}
		*index = make(map[string]bool, 2*few)
		for i := start; i < len(p.stack); i += 2 {
			(*index)[p.stack[i].Value] = true
		}
	}
	if (*index)[key] {
		return true
	}
	(*index)[key] = true
	return false
}

// newLine moves pos past the line break at i (or to the end).
func (p *fastYAML) newLine(i int) {
	if i >= len(p.src) {
		p.pos = len(p.src)
		return
	}
	p.pos = i + 1
	p.lineNo++
	p.lineStart = p.pos
}

// nextLine moves from the start of a line to the first line that is not
// blank or a comment, and sets ind. A document marker sets ind to -2.
func (p *fastYAML) nextLine() {
	s := p.src
	for {
		i := p.pos
		for i < len(s) && s[i] == ' ' {
			i++
		}
		switch {
		case i == len(s):
			p.pos, p.ind = i, -1
			return
		case s[i] == '\n':
			p.newLine(i)
			continue
		case s[i] == '#':
			p.newLine(lineEnd(s, i))
			continue
		}
		if i == p.pos && len(s)-i >= 3 && (s[i:i+3] == "---" || s[i:i+3] == "...") {
			p.pos, p.ind = i, -2
			return
		}
		p.pos, p.ind = i, i-p.lineStart
		return
	}
}

func lineEnd(s string, i int) int {
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(s)
}

// endLine finishes a line after a value: spaces, then a comment after a
// space or the line break. It reports false on anything else.
func (p *fastYAML) endLine() bool {
	s := p.src
	i := p.pos
	for i < len(s) && s[i] == ' ' {
		i++
	}
	switch {
	case i == len(s):
	case s[i] == '\n':
	case s[i] == '#' && i > 0 && s[i-1] == ' ':
		i = lineEnd(s, i)
	default:
		return false
	}
	p.newLine(i)
	p.nextLine()
	return true
}

// seqEntry reports whether pos is at a block sequence entry: '-' then a
// space, a line break or the end.
func (p *fastYAML) seqEntry() bool {
	s, i := p.src, p.pos
	return i < len(s) && s[i] == '-' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n')
}

// mapping parses a block mapping whose keys are in column indent. With
// first set, its first key has been read and pos is past its ':'.
func (p *fastYAML) mapping(indent int, first *yaml.Node) (*yaml.Node, bool) {
	if p.depth++; p.depth > fastMaxDepth {
		return nil, false
	}
	defer func() { p.depth-- }()
	start := len(p.stack)
	var n *yaml.Node
	var index map[string]bool
	for {
		key := first
		first = nil
		if key == nil {
			var ok bool
			if key, ok = p.key(false); !ok {
				return nil, false
			}
		}
		if n == nil {
			n = p.node(yaml.MappingNode, "!!map", key.Line, key.Column-1)
		}
		if p.repeated(start, key.Value, &index) {
			return nil, false // let yaml.v3 and config say so
		}
		p.stack = append(p.stack, key)
		v, ok := p.value(indent, true)
		if !ok {
			return nil, false
		}
		p.stack = append(p.stack, v)
		switch {
		case p.ind == indent:
			continue
		case p.ind < indent && p.ind != -2:
			p.content(n, start)
			return n, true
		default:
			return nil, false
		}
	}
}

// sequence parses a block sequence whose '-' are in column indent.
func (p *fastYAML) sequence(indent int) (*yaml.Node, bool) {
	if p.depth++; p.depth > fastMaxDepth {
		return nil, false
	}
	defer func() { p.depth-- }()
	start := len(p.stack)
	n := p.node(yaml.SequenceNode, "!!seq", p.lineNo, indent)
	for {
		p.pos++ // the '-'
		v, ok := p.value(indent, false)
		if !ok {
			return nil, false
		}
		p.stack = append(p.stack, v)
		switch {
		case p.ind == indent && p.seqEntry():
			continue
		case p.ind <= indent && p.ind != -2:
			p.content(n, start)
			return n, true
		default:
			return nil, false
		}
	}
}

// value parses the value after a mapping's ':' or a sequence's '-' (pos
// is just past it) in a collection at indent.
func (p *fastYAML) value(indent int, inMapping bool) (*yaml.Node, bool) {
	s := p.src
	line, col := p.lineNo, p.col() // where an empty value is
	i := p.pos
	for i < len(s) && s[i] == ' ' {
		i++
	}
	if i == len(s) || s[i] == '\n' || s[i] == '#' && i > p.pos {
		// The value, if any, is a block collection on the next lines.
		p.newLine(lineEnd(s, i))
		p.nextLine()
		switch {
		case p.ind > indent && p.seqEntry():
			return p.sequence(p.ind)
		case p.ind > indent:
			return p.mapping(p.ind, nil)
		case p.ind == indent && inMapping && p.seqEntry():
			return p.sequence(indent)
		case p.ind == -2:
			return nil, false
		}
		return p.node(yaml.ScalarNode, "!!null", line, col), true
	}
	p.pos = i
	switch s[i] {
	case '|':
		return p.literal(indent)
	case '[', '{':
		n, ok := p.flow()
		if !ok || !p.endLine() {
			return nil, false
		}
		return n, true
	case '-':
		if p.seqEntry() {
			if inMapping {
				return nil, false
			}
			return p.sequence(p.col())
		}
	}
	// A scalar, or in a sequence the first key of a compact mapping.
	c := p.col()
	n, colon, ok := p.scalar(false)
	if !ok {
		return nil, false
	}
	if colon {
		if inMapping || !p.keyOK(n, c) {
			return nil, false
		}
		return p.mapping(c, n)
	}
	if !p.endLine() {
		return nil, false
	}
	return n, true
}

// key reads a block mapping key and the ':' after it.
func (p *fastYAML) key(flow bool) (*yaml.Node, bool) {
	c := p.col()
	n, colon, ok := p.scalar(flow)
	if !ok || !colon || !p.keyOK(n, c) {
		return nil, false
	}
	return n, true
}

// keyOK checks a key read by scalar (which stopped at its ':', now
// consumed) that began at column c.
func (p *fastYAML) keyOK(n *yaml.Node, c int) bool {
	return p.col()-c <= fastMaxKeyLen && !(n.Style == 0 && n.Value == "<<")
}

// scalar reads a one-line plain or quoted scalar. colon reports that it
// is directly followed by ": " (or ':' at the end of the line, in block
// context), which scalar then consumes: a key. Otherwise pos is just past
// the scalar.
func (p *fastYAML) scalar(flow bool) (n *yaml.Node, colon, ok bool) {
	s := p.src
	i := p.pos
	n = p.node(yaml.ScalarNode, "", p.lineNo, p.col())
	var end int
	switch s[i] {
	case '\'', '"':
		v, e, ok := p.quoted(i)
		if !ok {
			return nil, false, false
		}
		n.Value, n.Tag = v, "!!str"
		n.Style = yaml.DoubleQuotedStyle
		if s[i] == '\'' {
			n.Style = yaml.SingleQuotedStyle
		}
		end = e
	default:
		if !plainStart(s, i, flow) {
			return nil, false, false
		}
		var e int
		if flow {
			e, end = plainFlow(s, i)
		} else {
			e, end = plainBlock(s, i)
		}
		if e < 0 {
			return nil, false, false
		}
		n.Value = s[i:e]
		if n.Value == "<<" {
			return nil, false, false // a merge key: yaml.v3 tags it !!merge
		}
		n.Tag = plainTag(n) // yaml.v3's own resolution of a plain scalar
	}
	p.pos = end
	if end < len(s) && s[end] == ':' {
		if end+1 == len(s) || s[end+1] == ' ' || !flow && s[end+1] == '\n' {
			p.pos = end + 1
			return n, true, true
		}
		return nil, false, false
	}
	return n, false, true
}

// plainStart reports whether a plain scalar may start at s[i]: a letter,
// a digit, a character beyond ASCII, one of a few punctuation characters
// that are no YAML indicator, or '-' before a character that is neither blank nor (in
// flow context) a flow indicator.
func plainStart(s string, i int, flow bool) bool {
	c := s[i]
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c >= 0x80:
		return true
	case c == '-':
		if i+1 == len(s) {
			return false
		}
		d := s[i+1]
		return d != ' ' && d != '\n' && !(flow && strings.IndexByte(",[]{}#:?", d) >= 0)
	}
	return strings.IndexByte("_./~$()+=^;<\\", c) >= 0
}

// plainBlock scans a one-line plain scalar in block context from s[i].
// It returns the end of its value and where scanning stopped: a line
// break, the end, the '#' of a comment, or a ':' before a blank.
func plainBlock(s string, i int) (end, stop int) {
	end = i
	for i < len(s) {
		switch c := s[i]; c {
		case '\n':
			return end, i
		case ' ':
			j := i
			for j < len(s) && s[j] == ' ' {
				j++
			}
			if j == len(s) || s[j] == '\n' || s[j] == '#' {
				return end, j
			}
			i = j
			continue
		case ':':
			if i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' {
				if i != end {
					return -1, i // "a :": let yaml.v3 decide
				}
				return end, i
			}
		}
		i++
		end = i
	}
	return end, i
}

// plainFlow scans a plain scalar in flow context from s[i]. It stops
// before ',', ']' or '}' (after spaces) and at a ':' right after the
// value; anything else that would end or continue it differently (a
// line break, '#', '?', '[', '{', ':' elsewhere) gives -1.
func plainFlow(s string, i int) (end, stop int) {
	end = i
	for i < len(s) {
		switch s[i] {
		case ',', ']', '}':
			return end, i
		case ':':
			if i != end {
				return -1, i
			}
			return end, i
		case '\n', '#', '?', '[', '{':
			return -1, i
		case ' ':
			for i < len(s) && s[i] == ' ' {
				i++
			}
			continue
		}
		i++
		end = i
	}
	return -1, i
}

// quoted scans a one-line quoted scalar whose quote is at s[i]. It
// returns its value and the offset past the closing quote.
func (p *fastYAML) quoted(i int) (v string, end int, ok bool) {
	s := p.src
	q := s[i]
	j := i + 1
	start := j
	escaped := false
	for {
		if j == len(s) || s[j] == '\n' {
			return "", 0, false
		}
		c := s[j]
		if c == q {
			if q == '\'' && j+1 < len(s) && s[j+1] == '\'' {
				escaped = true
				j += 2
				continue
			}
			break
		}
		if c == '\\' && q == '"' {
			if j+1 == len(s) || fastEscape(s[j+1]) == 0 {
				return "", 0, false
			}
			escaped = true
			j += 2
			continue
		}
		j++
	}
	if !escaped {
		return s[start:j], j + 1, true
	}
	b := p.buf[:0]
	for k := start; k < j; k++ {
		c := s[k]
		switch {
		case q == '\'' && c == '\'':
			k++
		case q == '"' && c == '\\':
			k++
			c = fastEscape(s[k])
			if c == 0xff {
				c = 0
			}
		}
		b = append(b, c)
	}
	p.buf = b
	return string(b), j + 1, true
}

// fastEscape returns the byte a double-quoted escape \c stands for, 0xff
// for \0, and 0 for escapes fastParse leaves to yaml.v3.
func fastEscape(c byte) byte {
	switch c {
	case '0':
		return 0xff
	case 'a':
		return '\a'
	case 'b':
		return '\b'
	case 't':
		return '\t'
	case 'n':
		return '\n'
	case 'v':
		return '\v'
	case 'f':
		return '\f'
	case 'r':
		return '\r'
	case 'e':
		return 0x1b
	case ' ', '"', '\'', '\\':
		return c
	}
	return 0
}

// flow parses a one-line flow collection or a scalar inside one.
func (p *fastYAML) flow() (*yaml.Node, bool) {
	s := p.src
	switch s[p.pos] {
	case '[', '{':
	default:
		n, colon, ok := p.scalar(true)
		if !ok || colon {
			return nil, false
		}
		return n, true
	}
	if p.depth++; p.depth > fastMaxDepth {
		return nil, false
	}
	defer func() { p.depth-- }()
	isMap := s[p.pos] == '{'
	closer := byte(']')
	n := p.node(yaml.SequenceNode, "!!seq", p.lineNo, p.col())
	if isMap {
		closer = '}'
		n.Kind, n.Tag = yaml.MappingNode, "!!map"
	}
	n.Style = yaml.FlowStyle
	start := len(p.stack)
	var index map[string]bool
	p.pos++
	p.spaces()
	if p.pos < len(s) && s[p.pos] == closer {
		p.pos++
		return n, true
	}
	for {
		if p.pos == len(s) {
			return nil, false
		}
		if isMap {
			c := p.col()
			k, colon, ok := p.scalar(true)
			if !ok || !colon || !p.keyOK(k, c) {
				return nil, false
			}
			if p.repeated(start, k.Value, &index) {
				return nil, false
			}
			p.stack = append(p.stack, k)
			p.spaces()
			if p.pos == len(s) || s[p.pos] == ',' || s[p.pos] == '}' {
				return nil, false // an empty value
			}
		}
		v, ok := p.flow()
		if !ok {
			return nil, false
		}
		p.stack = append(p.stack, v)
		p.spaces()
		if p.pos == len(s) {
			return nil, false
		}
		switch s[p.pos] {
		case ',':
			p.pos++
			p.spaces()
			if p.pos == len(s) || s[p.pos] == ',' || s[p.pos] == ']' || s[p.pos] == '}' {
				return nil, false // [a,] and [a,,b]: leave them to yaml.v3
			}
			continue
		case closer:
			p.pos++
			p.content(n, start)
			return n, true
		}
		return nil, false
	}
}

func (p *fastYAML) spaces() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
}

// literal parses a literal block scalar whose '|' is at pos, in a block
// collection at indent.
func (p *fastYAML) literal(indent int) (*yaml.Node, bool) {
	s := p.src
	n := p.node(yaml.ScalarNode, "!!str", p.lineNo, p.col())
	n.Style = yaml.LiteralStyle
	i := p.pos + 1
	chomp := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		chomp = 1
		if s[i] == '-' {
			chomp = -1
		}
		i++
	}
	j := i
	for j < len(s) && s[j] == ' ' {
		j++
	}
	if j < len(s) && s[j] == '#' && j > i {
		j = lineEnd(s, j)
	}
	if j == len(s) || s[j] != '\n' {
		return nil, false
	}
	p.newLine(j)

	// Blank lines, then the first line that is not sets the indentation
	// (yaml.v3: the most spaces of these lines, at least indent+1).
	blank, most := 0, 0
	ls, k := p.pos, p.pos
	for {
		ls, k = p.pos, p.pos
		for k < len(s) && s[k] == ' ' {
			k++
		}
		most = max(most, k-ls)
		if k == len(s) || s[k] != '\n' {
			break
		}
		blank++
		p.newLine(k)
	}
	if c := k - ls; k == len(s) || c < max(most, indent+1) {
		// Empty; what is left of the line belongs to what follows.
		if chomp == 1 && blank > 0 {
			n.Value = strings.Repeat("\n", blank)
		}
		if k == len(s) {
			p.pos, p.ind = k, -1
		} else {
			p.nextLine()
		}
		return n, true
	}
	blockIndent := k - ls

	b := p.buf[:0]
	lines, first := 0, 0
	brk, trailing := false, blank
	for {
		ls := p.pos
		k := ls
		for k < len(s) && k-ls < blockIndent && s[k] == ' ' {
			k++
		}
		if k == len(s) {
			p.pos = k
			break
		}
		if s[k] == '\n' {
			trailing++
			p.newLine(k)
			continue
		}
		if k-ls < blockIndent {
			break // a less indented line ends the scalar
		}
		e := lineEnd(s, k)
		if brk {
			b = append(b, '\n')
		}
		for ; trailing > 0; trailing-- {
			b = append(b, '\n')
		}
		if lines == 0 {
			first = k
		}
		lines++
		b = append(b, s[k:e]...)
		brk = e < len(s)
		p.newLine(e)
		if !brk {
			break
		}
	}
	if chomp != -1 && brk {
		b = append(b, '\n')
	}
	if chomp == 1 {
		for ; trailing > 0; trailing-- {
			b = append(b, '\n')
		}
	}
	if lines == 1 && len(b) <= len(s)-first && s[first:first+len(b)] == string(b) {
		n.Value = s[first : first+len(b)] // one line: a slice of src
	} else {
		n.Value = string(b)
	}
	p.buf = b
	if p.pos == len(s) {
		p.ind = -1
	} else {
		p.nextLine() // pos is at the start of the line after the scalar
	}
	return n, true
}
