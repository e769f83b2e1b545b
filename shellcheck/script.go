package shellcheck

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/hookd/hookd/engine"
	"mvdan.cc/sh/v3/syntax"
)

// placeholderVarPrefix names the environment variables that carry
// placeholder values into a shell script: HOOKD_P1, HOOKD_P2, ...
const placeholderVarPrefix = "HOOKD_P"

// Script is a shell command whose placeholders were rewritten into
// references to environment variables. The values are never spliced into
// the script, so the shell never parses them as code.
type Script struct {
	text  string   // the script as run: {{path}} replaced by "${HOOKD_Pn}" or ${HOOKD_Pn}
	paths []string // paths[n-1] is the placeholder path HOOKD_Pn holds
	// optionAt[n-1] says where HOOKD_Pn's value may begin an argument
	// of a command ("argument 2 of go"); "" where it never does.
	optionAt []string
	// EnvOptionAt is the same for the step's env variables (nil when
	// none may).
	EnvOptionAt map[string]string
}

// Text is the script as it runs: each placeholder replaced by a
// reference to the environment variable that carries its value.
func (s *Script) Text() string { return s.text }

// Placeholders is how many placeholder values the script takes (the
// variables Vars returns).
func (s *Script) Placeholders() int { return len(s.paths) }

// Vars resolves the placeholders against scope and returns the
// HOOKD_Pn=value environment entries. Unless allowOptions, a value that
// begins with '-' where it would begin an argument is an error.
func (s *Script) Vars(scope *engine.Scope, allowOptions bool) ([]string, error) {
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
		if !allowOptions && s.optionAt[n] != "" {
			if err := CheckOptionValue(val, s.optionAt[n]); err != nil {
				return nil, fmt.Errorf("{{%s}}: %w", p, err)
			}
		}
		out[n] = placeholderVarPrefix + strconv.Itoa(n+1) + "=" + val
	}
	return out, nil
}

// CheckOptionValue refuses a value that begins with '-' where it would
// begin an argument, so a program would read it as an option.
func CheckOptionValue(val, where string) error {
	if strings.HasPrefix(val, "-") {
		return fmt.Errorf("value %q (%s) begins with '-' and would be read as an option; put it after \"--\" or set allow_option_values: true", clip(val, 60), where)
	}
	return nil
}

func clip(s string, n int) string { return engine.Clip(s, n) }

// occurrence is one placeholder in the script being checked.
type occurrence struct {
	ph   engine.Placeholder
	n    int    // HOOKD_Pn
	off  int    // offset of "${HOOKD_Pn}" in the rewritten text
	name string // HOOKD_Pn
}

// Parse rewrites the placeholders of a `sh -c` command into
// references to environment variables and checks, with a bash parser,
// where each stands. taintedEnv names the step's env variables whose
// values come from placeholders: they are data as much as the
// placeholders are.
//
// Each placeholder becomes "${HOOKD_Pn}" where it stands unquoted (one
// word, no splitting or globbing), ${HOOKD_Pn} inside double quotes or an
// unquoted here-document. Refused, with the context named: a placeholder
// the shell would not expand as a whole (single quotes, $'...', a quoted
// here-document, right after '$' or '\'), inside backquotes, and data —
// a placeholder or a variable assigned from one — where bash would run or
// evaluate it: command position, arithmetic ($((...)), ((...)), $[...],
// let, array indexes, substring offsets, declare -i variables), [[ ... ]],
// variable names (declare, read, unset, printf -v, test -v, ${!v}, ${v@P}),
// and the arguments of eval, source, trap, `sh -c`, interpreters' code
// flags, awk and sed programs, ssh, watch, the programs of codePrograms
// (make, sqlite3, ed, vim, gdb, git -c, tar --to-command, ...), xargs -I
// splicing its input into code, and the command wrapped by
// env, sudo, su -c, xargs, timeout, nice, nohup, find -exec and the like.
// A variable holding data is refused unquoted where bash splits words,
// and transformed (${v#...}, ${v/...}, ...) where the result may begin
// an argument. Line continuations are joined first.
func Parse(src string, taintedEnv map[string]bool) (*Script, error) {
	phs, err := engine.ParsePlaceholders(src)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.Grow(len(src) + 16*len(phs))
	s := &Script{}
	occs := make([]occurrence, len(phs))
	last := 0
	var index map[string]int // path -> n, past searchOccs placeholders
	if len(phs) > searchOccs {
		index = make(map[string]int, len(phs))
	}
	if len(phs) > 0 {
		s.paths = make([]string, 0, len(phs))
	}
	for k, ph := range phs {
		var n int
		if index != nil {
			n = index[ph.Path]
		} else {
			n = slices.Index(s.paths, ph.Path) + 1
		}
		if n == 0 {
			s.paths = append(s.paths, ph.Path)
			n = len(s.paths)
			if index != nil {
				index[ph.Path] = n
			}
		}
		b.WriteString(src[last:ph.Start])
		name := placeholderVar(n)
		occs[k] = occurrence{ph: ph, n: n, off: b.Len(), name: name}
		b.WriteString("${" + name + "}")
		last = ph.End
	}
	b.WriteString(src[last:])
	s.optionAt = make([]string, len(s.paths))

	text, file, err := joinContinuations(b.String(), occs)
	if err != nil {
		return nil, err
	}
	c := newChecker(file, occs, taintedEnv)
	if err := c.check(); err != nil {
		return nil, err
	}
	for k, where := range c.optionAt {
		if where != "" {
			if n, ok := placeholderNum(k); ok {
				if s.optionAt[n-1] == "" {
					s.optionAt[n-1] = where
				}
			} else if taintedEnv[k] {
				if s.EnvOptionAt == nil {
					s.EnvOptionAt = map[string]string{}
				}
				s.EnvOptionAt[k] = where
			}
		}
	}

	// Quote the references that stand unquoted.
	if !slices.Contains(c.quote, true) {
		s.text = text
		return s, nil
	}
	var out strings.Builder
	out.Grow(len(text) + 2*len(occs))
	last = 0
	for k, o := range occs {
		ref := "${" + o.name + "}"
		out.WriteString(text[last:o.off])
		if c.quote[k] {
			out.WriteString(`"` + ref + `"`)
		} else {
			out.WriteString(ref)
		}
		last = o.off + len(ref)
	}
	out.WriteString(text[last:])
	s.text = out.String()
	return s, nil
}

// placeholderVars are the names of the first placeholder variables.
var placeholderVars = func() (names [16]string) {
	for i := range names {
		names[i] = placeholderVarPrefix + strconv.Itoa(i+1)
	}
	return names
}()

// placeholderVar returns HOOKD_Pn.
func placeholderVar(n int) string {
	if n >= 1 && n <= len(placeholderVars) {
		return placeholderVars[n-1]
	}
	return placeholderVarPrefix + strconv.Itoa(n)
}

// placeholderNum returns n for the variable name HOOKD_Pn.
func placeholderNum(name string) (int, bool) {
	d, ok := strings.CutPrefix(name, placeholderVarPrefix)
	if !ok || d == "" || strings.Trim(d, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(d)
	return n, err == nil && n > 0
}

// bashParsers holds idle bash parsers: a parser resets itself at each
// Parse, and the nodes it returns are its own allocations, never reused,
// so one may parse many scripts (loading thousands of hooks makes as many
// parsers otherwise).
var bashParsers = sync.Pool{New: func() any {
	return &bashParser{p: syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true))}
}}

// bashParser is a pooled parser and the reader it parses from.
type bashParser struct {
	p *syntax.Parser
	r strings.Reader
}

func parseBash(text string) (*syntax.File, error) {
	bp := bashParsers.Get().(*bashParser)
	bp.r.Reset(text)
	f, err := bp.p.Parse(&bp.r, "")
	bp.r.Reset("") // keep no script alive in the pool
	bashParsers.Put(bp)
	if err != nil {
		return nil, fmt.Errorf("parse the command as bash: %w", err)
	}
	return f, nil
}

// joinContinuations removes every backslash-newline where the shell reads
// it as a line continuation (not in single quotes, comments or quoted
// here-documents), adjusting the offsets of occs, and parses the result:
// the script that runs is the one that was checked.
func joinContinuations(text string, occs []occurrence) (string, *syntax.File, error) {
	if !strings.Contains(text, "\\\n") {
		// Nothing to join (most scripts): the parse is the answer, as
		// the first round below would find no continuation to remove.
		f, err := parseBash(text)
		if err != nil {
			return "", nil, err
		}
		return text, f, nil
	}
	for try := 0; try < 4; try++ {
		f, err := parseBash(text)
		if err != nil && try == 0 && strings.Contains(text, "\\\n") {
			// The parser does not follow every continuation ($\
			// newline ((, for one): join them all, with no literal
			// context known, and check what results; that is what runs.
			text = joinAll(text, occs)
			continue
		}
		if err != nil {
			return "", nil, err
		}
		var keep [][2]int
		syntax.Walk(f, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.SglQuoted, *syntax.Comment:
				keep = append(keep, [2]int{int(n.Pos().Offset()), int(n.End().Offset())})
			case *syntax.Redirect:
				if (n.Op == syntax.Hdoc || n.Op == syntax.DashHdoc) && n.Hdoc != nil && quotedDelim(n.Word) {
					keep = append(keep, [2]int{int(n.Hdoc.Pos().Offset()), int(n.Hdoc.End().Offset())})
				}
			}
			return true
		})
		inKeep := func(i int) bool {
			for _, r := range keep {
				if i >= r[0] && i < r[1] {
					return true
				}
			}
			return false
		}
		var b strings.Builder
		removed := 0
		shift := make([]int, len(occs))
		for i := 0; i < len(text); i++ {
			if text[i] != '\\' || inKeep(i) {
				b.WriteByte(text[i])
				continue
			}
			if i+1 < len(text) && text[i+1] == '\n' {
				for k := range occs {
					if occs[k].off > i {
						shift[k] += 2
					}
				}
				removed++
				i++
				continue
			}
			b.WriteByte(text[i])
			if i+1 < len(text) {
				b.WriteByte(text[i+1])
				i++
			}
		}
		if removed == 0 {
			return text, f, nil
		}
		for k := range occs {
			occs[k].off -= shift[k]
		}
		text = b.String()
	}
	return "", nil, fmt.Errorf("parse the command as bash: line continuations do not settle")
}

// joinAll removes every unescaped backslash-newline.
func joinAll(text string, occs []occurrence) string {
	var b strings.Builder
	shift := make([]int, len(occs))
	for i := 0; i < len(text); i++ {
		if text[i] == '\\' && i+1 < len(text) {
			if text[i+1] == '\n' {
				for k := range occs {
					if occs[k].off > i {
						shift[k] += 2
					}
				}
				i++
				continue
			}
			b.WriteByte(text[i])
			i++
		}
		b.WriteByte(text[i])
	}
	for k := range occs {
		occs[k].off -= shift[k]
	}
	return b.String()
}

// quotedDelim reports whether a here-document delimiter is quoted, so the
// body is not expanded.
func quotedDelim(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok || strings.ContainsRune(l.Value, '\\') {
			return true
		}
	}
	return false
}

// checker walks a parsed script once to learn which variables hold data,
// then again to find where data stands.
type checker struct {
	file    *syntax.File
	occs    []occurrence
	byOff   map[int]int // offset of an occurrence -> its index; nil while occs are few enough to search
	tainted map[string]map[string]bool
	// derived names the variables whose data is derived rather than
	// copied (read, mapfile, $(…), …), with how (derived.go); nil
	// until one is.
	derived map[string]string
	// dataFiles are the files the script writes data to, by name
	// (datafile.go); nil until one is.
	dataFiles map[string]dataFile
	intVars   map[string]bool   // nil until one is declared
	quote     []bool            // per occurrence: wrap the reference in double quotes
	found     []bool            // per occurrence: the parser saw the reference
	optionAt  map[string]string // data root -> where it may begin an argument; nil until one may
	// calls are the commands analyzed (call), searched in turn while
	// few; callIndex finds them past searchOccs.
	calls     []*callInfo
	callIndex map[*syntax.CallExpr]*callInfo
	callsBuf  [searchOccs]*callInfo
	depth     int // how deep in inner shells' scripts
	// rootOccs are the placeholders of the outermost script, which name
	// the data roots that are placeholders: HOOKD_P1 is {{event.x}}.
	rootOccs []occurrence

	// The state of the walks, kept here rather than in their closures'
	// variables so that a check allocates little (loading runs one for
	// every shell step of every hook).
	err        error         // check: the first problem found
	stack      []syntax.Node // check: the ancestors of the node visited
	stackBuf   [16]syntax.Node
	funcs      map[string]bool // learn: the script's functions; nil until one is declared
	pass       int             // learn: the pass, from 0
	changed    bool            // learn: the pass learnt something
	taintOut   map[string]bool // wordTaint: the roots found by its walk
	taintVisit func(syntax.Node) bool
	funcDecls  map[string][]*syntax.Stmt // learn: the bodies of the script's functions
	inFunc     map[string]bool           // a function's body being followed (shellstreams.go)
	aliases    map[string]string         // learn: the script's aliases; nil until one is defined
}

type callInfo struct {
	ce    *syntax.CallExpr
	args  []callArg
	rules *callRules // &own
	// Room for a command of a few words and its rules, so that the
	// analysis of one takes a single allocation.
	own    callRules
	argBuf [6]callArg
}

func newChecker(f *syntax.File, occs []occurrence, taintedEnv map[string]bool) *checker {
	flags := make([]bool, 2*len(occs))
	c := &checker{
		file: f, occs: occs, tainted: map[string]map[string]bool{},
		quote: flags[:len(occs):len(occs)], found: flags[len(occs):],
		rootOccs: occs,
	}
	c.calls = c.callsBuf[:0]
	if len(occs) > searchOccs {
		c.byOff = make(map[int]int, len(occs))
	}
	for k, o := range occs {
		if c.byOff != nil {
			c.byOff[o.off] = k
		}
		if !o.ph.IsLiteral() {
			c.tainted[o.name] = map[string]bool{o.name: true}
		}
	}
	for name := range taintedEnv {
		c.tainted[name] = map[string]bool{name: true}
	}
	return c
}

// searchOccs is the number of placeholders (and of commands) up to which
// finding one by its offset searches them in turn rather than a map.
const searchOccs = 8

// occurrenceAt returns the index of the placeholder at offset off.
func (c *checker) occurrenceAt(off int) (int, bool) {
	if c.byOff != nil {
		k, ok := c.byOff[off]
		return k, ok
	}
	for k, o := range c.occs {
		if o.off == off {
			return k, true
		}
	}
	return 0, false
}

// occurrenceOf returns the index of the placeholder pe stands for, or -1.
func (c *checker) occurrenceOf(pe *syntax.ParamExp) int {
	if pe.Short || pe.Param == nil {
		return -1
	}
	k, ok := c.occurrenceAt(int(pe.Dollar.Offset()))
	if !ok || c.occs[k].name != pe.Param.Value || pe.Excl || pe.Length || pe.Index != nil || pe.Slice != nil || pe.Repl != nil || pe.Exp != nil {
		return -1
	}
	return k
}

// isTainted reports whether pe expands data.
func (c *checker) isTainted(pe *syntax.ParamExp) bool {
	if pe.Param == nil || pe.Length {
		return false
	}
	if k := c.occurrenceOf(pe); k >= 0 {
		return !c.occs[k].ph.IsLiteral()
	}
	_, ok := c.tainted[pe.Param.Value]
	if !ok {
		_, ok = placeholderNum(pe.Param.Value)
	}
	return ok
}

func (c *checker) roots(pe *syntax.ParamExp) map[string]bool {
	if r, ok := c.tainted[pe.Param.Value]; ok {
		return r
	}
	return map[string]bool{pe.Param.Value: true}
}

// wordTaint returns the data roots a word's expansion holds, or nil.
func (c *checker) wordTaint(n syntax.Node) map[string]bool {
	switch x := n.(type) {
	case nil:
		return nil
	case *syntax.Word:
		if x == nil {
			return nil
		}
		// Most words are text, quotes and plain $name: no walk.
		var out map[string]bool
		if c.flatTaint(x.Parts, &out) {
			return out
		}
	case *syntax.ArrayExpr:
		if x == nil {
			return nil
		}
	}
	if c.taintVisit == nil {
		c.taintVisit = func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.ParamExp:
				c.addTaint(n, &c.taintOut)
			case *syntax.CallExpr, *syntax.DeclClause, *syntax.Stmt:
				// A command that prints data: its output is data.
				saved := c.taintOut
				t := c.emitted(n)
				c.taintOut = saved
				if t != nil && c.taintOut == nil {
					c.taintOut = map[string]bool{}
				}
				for r := range t {
					c.taintOut[r] = true
				}
			}
			return true
		}
	}
	c.taintOut = nil
	syntax.Walk(n, c.taintVisit)
	out := c.taintOut
	c.taintOut = nil
	return out
}

// flatTaint is wordTaint for the parts of a word made of literal text,
// quotes and variable references with nothing inside them (no index,
// slice, replacement, default or nested expansion): it adds their data
// roots to *out and reports true. It reports false, leaving *out
// incomplete, at any other part: syntax.Walk finds what that holds.
func (c *checker) flatTaint(parts []syntax.WordPart, out *map[string]bool) bool {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			if !c.flatTaint(p.Parts, out) {
				return false
			}
		case *syntax.ParamExp:
			if p.NestedParam != nil || p.Index != nil || p.Slice != nil || p.Repl != nil || p.Exp != nil {
				return false
			}
			c.addTaint(p, out)
		default:
			return false
		}
	}
	return true
}

// addTaint adds the data roots pe expands, if any, to *out.
func (c *checker) addTaint(pe *syntax.ParamExp, out *map[string]bool) {
	if !c.isTainted(pe) {
		return
	}
	if *out == nil {
		*out = map[string]bool{}
	}
	for r := range c.roots(pe) {
		(*out)[r] = true
	}
}

func (c *checker) taint(name string, roots map[string]bool) bool {
	if name == "" {
		return false
	}
	t, ok := c.tainted[name]
	if !ok {
		t = map[string]bool{}
		c.tainted[name] = t
	}
	changed := !ok
	for r := range roots {
		if !t[r] {
			t[r] = true
			changed = true
		}
	}
	return changed
}

// positionalParams are the names data in the positional parameters is
// known by.
var positionalParams = []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "@", "*"}

// learn finds, to a fixed point, the variables assigned from data and
// the variables declared as integers.
//
// The first pass also collects the script's functions; a call may come
// before its function's declaration, so when there are functions another
// pass follows with all of them known. Every rule only adds (a variable
// holding data, an integer variable), so the passes reach the fixed
// point that knowing the functions first would reach.
func (c *checker) learn() {
	visit := func(n syntax.Node) bool {
		c.learnDerived(n)
		c.learnDataFiles(n)
		switch n := n.(type) {
		case *syntax.FuncDecl:
			if c.pass == 0 && n.Name != nil {
				if c.funcs == nil {
					c.funcs = map[string]bool{}
				}
				c.funcs[n.Name.Value] = true
				if c.funcDecls == nil {
					c.funcDecls = map[string][]*syntax.Stmt{}
				}
				c.funcDecls[n.Name.Value] = append(c.funcDecls[n.Name.Value], n.Body)
				c.changed = true // call sites before it are seen again
			}
		case *syntax.Assign:
			if n.Name != nil {
				if t := c.wordTaint(n.Value); t != nil {
					c.changed = c.taint(n.Name.Value, t) || c.changed
				}
				if t := c.wordTaint(n.Array); t != nil {
					c.changed = c.taint(n.Name.Value, t) || c.changed
				}
			}
		case *syntax.ParamExp:
			// ${v:=data} and ${v=data} assign the data to v.
			if name, w := assigningExp(n); w != nil {
				if t := c.wordTaint(w); t != nil {
					c.changed = c.taint(name, t) || c.changed
				}
			}
		case *syntax.ForClause:
			if wi, ok := n.Loop.(*syntax.WordIter); ok {
				for _, w := range wi.Items {
					if t := c.wordTaint(w); t != nil {
						c.changed = c.taint(wi.Name.Value, t) || c.changed
					}
				}
			}
		case *syntax.DeclClause:
			integer := false
			for _, a := range n.Args {
				if a.Naked && a.Name == nil && a.Value != nil {
					if l := a.Value.Lit(); strings.HasPrefix(l, "-") && strings.ContainsRune(l, 'i') {
						integer = true
					}
				}
			}
			for _, a := range n.Args {
				if integer && a.Name != nil && !c.intVars[a.Name.Value] {
					if c.intVars == nil {
						c.intVars = map[string]bool{}
					}
					c.intVars[a.Name.Value] = true
					c.changed = true
				}
			}
		case *syntax.CallExpr:
			if len(n.Args) == 0 {
				break
			}
			if name := n.Args[0].Lit(); name == "set" || c.funcs[name] {
				// set -- data, or a function called with data: the
				// positional parameters hold it.
				var all map[string]bool
				for _, w := range n.Args[1:] {
					for r := range c.wordTaint(w) {
						if all == nil {
							all = map[string]bool{}
						}
						all[r] = true
					}
				}
				if all != nil {
					for _, p := range positionalParams {
						c.changed = c.taint(p, all) || c.changed
					}
				}
			}
			switch n.Args[0].Lit() {
			case "alias":
				c.learnAliases(n)
			case "getopts":
				// getopts reads the positional parameters (its own
				// arguments may not hold data) and puts an option's
				// argument in OPTARG: where they hold data, so does it.
				var all map[string]bool
				for _, p := range positionalParams {
					if roots, ok := c.tainted[p]; ok {
						if all == nil {
							all = map[string]bool{}
						}
						for r := range roots {
							all[r] = true
						}
					}
				}
				if all != nil {
					c.changed = c.taint("OPTARG", all) || c.changed
				}
			case "read", "mapfile", "readarray":
				// Input is data: where the script holds data, the
				// variables read hold data too.
				if len(c.occs) == 0 && len(c.tainted) == 0 {
					break
				}
				for _, w := range n.Args[1:] {
					if l := w.Lit(); l != "" && !strings.HasPrefix(l, "-") {
						c.changed = c.taint(l, map[string]bool{}) || c.changed
					}
				}
			case "printf":
				if len(n.Args) < 3 {
					break
				}
				for i, w := range n.Args[1 : len(n.Args)-1] {
					if w.Lit() == "-v" {
						var all map[string]bool
						for _, x := range n.Args[i+3:] {
							for r := range c.wordTaint(x) {
								if all == nil {
									all = map[string]bool{}
								}
								all[r] = true
							}
						}
						if all != nil {
							c.changed = c.taint(n.Args[i+2].Lit(), all) || c.changed
						}
					}
				}
			}
		}
		return true
	}
	c.funcs, c.funcDecls = nil, nil
	for c.pass, c.changed = 0, true; c.changed; c.pass++ {
		c.changed = false
		syntax.Walk(c.file, visit)
	}
}

// check runs both passes.
func (c *checker) check() error {
	c.learn()
	c.err, c.stack = nil, c.stackBuf[:0]
	syntax.Walk(c.file, func(n syntax.Node) bool {
		if n == nil {
			c.stack = c.stack[:len(c.stack)-1]
			return true
		}
		if c.err == nil {
			c.err = c.node(n, c.stack)
		}
		if c.err == nil {
			c.err = c.streamNode(n)
		}
		c.stack = append(c.stack, n)
		return true
	})
	if err := c.err; err != nil {
		return err
	}
	for k, o := range c.occs {
		if !c.found[k] {
			return c.notExpanded(o)
		}
	}
	return nil
}

func phErr(o occurrence, format string, args ...any) error {
	return fmt.Errorf("placeholder {{%s}} %s", o.ph.Path, fmt.Sprintf(format, args...))
}

// dataErr names the data that stands where it must not: a placeholder,
// or a variable assigned from one.
func (c *checker) dataErr(pe *syntax.ParamExp, format string, args ...any) error {
	if k := c.occurrenceOf(pe); k >= 0 {
		return phErr(c.occs[k], format, args...)
	}
	return fmt.Errorf("$%s, which holds %s, %s", pe.Param.Value, c.describeRoots(c.roots(pe)), fmt.Sprintf(format, args...))
}

func (c *checker) describeRoots(roots map[string]bool) string {
	var names []string
	for r := range roots {
		if i := slices.IndexFunc(c.rootOccs, func(o occurrence) bool { return o.name == r }); i >= 0 {
			names = append(names, "{{"+c.rootOccs[i].ph.Path+"}}")
		} else {
			names = append(names, "env "+r)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "data read from input"
	}
	for i, n := range names {
		if strings.HasPrefix(n, "env command[") {
			names[i] = n[len("env "):] // an element of the list form
		}
	}
	return "data from " + strings.Join(names, ", ")
}

// notExpanded explains why the parser did not see a placeholder as a
// variable reference.
func (c *checker) notExpanded(o occurrence) error {
	why := "where the shell would not expand it"
	syntax.Walk(c.file, func(n syntax.Node) bool {
		if n == nil || !contains(n, o.off) {
			return n != nil
		}
		switch n := n.(type) {
		case *syntax.SglQuoted:
			if n.Dollar {
				why = "inside $'...' would not be expanded; remove the quotes"
			} else {
				why = "inside single quotes would not be expanded; remove the quotes"
			}
		case *syntax.Comment:
			why = "" // harmless
		case *syntax.Redirect:
			if n.Hdoc != nil && contains(n.Hdoc, o.off) && quotedDelim(n.Word) {
				why = "inside a here-document with a quoted delimiter would not be expanded; unquote the delimiter"
			}
		case *syntax.Lit:
			if i := o.off - int(n.Pos().Offset()); i > 0 && i <= len(n.Value) && n.Value[i-1] == '\\' {
				why = "right after a backslash: the backslash would change the reference"
			}
		case *syntax.ParamExp:
			if n.Short && n.Param != nil && n.Param.Value == "$" {
				why = "right after '$': the '$' would change the reference"
			}
		}
		return true
	})
	if why == "" {
		return nil
	}
	return phErr(o, "%s", why)
}

func contains(n syntax.Node, off int) bool {
	if n == nil || !n.Pos().IsValid() {
		return false
	}
	return int(n.Pos().Offset()) <= off && off < int(n.End().Offset())
}

// arithmetic reports whether child, a child of parent, is evaluated as
// an arithmetic expression, and names the context.
func arithmetic(parent, child syntax.Node) string {
	off := int(child.Pos().Offset())
	switch p := parent.(type) {
	case *syntax.ArithmExp:
		if p.Bracket {
			return "inside $[...], which bash evaluates as arithmetic (and runs commands from)"
		}
		return "inside $((...)), which bash evaluates as arithmetic (and runs commands from)"
	case *syntax.ArithmCmd:
		return "inside ((...)), which bash evaluates as arithmetic"
	case *syntax.LetClause:
		return "an argument of let, which bash evaluates as arithmetic"
	case *syntax.CStyleLoop:
		return "inside for ((...)), which bash evaluates as arithmetic"
	case *syntax.ParamExp:
		if p.Index != nil && contains(p.Index, off) {
			return "in an array index ${a[...]}, which bash evaluates as arithmetic"
		}
		if p.Slice != nil && (contains(p.Slice.Offset, off) || contains(p.Slice.Length, off)) {
			return "in a substring offset ${s:...}, which bash evaluates as arithmetic"
		}
	case *syntax.Assign:
		if p.Index != nil && contains(p.Index, off) {
			return "in an array index a[...]=, which bash evaluates as arithmetic"
		}
	case *syntax.ArrayElem:
		if p.Index != nil && contains(p.Index, off) {
			return "in an array index ([...]=), which bash evaluates as arithmetic"
		}
	case *syntax.BinaryTest:
		if p.Op >= syntax.TsEql && p.Op <= syntax.TsGtr {
			return "an operand of [[ ... " + p.Op.String() + " ... ]], which bash evaluates as arithmetic"
		}
	case *syntax.UnaryTest:
		if p.Op == syntax.TsVarSet || p.Op == syntax.TsRefVar {
			return "the variable name of [[ " + p.Op.String() + " ... ]], whose subscript bash evaluates"
		}
	}
	return ""
}

// arithInner reports whether n is an operator inside an arithmetic
// expression.
func arithInner(n syntax.Node) bool {
	switch n.(type) {
	case *syntax.BinaryArithm, *syntax.UnaryArithm, *syntax.ParenArithm:
		return true
	}
	return false
}

var identRE = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// taintedName returns a name in w's literal text that is a variable
// holding data, for where bash evaluates w as arithmetic; "" if none.
func (c *checker) taintedName(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	var found string
	syntax.Walk(w, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.CmdSubst, *syntax.ParamExp:
			return false // checked where they stand
		}
		l, ok := n.(*syntax.Lit)
		if !ok || found != "" {
			return found == ""
		}
		for _, id := range identRE.FindAllString(l.Value, -1) {
			if _, t := c.tainted[id]; t {
				found = id
				return false
			}
		}
		return true
	})
	return found
}

// node checks one node with its ancestors.
func (c *checker) node(n syntax.Node, stack []syntax.Node) error {
	switch n := n.(type) {
	case *syntax.Word:
		// A bare name in arithmetic is a variable whose value bash
		// evaluates again.
		if len(stack) == 0 {
			return nil
		}
		j := len(stack) - 1
		for j > 0 && arithInner(stack[j]) {
			j--
		}
		child := syntax.Node(n)
		if j+1 < len(stack) {
			child = stack[j+1]
		}
		why := arithmetic(stack[j], child)
		if why == "" && arithInner(stack[len(stack)-1]) {
			why = "inside an arithmetic expression"
		}
		if why != "" {
			if id := c.taintedName(n); id != "" {
				return fmt.Errorf("$%s, which holds %s, is used %s", id, c.describeRoots(c.tainted[id]), why)
			}
		}
	case *syntax.Assign:
		if n.Name != nil {
			t := c.wordTaint(n.Value)
			if t == nil {
				t = c.wordTaint(n.Array)
			}
			return c.assignment(n.Name.Value, n.Value, t)
		}
	case *syntax.DeclClause:
		for _, a := range n.Args {
			if a.Naked && a.Name == nil {
				if t := c.wordTaint(a.Value); t != nil {
					return fmt.Errorf("%s stands as a name or option of %s, which bash would read as a variable name (its subscript is evaluated)", c.describeRoots(t), n.Variant.Value)
				}
				if l := a.Value.Lit(); strings.HasPrefix(l, "-") && strings.ContainsRune(l, 'n') {
					for _, b := range n.Args {
						if t := c.wordTaint(b.Value); t != nil {
							return fmt.Errorf("%s is assigned to a name reference (%s -n), which bash reads as a variable name", c.describeRoots(t), n.Variant.Value)
						}
					}
				}
			}
		}
	case *syntax.ParamExp:
		if name, w := assigningExp(n); w != nil {
			if err := c.assignment(name, w, c.wordTaint(w)); err != nil {
				return err
			}
		}
		return c.paramExp(n, stack)
	case *syntax.Stmt:
		if err := c.feedsDataFile(n); err != nil {
			return err
		}
		feeds := func(r *syntax.Redirect) bool {
			return r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc || r.Op == syntax.WordHdoc || r.Op == syntax.RdrIn
		}
		// Whether the command runs its input as code is asked first:
		// it is cheaper than finding the data fed to it, and most do not.
		if !slices.ContainsFunc(n.Redirs, feeds) {
			return nil
		}
		what := c.readsInput(n.Cmd)
		if what == "" {
			return nil
		}
		var fed map[string]bool // nil until data is found
		for _, r := range n.Redirs {
			if feeds(r) {
				for _, t := range []map[string]bool{c.wordTaint(r.Word), c.wordTaint(r.Hdoc)} {
					if t != nil && fed == nil {
						fed = map[string]bool{} // data read from input has no root
					}
					for x := range t {
						if fed == nil {
							fed = map[string]bool{}
						}
						fed[x] = true
					}
				}
			}
		}
		if fed != nil {
			return fmt.Errorf("%s is fed to %s on its standard input, which it runs as code", c.describeRoots(fed), what)
		}
	case *syntax.BinaryCmd:
		if n.Op != syntax.Pipe && n.Op != syntax.PipeAll {
			return nil
		}
		// As above: whether it runs its input first, then the data (a
		// walk of the whole left side).
		if what := c.readsInput(n.Y.Cmd); what != "" {
			if fed := c.wordTaint(n.X); fed != nil {
				return fmt.Errorf("%s is piped into %s, which runs its standard input as code", c.describeRoots(fed), what)
			}
			if c.holdsData() {
				if culprit := c.opaqueOutput(n.X); culprit != "" {
					return c.opaqueErr(culprit, "is piped into "+what+", which runs its standard input as code")
				}
			}
		}
	case *syntax.CallExpr:
		ci := c.call(n)
		if err := c.derivedCall(ci); err != nil {
			return err
		}
		if err := c.runsDataFile(ci); err != nil {
			return err
		}
		for _, script := range ci.rules.scripts {
			if err := c.nested(script, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// readsInput names the command of cmd that runs the standard input cmd
// is given as code, or returns "". A compound command ({ sh; }, (sh),
// if, while, a pipeline) passes its input on to the commands in it: any
// of them that does not read another input (<, <<, <<<, <&) and runs
// what it reads as code is named.
func (c *checker) readsInput(cmd syntax.Command) string {
	if cmd == nil {
		return "" // a redirection alone: < f, $(< f)
	}
	if ce, ok := cmd.(*syntax.CallExpr); ok {
		return c.readsCode(ce)
	}
	what := ""
	syntax.Walk(cmd, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			return false
		case *syntax.Stmt:
			if what != "" {
				return false
			}
			if ownInput(n) {
				return false // its input is another
			}
			if ce, ok := n.Cmd.(*syntax.CallExpr); ok {
				what = c.readsCode(ce)
				return false
			}
		}
		return what == ""
	})
	return what
}

// assigningExp returns the variable an expansion ${v:=word} or
// ${v=word} assigns word to, and the word; nil for other expansions.
func assigningExp(pe *syntax.ParamExp) (string, *syntax.Word) {
	if pe.Param == nil || pe.Exp == nil || pe.Exp.Word == nil || pe.Exp.Op != syntax.AssignUnset && pe.Exp.Op != syntax.AssignUnsetOrNull {
		return "", nil
	}
	return pe.Param.Value, pe.Exp.Word
}

// assignment checks the assignment of value, which holds the data
// roots t (nil if none), to the variable name: data may not go in an
// integer variable or one programs read as configuration, nor the name
// of a variable holding data in an integer variable's value.
func (c *checker) assignment(name string, value *syntax.Word, t map[string]bool) error {
	if t != nil {
		if c.intVars[name] {
			return fmt.Errorf("%s, assigned %s, is an integer variable (declare -i), whose value bash evaluates as arithmetic", name, c.describeRoots(t))
		}
	}
	if c.intVars[name] && t == nil {
		// A name in an integer variable's value is a variable
		// bash evaluates: declare -i max=limit.
		if id := c.taintedName(value); id != "" {
			return fmt.Errorf("%s is assigned the name %s, which holds %s; %s is an integer variable (declare -i), whose value bash evaluates as arithmetic", name, id, c.describeRoots(c.tainted[id]), name)
		}
	}
	if t != nil {
		if why := DangerousVar(name); why != "" {
			return fmt.Errorf("%s, assigned %s, %s", name, c.describeRoots(t), why)
		}
	}
	return nil
}

// nested checks the script an inner shell runs (sh -c 'script', eval
// 'code') with the variables that hold data in the outer one, and its
// positional parameters holding the data of the arguments after the
// script (sh -c 'script' sh ARGS).
func (c *checker) nested(script innerScript, ce *syntax.CallExpr) error {
	tainted, derived := c.tainted, c.derived
	if script.argv >= 0 && script.argv < len(ce.Args) {
		var roots map[string]bool
		for _, w := range ce.Args[script.argv:] {
			t := c.wordTaint(w)
			if t != nil && roots == nil {
				roots = map[string]bool{}
			}
			for r := range t {
				roots[r] = true
			}
		}
		if roots != nil {
			tainted, derived = withPositional(tainted, derived, roots, fmt.Sprintf("passed to the inner shell as a positional parameter at line %d", ce.Pos().Line()))
		}
	}
	return c.nestedWith(script.text, tainted, derived)
}

// nestedWith checks an inner shell's script that sees the variables
// tainted and derived.
func (c *checker) nestedWith(script string, tainted map[string]map[string]bool, derived map[string]string) error {
	opt, err := checkInnerScript(script, tainted, derived, c.dataFiles, c.rootOccs, c.depth+1)
	for r, where := range opt {
		c.setOptionAt(r, where)
	}
	return err
}

// setOptionAt records that data from root r may begin an argument at
// where, unless a place was recorded for r already.
func (c *checker) setOptionAt(r, where string) {
	if c.optionAt[r] != "" {
		return
	}
	if c.optionAt == nil {
		c.optionAt = map[string]string{}
	}
	c.optionAt[r] = where
}

// checkInnerScript checks script, run by an inner shell that sees the
// variables in tainted, and returns where data may begin an argument.
func checkInnerScript(script string, tainted map[string]map[string]bool, derived map[string]string, files map[string]dataFile, rootOccs []occurrence, depth int) (map[string]string, error) {
	if depth > 4 {
		return nil, fmt.Errorf("shell scripts nested more than 4 deep")
	}
	_, file, err := joinContinuations(script, nil)
	if err != nil {
		return nil, fmt.Errorf("in the script of an inner shell: %w", err)
	}
	inner := newChecker(file, nil, nil)
	inner.depth = depth
	inner.rootOccs = rootOccs
	for name, roots := range tainted {
		inner.tainted[name] = roots
	}
	for name, why := range derived {
		inner.derive(name, why)
	}
	inner.dataFiles = files
	if err := inner.check(); err != nil {
		return nil, fmt.Errorf("in the script of an inner shell: %w", err)
	}
	return inner.optionAt, nil
}

// paramExp checks a variable reference: where a placeholder stands, how
// to quote it, and where data stands.
func (c *checker) paramExp(pe *syntax.ParamExp, stack []syntax.Node) error {
	k := c.occurrenceOf(pe)
	if k >= 0 {
		c.found[k] = true
		c.quote[k] = needsQuotes(pe, stack)
		o := c.occs[k]
		for i := len(stack) - 1; i >= 0; i-- {
			switch a := stack[i].(type) {
			case *syntax.CmdSubst:
				if a.Backquotes {
					return phErr(o, "inside backquotes: use $(...) instead")
				}
			case *syntax.TestClause:
				return phErr(o, "inside [[ ... ]], where bash evaluates some operands as arithmetic or variable names; use [ ... ] with the value quoted")
			case *syntax.Redirect:
				if (a.Op == syntax.Hdoc || a.Op == syntax.DashHdoc) && contains(a.Word, o.off) {
					return phErr(o, "in a here-document delimiter")
				}
			case *syntax.CoprocClause:
				if contains(a.Name, o.off) {
					return phErr(o, "in a coprocess name")
				}
			}
		}
	}
	if !c.isTainted(pe) {
		return nil
	}
	if pe.Excl {
		return c.dataErr(pe, "is used as ${!...}, an indirect reference whose subscript bash evaluates")
	}
	if pe.Exp != nil && pe.Exp.Op == syntax.OtherParamOps && pe.Exp.Word != nil && strings.Contains(pe.Exp.Word.Lit(), "P") {
		return c.dataErr(pe, "is expanded with @P, which runs command substitutions in it")
	}
	for i := len(stack) - 1; i >= 0; i-- {
		child := syntax.Node(pe)
		if i+1 < len(stack) {
			child = stack[i+1]
		}
		if why := arithmetic(stack[i], child); why != "" {
			return c.dataErr(pe, "is %s", why)
		}
		ce, ok := stack[i].(*syntax.CallExpr)
		if !ok {
			continue
		}
		w, ok := child.(*syntax.Word)
		if !ok {
			continue
		}
		ci := c.call(ce)
		for j, a := range ce.Args {
			if a != w {
				continue
			}
			if why, bad := ci.rules.refused(j); bad {
				return c.dataErr(pe, "is %s", why)
			}
			if ci.rules.optionPosition(ci.args, j) && leads(w, pe) {
				if why := c.derived[pe.Param.Value]; why != "" && !optionHarmless(ci.args, ci.rules, j) {
					return derivedOptionErr(ci, j, fmt.Sprintf("$%s, which holds %s, %s,", pe.Param.Value, c.describeRoots(c.roots(pe)), why))
				}
				where := ""
				for r := range c.roots(pe) {
					if c.optionAt[r] == "" {
						if where == "" {
							where = ci.rules.where(ci.args, j)
						}
						c.setOptionAt(r, where)
					}
				}
			}
		}
	}
	return c.splitOrTransform(pe, stack)
}

// splitOrTransform refuses data a variable holds where its expansion
// escapes the run-time option check: unquoted in a word that bash splits
// into fields and globs (an argument, a for list, an array element, so
// "./... -exec=x" becomes two arguments), and transformed by a
// stripping, replacing, slicing or case operator at the start of an
// argument before "--" or of a value kept for later (so
// "refs/heads/--output=F" becomes "--output=F" after the check).
func (c *checker) splitOrTransform(pe *syntax.ParamExp, stack []syntax.Node) error {
	if c.occurrenceOf(pe) >= 0 {
		return nil // a placeholder: written "${HOOKD_Pn}" where unquoted
	}
	var w *syntax.Word
	var parent syntax.Node
	wi := -1
	for i := len(stack) - 1; i >= 0 && parent == nil; i-- {
		switch a := stack[i].(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.Stmt, *syntax.ArithmExp, *syntax.TestClause:
			return nil
		case *syntax.Word:
			if i > 0 {
				switch stack[i-1].(type) {
				case *syntax.CallExpr, *syntax.WordIter, *syntax.ArrayElem, *syntax.Assign:
					w, parent, wi = a, stack[i-1], i
				}
			}
		}
	}
	if w == nil {
		return nil
	}
	_, isAssign := parent.(*syntax.Assign)
	alternate := pe.Exp != nil && (pe.Exp.Op == syntax.AlternateUnset || pe.Exp.Op == syntax.AlternateUnsetOrNull)
	quoted := false
	for _, a := range stack[wi:] {
		if _, ok := a.(*syntax.DblQuoted); ok {
			quoted = true
		}
	}
	if !isAssign && !quoted && !alternate && !pe.Length {
		return c.dataErr(pe, "is expanded unquoted, where the shell splits it into several words and expands globs (so one value can become an option and more arguments); quote it: \"$%s\"", pe.Param.Value)
	}
	if !transformed(pe) || !leads(w, pe) {
		return nil
	}
	if ce, ok := parent.(*syntax.CallExpr); ok {
		ci := c.call(ce)
		for j, a := range ce.Args {
			if a == w && !ci.rules.optionPosition(ci.args, j) {
				return nil
			}
		}
	}
	return c.dataErr(pe, "is transformed by ${%s%s...} where its result may begin an argument: the run-time check of a leading '-' sees only the value before the change; put the argument after \"--\" or literal text before it", pe.Param.Value, transformOp(pe))
}

// transformed reports whether pe changes the value it expands so that
// a '-' inside it may come to lead: prefix or suffix removal,
// replacement, a substring, or a case change.
func transformed(pe *syntax.ParamExp) bool {
	if pe.Repl != nil || pe.Slice != nil {
		return true
	}
	if pe.Exp == nil {
		return false
	}
	switch pe.Exp.Op {
	case syntax.RemSmallPrefix, syntax.RemLargePrefix, syntax.RemSmallSuffix, syntax.RemLargeSuffix,
		syntax.UpperFirst, syntax.UpperAll, syntax.LowerFirst, syntax.LowerAll:
		return true
	case syntax.OtherParamOps: // ${v@U}, ${v@u}, ${v@L}
		return pe.Exp.Word != nil && strings.ContainsAny(pe.Exp.Word.Lit(), "UuL")
	}
	return false
}

func transformOp(pe *syntax.ParamExp) string {
	switch {
	case pe.Repl != nil:
		return "/"
	case pe.Slice != nil:
		return ":"
	}
	return pe.Exp.Op.String()
}

// readsCode names the command ce when it would run what it reads on its
// standard input as code: a shell or an interpreter with no script named,
// source /dev/stdin, or eval and sh -c with code built from $(...) (which
// may read it).
func (c *checker) readsCode(ce *syntax.CallExpr) string {
	ci := c.call(ce)
	s := 0
	for _, st := range ci.rules.starts {
		s = max(s, st)
	}
	if what := xargsSplice(ci.args, ci.rules); what != "" {
		return what
	}
	if what := xargsAppend(ci.args, ci.rules); what != "" {
		return what
	}
	if what := c.wrapperReadsInput(ci); what != "" {
		return what
	}
	if s >= len(ci.args) {
		return ""
	}
	if !ci.args[s].isLit {
		return "a command named by an expansion"
	}
	name := path.Base(ci.args[s].lit)
	rest := findExecArgs(ci, s)
	if v, ok := c.alias(name); ok && s == 0 {
		if what := c.scriptReadsInput(v); what != "" {
			return name + " (an alias running " + what + ")"
		}
	}
	if what := programFromStdin(name, rest, ci.ce.Args[s+1:]); what != "" {
		return what
	}
	if runsInput(name, rest) {
		return name + " (its program runs commands from what it reads)"
	}
	if (shells[name] || interpreters[name] != nil || name == "source" || name == ".") && inputSubst(ci.ce.Args[s+1:]) {
		return name + " (its script comes from <(...), which reads the same standard input)"
	}
	stdin := func(x callArg) bool {
		return x.isLit && namesStdin(x.lit)
	}
	operand := func(x callArg) bool {
		return !x.isLit || !strings.HasPrefix(x.lit, "-") && !strings.HasPrefix(x.lit, "+")
	}
	if c.funcDecls[name] != nil && s == 0 {
		if what := c.funcReadsInput(name); what != "" {
			return name + " (a function running " + what + ")"
		}
		return ""
	}
	switch {
	case name == "eval":
		code := make([]string, 0, len(rest))
		for _, x := range rest {
			if !x.isLit {
				return "eval (its code is built from expansions)"
			}
			code = append(code, x.lit)
		}
		if what := c.scriptReadsInput(strings.Join(code, " ")); what != "" {
			return "eval (its code runs " + what + ")"
		}
	case name == "source" || name == ".":
		if len(rest) > 0 && stdin(rest[0]) {
			return name + " " + rest[0].lit
		}
	case shells[name] && name != "busybox" && name != "toybox":
		for i := 0; i < len(rest); i++ {
			x := rest[i]
			if x.isLit && (matchOpt(x.lit, []string{"-c"}) || x.lit == "--command") {
				for _, y := range rest[i+1:] {
					if operand(y) {
						if !y.isLit {
							return name + " -c (its script is built from expansions)"
						}
						if what := c.scriptReadsInput(y.lit); what != "" {
							return name + " -c (its script runs " + what + ")"
						}
						return ""
					}
				}
				return ""
			}
			if x.isLit && (x.lit == "-o" || x.lit == "+o" || x.lit == "-O" || x.lit == "+O" || x.lit == "--rcfile" || x.lit == "--init-file") {
				i++ // the option's value, not a script
				continue
			}
			if x.isLit && !strings.HasPrefix(x.lit, "--") && matchOpt(x.lit, []string{"-s"}) {
				return name // -s: the script is read from standard input, the operands are its parameters
			}
			if operand(x) && !stdin(x) {
				return ""
			}
		}
		return name
	case interpreters[name] != nil:
		for _, x := range rest {
			if x.isLit && matchOpt(strings.SplitN(x.lit, "=", 2)[0], interpreters[name]) {
				return ""
			}
			if operand(x) && !stdin(x) {
				return ""
			}
		}
		return name
	case stdinCode(name, rest):
		return name
	}
	return ""
}

// call returns what the command rules say of ce.
func (c *checker) call(ce *syntax.CallExpr) *callInfo {
	if c.callIndex != nil {
		if ci, ok := c.callIndex[ce]; ok {
			return ci
		}
	} else {
		for _, ci := range c.calls {
			if ci.ce == ce {
				return ci
			}
		}
	}
	ci := &callInfo{ce: ce}
	if len(ce.Args) <= len(ci.argBuf) {
		ci.args = ci.argBuf[:len(ce.Args)]
	} else {
		ci.args = make([]callArg, len(ce.Args))
	}
	for i, w := range ce.Args {
		a := &ci.args[i]
		a.lit, a.isLit = wordLit(w)
		for _, p := range w.Parts {
			l, ok := p.(*syntax.Lit)
			if !ok {
				break
			}
			a.prefix += l.Value
		}
		if t := c.wordTaint(w); t != nil {
			a.tainted = true
			a.isLit = false
		}
	}
	ci.rules = &ci.own
	ci.rules.analyze(ci.args)
	c.calls = append(c.calls, ci)
	switch {
	case c.callIndex != nil:
		c.callIndex[ce] = ci
	case len(c.calls) > searchOccs:
		c.callIndex = make(map[*syntax.CallExpr]*callInfo, 2*len(c.calls))
		for _, x := range c.calls {
			c.callIndex[x.ce] = x
		}
	}
	return ci
}

// wordLit returns the text of a word that holds no expansion, with its
// quotes removed.
func wordLit(w *syntax.Word) (string, bool) {
	if len(w.Parts) == 1 {
		// Most words are one piece of text: the text is the answer the
		// loop below would build.
		switch p := w.Parts[0].(type) {
		case *syntax.Lit:
			if strings.IndexByte(p.Value, '\\') < 0 {
				return p.Value, true
			}
		case *syntax.SglQuoted:
			if !p.Dollar {
				return p.Value, true
			}
		}
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v := p.Value
			for i := 0; i < len(v); i++ {
				if v[i] == '\\' && i+1 < len(v) {
					i++
				}
				b.WriteByte(v[i])
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				// Inside double quotes a backslash escapes only $, `,
				// ", \ and a newline: sh -c "echo \"\$V\"" runs
				// echo "$V".
				v := l.Value
				for i := 0; i < len(v); i++ {
					if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("$`\"\\\n", v[i+1]) >= 0 {
						i++
						if v[i] == '\n' {
							continue
						}
					}
					b.WriteByte(v[i])
				}
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// leads reports whether pe's value may begin the word w: nothing but
// empty quotes and data come before it.
func leads(w *syntax.Word, pe *syntax.ParamExp) bool { return leadsAt(w, pe) }

// leadsAt reports whether the value of n, an expansion in w, may begin
// w: nothing but empty quotes and data come before it.
func leadsAt(w *syntax.Word, n syntax.Node) bool {
	off := n.Pos().Offset()
	var first func(parts []syntax.WordPart) bool
	first = func(parts []syntax.WordPart) bool {
		for _, p := range parts {
			if p.Pos().Offset() > off {
				return false
			}
			switch p := p.(type) {
			case *syntax.Lit:
				if p.Value != "" {
					return false
				}
			case *syntax.SglQuoted:
				if p.Value != "" {
					return false
				}
			case *syntax.DblQuoted:
				if contains(p, int(off)) {
					return first(p.Parts)
				}
				if len(p.Parts) > 0 {
					return false
				}
			default:
				// An expansion: its value may be empty, so what
				// follows may lead too. pe itself, or one holding it.
				if contains(p, int(off)) {
					return true
				}
			}
		}
		return false
	}
	return first(w.Parts)
}

// needsQuotes reports whether a placeholder reference stands unquoted,
// where "${HOOKD_Pn}" keeps it one word; inside double quotes and in an
// unquoted here-document it is written bare.
func needsQuotes(pe *syntax.ParamExp, stack []syntax.Node) bool {
	off := int(pe.Pos().Offset())
	for i := len(stack) - 1; i >= 0; i-- {
		switch a := stack[i].(type) {
		case *syntax.DblQuoted:
			return false
		case *syntax.Redirect:
			if a.Hdoc != nil && contains(a.Hdoc, off) {
				return false
			}
			return true
		case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.Stmt:
			return true
		}
	}
	return true
}

// DangerousVar says why data must not be assigned to a variable: the
// name is one that programs read as configuration (what to run or load,
// their options, where their settings live). A denylist of patterns, so
// that whole families are covered (*FLAGS, *_OPTIONS, GIT_*, PYTHON*...);
// it cannot name every program's variables, so a name it lets through is
// not a promise that no program reads it.
func DangerousVar(name string) string {
	const why = "is a name programs read as configuration (what to run or load, or their options)"
	switch name {
	case "PATH", "ENV", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "IFS", "SHELLOPTS", "BASHOPTS",
		"GLOBIGNORE", "HOME", "ZDOTDIR", "INPUTRC", "PAGER", "EDITOR", "VISUAL", "BROWSER", "SHELL",
		"CC", "CXX", "CPP", "LD", "AR", "AS", "NM", "RANLIB", "STRIP", "OBJCOPY", "OBJDUMP", "FC", "F77",
		"YACC", "LEX", "GZIP", "BZIP", "BZIP2", "TMPDIR", "TMP", "TEMP", "KUBECONFIG", "MAILPATH",
		"WGETRC", "CURL_HOME", "TERMINFO", "LOCPATH", "TZDIR", "HOSTALIASES", "VIMINIT", "EXINIT",
		"MYVIMRC", "LUA_INIT", "PGSERVICEFILE", "PGPASSFILE", "CVS_RSH", "RSYNC_RSH", "VIRTUAL_ENV":
		return why
	}
	for _, p := range []string{"LD_", "DYLD_", "GIT_", "SSH_", "SUDO_", "BASH_", "PYTHON", "PERL", "RUBY",
		"NODE_", "NPM_", "YARN_", "PNPM_", "DENO_", "BUN_", "CARGO_", "RUST", "GO", "CGO_", "JAVA", "_JAVA",
		"JDK_", "MAVEN_", "GRADLE_", "SBT_", "MAKE", "XZ_", "ZSTD_", "LESS", "TAR_", "DOCKER_", "KUBE",
		"HELM_", "AWS_", "XDG_", "GEM_", "BUNDLE_", "PIP_", "POETRY_", "CONDA_", "COMPOSER_", "PHP",
		"CCACHE_", "DISTCC_", "GCC_", "GCONV_", "LUA_", "R_", "PG", "MYSQL", "GNUPG", "GPG_"} {
		if strings.HasPrefix(name, p) {
			return why
		}
	}
	for _, p := range []string{"FLAGS", "OPTS", "OPT", "OPTIONS", "_WRAPPER", "PATH", "HOME", "INIT", "LIB",
		"ASKPASS", "PAGER", "EDITOR", "SHELL", "_COMMAND", "_CMD", "_RSH"} {
		if strings.HasSuffix(name, p) {
			return why
		}
	}
	if strings.Contains(name, "CONF") {
		return why
	}
	// Read in lower case too: npm takes npm_config_*, curl and others http_proxy.
	up := strings.ToUpper(name)
	if strings.HasPrefix(up, "NPM_CONFIG_") || strings.HasSuffix(up, "_PROXY") || strings.Contains(up, "CONF") {
		return why
	}
	return ""
}
