package steps

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hookd/hookd/engine"
)

// placeholderVarPrefix names the environment variables that carry
// placeholder values into a shell script: HOOKD_P1, HOOKD_P2, ...
const placeholderVarPrefix = "HOOKD_P"

// shellScript is a shell command whose placeholders were rewritten into
// references to environment variables. The values are never spliced into
// the script, so the shell never parses them as code.
type shellScript struct {
	text  string   // the script as run: {{path}} replaced by "${HOOKD_Pn}" or ${HOOKD_Pn}
	paths []string // paths[n-1] is the placeholder path HOOKD_Pn holds
}

// vars resolves the placeholders against scope and returns the
// HOOKD_Pn=value environment entries.
func (s *shellScript) vars(scope *engine.Scope) ([]string, error) {
	if len(s.paths) == 0 {
		return nil, nil
	}
	out := make([]string, len(s.paths))
	for n, p := range s.paths {
		v, err := scope.Lookup(p)
		if err != nil {
			return nil, err
		}
		val := engine.Stringify(v)
		if strings.IndexByte(val, 0) >= 0 {
			return nil, fmt.Errorf("{{%s}}: value contains a NUL byte, which cannot be passed to a process", p)
		}
		out[n] = placeholderVarPrefix + strconv.Itoa(n+1) + "=" + val
	}
	return out, nil
}

// parseShellScript rewrites the placeholders of a `sh -c` command. A small
// lexer follows the shell's quoting to learn where each placeholder sits:
//
//   - unquoted (also inside $(...) and ${...}): "${HOOKD_Pn}", one word,
//     no field splitting or globbing;
//   - inside "...", an unquoted here-document or a ${...} within "...":
//     ${HOOKD_Pn};
//   - inside '...', $'...' or a here-document with a quoted delimiter,
//     where the shell would not expand it: an error;
//   - inside $((...)) (the value would be evaluated as an arithmetic
//     expression, which bash can turn into command execution) or inside
//     backquotes (whose nested quoting differs between shells): an error;
//   - right after a '$' or a backslash, which would change the meaning of
//     the reference: an error.
//
// An unterminated quote or substitution is an error too, so a command the
// lexer cannot follow is refused rather than guessed at.
func parseShellScript(src string) (*shellScript, error) {
	phs, err := engine.ParsePlaceholders(src)
	if err != nil {
		return nil, err
	}
	if len(phs) == 0 {
		lx := newLexer(src, nil)
		if err := lx.run(); err != nil {
			return nil, err
		}
		return &shellScript{text: src}, nil
	}
	lx := newLexer(src, phs)
	if err := lx.run(); err != nil {
		return nil, err
	}
	var b strings.Builder
	b.Grow(len(src) + 8*len(phs))
	index := map[string]int{}
	var paths []string
	last := 0
	for k, ph := range phs {
		n, ok := index[ph.Path]
		if !ok {
			paths = append(paths, ph.Path)
			n = len(paths)
			index[ph.Path] = n
		}
		b.WriteString(src[last:ph.Start])
		ref := "${" + placeholderVarPrefix + strconv.Itoa(n) + "}"
		if lx.quoted[k] {
			b.WriteString(ref)
		} else {
			b.WriteString(`"` + ref + `"`)
		}
		last = ph.End
	}
	b.WriteString(src[last:])
	return &shellScript{text: b.String(), paths: paths}, nil
}

type frameKind int

const (
	frameCmd      frameKind = iota // unquoted: top level, $(...), `...`
	frameDQ                        // "..."
	frameSQ                        // '...'
	frameANSI                      // $'...'
	frameParam                     // ${...}
	frameArith                     // $((...))
	frameComment                   // # to end of line
	frameHeredoc                   // body of <<EOF
	frameHeredocQ                  // body of <<'EOF' (no expansion)
)

type frame struct {
	kind   frameKind
	closer byte // frameCmd: ')' for $(...), '`' for `...`, 0 at top level
	quoted bool // frameParam: the ${...} is inside double quotes
	parens int  // frameCmd, frameArith: plain '(' still open
	cases  int  // frameCmd: case statements still open (their patterns end in a bare ')')
	doc    heredoc
}

type heredoc struct {
	delim     string
	stripTabs bool // <<-
	quoted    bool // any part of the delimiter was quoted: no expansion in the body
}

// lexer follows shell quoting through a command, well enough to place
// placeholders. It does not execute or fully parse shell.
type lexer struct {
	src     string
	phs     []engine.Placeholder
	next    int // index of the next placeholder in phs
	stack   []frame
	pending []heredoc // here-documents whose bodies start after the next newline

	wordStart bool // the next byte starts a word (for '#' comments and keywords)
	cmdPos    bool // the next word is in command position (for case/esac)
	lineStart bool // at the start of a here-document body line

	quoted []bool // per placeholder: inside double quotes (or alike)
}

func newLexer(src string, phs []engine.Placeholder) *lexer {
	return &lexer{
		src:       src,
		phs:       phs,
		stack:     []frame{{kind: frameCmd}},
		wordStart: true,
		cmdPos:    true,
		quoted:    make([]bool, len(phs)),
	}
}

func (lx *lexer) top() *frame { return &lx.stack[len(lx.stack)-1] }

func (lx *lexer) push(f frame) { lx.stack = append(lx.stack, f) }

func (lx *lexer) pop() {
	if lx.top().kind == frameHeredoc || lx.top().kind == frameHeredocQ {
		lx.stack = lx.stack[:len(lx.stack)-1]
		lx.startHeredoc()
		return
	}
	lx.stack = lx.stack[:len(lx.stack)-1]
}

// startHeredoc pushes the next pending here-document body, if any.
func (lx *lexer) startHeredoc() {
	if len(lx.pending) == 0 {
		return
	}
	d := lx.pending[0]
	lx.pending = lx.pending[1:]
	k := frameHeredoc
	if d.quoted {
		k = frameHeredocQ
	}
	lx.push(frame{kind: k, doc: d})
	lx.lineStart = true
}

// phStart is the offset of the next placeholder, or -1.
func (lx *lexer) phStart() int {
	if lx.next < len(lx.phs) {
		return lx.phs[lx.next].Start
	}
	return -1
}

func (lx *lexer) phErr(msg string) error {
	return fmt.Errorf("placeholder {{%s}} %s", lx.phs[lx.next].Path, msg)
}

func (lx *lexer) run() error {
	i := 0
	for i < len(lx.src) {
		if i == lx.phStart() {
			if err := lx.placeholder(); err != nil {
				return err
			}
			i = lx.phs[lx.next].End
			lx.next++
			continue
		}
		var err error
		if i, err = lx.step(i); err != nil {
			return err
		}
	}
	for len(lx.stack) > 1 {
		switch f := lx.top(); f.kind {
		case frameComment, frameHeredoc, frameHeredocQ:
			// A comment or a here-document may end with the command.
			lx.stack = lx.stack[:len(lx.stack)-1]
		case frameSQ:
			return errors.New("unterminated single quote")
		case frameDQ:
			return errors.New("unterminated double quote")
		case frameANSI:
			return errors.New("unterminated $'")
		case frameParam:
			return errors.New("unterminated ${")
		case frameArith:
			return errors.New("unterminated $((")
		case frameCmd:
			if f.closer == '`' {
				return errors.New("unterminated backquote")
			}
			return errors.New("unterminated $(")
		}
	}
	return nil
}

// placeholder records how the placeholder at the current position must be
// referenced, or refuses it.
func (lx *lexer) placeholder() error {
	for _, f := range lx.stack {
		switch {
		case f.kind == frameArith:
			return lx.phErr("inside $((...)) would be evaluated as an arithmetic expression; pass it in env and check it in the script")
		case f.kind == frameCmd && f.closer == '`':
			return lx.phErr("inside backquotes: use $(...) instead")
		}
	}
	k := lx.next
	switch f := lx.top(); f.kind {
	case frameCmd, frameComment:
		lx.quoted[k] = false
	case frameParam:
		lx.quoted[k] = f.quoted
	case frameDQ, frameHeredoc:
		lx.quoted[k] = true
	case frameSQ:
		return lx.phErr("inside single quotes would not be expanded; remove the quotes")
	case frameANSI:
		return lx.phErr("inside $'...' would not be expanded; remove the quotes")
	case frameHeredocQ:
		return lx.phErr("inside a here-document with a quoted delimiter would not be expanded; unquote the delimiter")
	}
	lx.wordStart, lx.cmdPos, lx.lineStart = false, false, false
	return nil
}

// at returns the byte at j, or 0 at the end of the command or at the
// start of the next placeholder.
func (lx *lexer) at(j int) byte {
	if j >= len(lx.src) || j == lx.phStart() {
		return 0
	}
	return lx.src[j]
}

// escape consumes a backslash and the byte it escapes.
func (lx *lexer) escape(i int) (int, error) {
	if i+1 == lx.phStart() {
		return 0, lx.phErr("right after a backslash: the backslash would change the reference")
	}
	return min(i+2, len(lx.src)), nil
}

// dollar consumes a '$' and what it opens.
func (lx *lexer) dollar(i int, quoted bool) (int, error) {
	if i+1 == lx.phStart() {
		return 0, lx.phErr("right after '$': the '$' would change the reference")
	}
	switch lx.at(i + 1) {
	case '(':
		if lx.at(i+2) == '(' {
			lx.push(frame{kind: frameArith})
			return i + 3, nil
		}
		lx.push(frame{kind: frameCmd, closer: ')'})
		lx.wordStart, lx.cmdPos = true, true
		return i + 2, nil
	case '{':
		lx.push(frame{kind: frameParam, quoted: quoted})
		return i + 2, nil
	case '\'':
		if !quoted {
			lx.push(frame{kind: frameANSI})
			return i + 2, nil
		}
	case '"':
		if !quoted {
			lx.push(frame{kind: frameDQ}) // bash's $"..." (locale translation) quotes like "..."
			return i + 2, nil
		}
	}
	return i + 1, nil
}

// step consumes one token at i and returns the offset after it.
func (lx *lexer) step(i int) (int, error) {
	f := lx.top()
	c := lx.src[i]
	switch f.kind {
	case frameSQ:
		if c == '\'' {
			lx.pop()
		}
		return i + 1, nil
	case frameANSI:
		switch c {
		case '\\':
			return lx.escape(i)
		case '\'':
			lx.pop()
		}
		return i + 1, nil
	case frameDQ:
		if c == '"' {
			lx.pop()
			return i + 1, nil
		}
		if next, ok, err := lx.expansion(i, c, true); ok {
			return next, err
		}
		return i + 1, nil
	case frameParam:
		switch c {
		case '}':
			lx.pop()
		case '\\', '$', '`':
			next, _, err := lx.expansion(i, c, f.quoted)
			return next, err
		case '"':
			lx.push(frame{kind: frameDQ})
		case '\'':
			if !f.quoted {
				lx.push(frame{kind: frameSQ})
			}
		}
		return i + 1, nil
	case frameArith:
		switch c {
		case '(':
			f.parens++
		case ')':
			if f.parens > 0 {
				f.parens--
				break
			}
			lx.pop()
			if lx.at(i+1) == ')' {
				return i + 2, nil
			}
		case '\\', '$', '`':
			next, _, err := lx.expansion(i, c, true)
			return next, err
		case '"':
			lx.push(frame{kind: frameDQ})
		case '\'':
			lx.push(frame{kind: frameSQ})
		}
		return i + 1, nil
	case frameComment:
		if c == '\n' {
			lx.pop() // the newline itself is handled by the enclosing frame
			return i, nil
		}
		return i + 1, nil
	case frameHeredoc, frameHeredocQ:
		if lx.lineStart {
			lx.lineStart = false
			end := strings.IndexByte(lx.src[i:], '\n')
			if end < 0 {
				end = len(lx.src)
			} else {
				end += i
			}
			line := lx.src[i:end]
			if f.doc.stripTabs {
				line = strings.TrimLeft(line, "\t")
			}
			if line == f.doc.delim {
				lx.pop()
				lx.wordStart, lx.cmdPos = true, true
				return min(end+1, len(lx.src)), nil
			}
		}
		if c == '\n' {
			lx.lineStart = true
			return i + 1, nil
		}
		if f.kind == frameHeredocQ {
			return i + 1, nil
		}
		if next, ok, err := lx.expansion(i, c, true); ok {
			return next, err
		}
		return i + 1, nil
	}
	return lx.stepCmd(f, i, c)
}

// expansion handles what starts an escape or an expansion where the shell
// expands: a backslash, a '$' (quoted says whether it stands in double
// quotes) and a backquote. ok is false for any other character.
func (lx *lexer) expansion(i int, c byte, quoted bool) (next int, ok bool, err error) {
	switch c {
	case '\\':
		next, err = lx.escape(i)
		return next, true, err
	case '$':
		next, err = lx.dollar(i, quoted)
		return next, true, err
	case '`':
		lx.push(frame{kind: frameCmd, closer: '`'})
		lx.wordStart, lx.cmdPos = true, true
		return i + 1, true, nil
	}
	return 0, false, nil
}

// reserved words after which the next word is still in command position.
var keepsCmdPos = map[string]bool{
	"then": true, "do": true, "else": true, "elif": true, "if": true,
	"while": true, "until": true, "!": true, "{": true, "time": true,
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func isMeta(c byte) bool {
	switch c {
	case ' ', '\t', '\n', ';', '&', '|', '<', '>', '(', ')':
		return true
	}
	return false
}

// stepCmd consumes one token of unquoted shell text.
func (lx *lexer) stepCmd(f *frame, i int, c byte) (int, error) {
	if lx.wordStart && !isMeta(c) {
		if c == '#' {
			lx.push(frame{kind: frameComment})
			return i + 1, nil
		}
		// Read a plain word to spot case/esac and the words that keep
		// command position.
		j := i
		for j < len(lx.src) && j != lx.phStart() && !isMeta(lx.src[j]) && strings.IndexByte("'\"\\$`", lx.src[j]) < 0 {
			j++
		}
		if j == len(lx.src) || (j != lx.phStart() && isMeta(lx.src[j])) {
			w := lx.src[i:j]
			switch {
			case w == "case" && lx.cmdPos:
				f.cases++
				lx.wordStart, lx.cmdPos = false, false
				return j, nil
			case w == "esac" && lx.cmdPos && f.cases > 0:
				f.cases--
				lx.wordStart, lx.cmdPos = false, false
				return j, nil
			case keepsCmdPos[w] && lx.cmdPos:
				lx.wordStart = false
				return j, nil
			}
		}
	}
	switch c {
	case ' ', '\t':
		lx.wordStart = true
		return i + 1, nil
	case '\n':
		lx.wordStart, lx.cmdPos = true, true
		lx.startHeredoc()
		return i + 1, nil
	case ';', '&', '|':
		lx.wordStart, lx.cmdPos = true, true
		return i + 1, nil
	case '(':
		f.parens++
		lx.wordStart, lx.cmdPos = true, true
		return i + 1, nil
	case ')':
		lx.wordStart, lx.cmdPos = true, true
		switch {
		case f.parens > 0:
			f.parens--
		case f.cases > 0:
			// the end of a case pattern
		case f.closer == ')':
			lx.pop()
			lx.wordStart, lx.cmdPos = false, false
		}
		return i + 1, nil
	case '`':
		if f.closer == '`' {
			lx.pop()
			lx.wordStart, lx.cmdPos = false, false
			return i + 1, nil
		}
		lx.push(frame{kind: frameCmd, closer: '`'})
		lx.wordStart, lx.cmdPos = true, true
		return i + 1, nil
	case '<':
		if lx.at(i+1) == '<' {
			if lx.at(i+2) == '<' { // bash here-string
				lx.wordStart = true
				return i + 3, nil
			}
			return lx.heredocOp(i)
		}
		lx.wordStart = true
		return i + 1, nil
	case '>':
		lx.wordStart = true
		return i + 1, nil
	}
	lx.wordStart, lx.cmdPos = false, false
	switch c {
	case '\'':
		lx.push(frame{kind: frameSQ})
	case '"':
		lx.push(frame{kind: frameDQ})
	case '\\':
		return lx.escape(i)
	case '$':
		return lx.dollar(i, false)
	}
	return i + 1, nil
}

// heredocOp reads a << or <<- operator and its delimiter word; the body
// starts after the next newline.
func (lx *lexer) heredocOp(i int) (int, error) {
	var d heredoc
	j := i + 2
	if lx.at(j) == '-' {
		d.stripTabs = true
		j++
	}
	for j < len(lx.src) && isBlank(lx.src[j]) {
		j++
	}
	start := j
	var delim strings.Builder
	for j < len(lx.src) && !isMeta(lx.src[j]) {
		if j == lx.phStart() {
			return 0, lx.phErr("in a here-document delimiter")
		}
		switch c := lx.src[j]; c {
		case '\'', '"':
			d.quoted = true
			k := strings.IndexByte(lx.src[j+1:], c)
			if k < 0 {
				return 0, errors.New("unterminated quote in a here-document delimiter")
			}
			if p := lx.phStart(); p > j && p < j+1+k {
				return 0, lx.phErr("in a here-document delimiter")
			}
			delim.WriteString(lx.src[j+1 : j+1+k])
			j += k + 2
		case '\\':
			d.quoted = true
			if j+1 < len(lx.src) {
				delim.WriteByte(lx.src[j+1])
			}
			j += 2
		default:
			delim.WriteByte(c)
			j++
		}
	}
	if j == start {
		return 0, errors.New("here-document operator without a delimiter")
	}
	d.delim = delim.String()
	lx.pending = append(lx.pending, d)
	lx.wordStart = true
	return min(j, len(lx.src)), nil
}
