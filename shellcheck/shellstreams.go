package shellcheck

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// This file holds the checker's rules for data that travels as a stream
// rather than as a word: through a program's standard output (the
// environment printed back by printenv, env, set or declare -p; an
// inner shell or a function that prints data), through a file
// descriptor (exec 3<<< …; sh <&3, /dev/fd/3), and through a coprocess
// or a >(…) process substitution that runs what is written to it.
//
// The rules apply only where the script holds data (a placeholder that
// is not a literal, or a tainted env entry):
//
//   - A command known to print data is a source of data: its output
//     (a $(…), the left side of a pipe) holds the data roots it may
//     print, and every word rule applies to it. See emitted.
//   - What a code reader reads (the left side of a pipe into sh, the
//     words fed to it, an argument that is code: eval "$(…)", sh -c
//     "$(…)", a command name $(…)) must come from commands whose
//     output is known: echo, printf, cat and plain text filters
//     (safeOutput). Any other program may print the environment, which
//     holds the data, so it is refused there. See opaqueOutput.
//   - hookd does not follow what a descriptor holds: a code reader may
//     not read its standard input from another descriptor (sh <&3), no
//     word may name a descriptor by path (/dev/fd/3, /proc/self/fd/3)
//     or a process's environment (/proc/self/environ), and exec may not
//     redirect the script's own standard input. See streamNode.
//   - A coprocess or a >(…) whose command runs its input as code is
//     refused: what the script writes to it would be code.

// holdsData reports whether any variable of the script holds data.
func (c *checker) holdsData() bool { return len(c.tainted) > 0 }

// allRoots returns every data root the script holds: what a program that
// prints its environment (or reads a descriptor holding data) may print.
func (c *checker) allRoots() map[string]bool {
	out := map[string]bool{}
	for _, roots := range c.tainted {
		for r := range roots {
			out[r] = true
		}
	}
	return out
}

// envListers are the builtins that print variables with their values
// when called with no name (declare, set) or with -p.
var envListers = map[string]bool{
	"declare": true, "typeset": true, "export": true, "readonly": true, "local": true,
}

// envReaders are the programs whose code (a literal argument) is looked
// at for a use of the environment: interpreters, awk and jq.
func envReader(name string) bool {
	switch name {
	case "awk", "gawk", "mawk", "nawk", "jq", "gojq", "yq":
		return true
	}
	return interpreters[name] != nil
}

// envWords mark a program's code that reads the environment: os.environ,
// getenv, $ENV{…}, ENV[…], ENVIRON[…], process.env, jq's env and $ENV.
var envWords = []string{"ENV", "environ", "getenv", "process.env", "env."}

// emitted returns the data roots the command n may print (nil if none
// known): printenv, env and envsubst, set and declare/export -p (the
// environment and the variables), an interpreter, awk or jq whose code
// reads the environment, an inner shell or eval whose script expands
// data, a function of the script whose body does, and a command that
// reads a descriptor (<&3, /dev/fd/3) or /proc/…/environ. n is a node
// met while walking a command's output (a $(…), a pipe's left side).
func (c *checker) emitted(n syntax.Node) map[string]bool {
	if !c.holdsData() {
		return nil
	}
	switch n := n.(type) {
	case *syntax.DeclClause:
		if envListers[n.Variant.Value] && listsVars(n) {
			return c.allRoots()
		}
	case *syntax.Stmt:
		for _, r := range n.Redirs {
			if readsDescriptor(r) || fdPath(wordText(r.Word)) != "" {
				return c.allRoots()
			}
			if inputRedirect(r) {
				if t := c.dataFileRoots([]*syntax.Word{r.Word}); t != nil {
					return t // $(< f)
				}
			}
		}
	case *syntax.CallExpr:
		return c.callEmits(n)
	}
	return nil
}

// listsVars reports whether a declare, export, … prints variables: it
// names none, or it is given -p.
func listsVars(n *syntax.DeclClause) bool {
	named := false
	for _, a := range n.Args {
		if a.Naked && a.Name == nil && a.Value != nil {
			if l := a.Value.Lit(); strings.HasPrefix(l, "-") && strings.ContainsRune(l, 'p') {
				return true
			}
			continue
		}
		named = true
	}
	return !named
}

// callEmits is emitted for a simple command. It analyzes the command
// afresh rather than with call, whose answers are kept: learn calls it
// while what holds data is still being learnt.
func (c *checker) callEmits(ce *syntax.CallExpr) map[string]bool {
	if len(ce.Args) == 0 {
		return nil
	}
	if t := c.dataFileRoots(ce.Args[1:]); t != nil {
		return t // a command reading a file that holds data: cat f
	}
	args := make([]callArg, len(ce.Args))
	for i, w := range ce.Args {
		args[i].lit, args[i].isLit = wordLit(w)
		if fdPath(wordText(w)) != "" {
			return c.allRoots()
		}
	}
	rules := analyzeCall(args)
	for k, s := range rules.starts {
		if s >= len(args) || !args[s].isLit {
			continue
		}
		name := path.Base(args[s].lit)
		rest := args[s+1:]
		last := k == len(rules.starts)-1
		switch {
		case name == "printenv":
			return c.printenvRoots(rest)
		case name == "env" && last, name == "envsubst":
			return c.allRoots() // env with no command prints the environment
		case name == "set" && len(rest) == 0:
			return c.allRoots()
		case envListers[name] && last:
			return c.allRoots() // builtin declare -p
		case envReader(name):
			for _, a := range rest {
				if a.isLit && containsAny(a.lit, envWords) {
					return c.allRoots()
				}
			}
		}
		if decls := c.funcDecls[name]; decls != nil && s == 0 {
			return c.funcEmits(name, decls)
		}
	}
	var out map[string]bool
	for _, script := range rules.scripts {
		for r := range c.scriptEmits(script.text) {
			if out == nil {
				out = map[string]bool{}
			}
			out[r] = true
		}
	}
	return out
}

// printenvRoots returns what printenv NAME… may print: the data the
// variables named hold, or all of it when it names none or names one
// with an expansion.
func (c *checker) printenvRoots(names []callArg) map[string]bool {
	var out map[string]bool
	named := false
	for _, a := range names {
		if a.isLit && strings.HasPrefix(a.lit, "-") {
			continue
		}
		if !a.isLit {
			return c.allRoots()
		}
		named = true
		roots, ok := c.tainted[a.lit] // roots of a variable named as a word
		if !ok {
			if _, ph := placeholderNum(a.lit); !ph {
				continue
			}
			roots = map[string]bool{a.lit: true}
		}
		if out == nil {
			out = map[string]bool{}
		}
		for r := range roots {
			out[r] = true
		}
	}
	if !named {
		return c.allRoots()
	}
	return out
}

// funcEmits returns what a call of the script's function name may print:
// the data its bodies expand or print.
func (c *checker) funcEmits(name string, decls []*syntax.Stmt) map[string]bool {
	if c.inFunc[name] {
		return nil // recursion: what it prints is found at the outer call
	}
	if c.inFunc == nil {
		c.inFunc = map[string]bool{}
	}
	c.inFunc[name] = true
	defer delete(c.inFunc, name)
	var out map[string]bool
	for _, body := range decls {
		for r := range c.wordTaint(body) {
			if out == nil {
				out = map[string]bool{}
			}
			out[r] = true
		}
	}
	return out
}

// scriptEmits returns the data roots an inner shell's script (sh -c
// 'script', eval 'code') expands or prints, with the variables that hold
// data in this one.
func (c *checker) scriptEmits(script string) map[string]bool {
	inner := c.innerChecker(script)
	if inner == nil {
		return c.allRoots()
	}
	inner.learn()
	return inner.wordTaint(inner.file)
}

// innerChecker returns a checker of an inner shell's script that knows
// the variables holding data here, or nil when the script cannot be
// parsed or is nested too deep (the callers then assume the worst).
func (c *checker) innerChecker(script string) *checker {
	if c.depth >= 4 {
		return nil
	}
	_, file, err := joinContinuations(script, nil)
	if err != nil {
		return nil
	}
	inner := newChecker(file, nil, nil)
	inner.depth = c.depth + 1
	inner.rootOccs = c.rootOccs
	for name, roots := range c.tainted {
		inner.tainted[name] = roots
	}
	for name, why := range c.derived {
		inner.derive(name, why)
	}
	inner.dataFiles = c.dataFiles
	return inner
}

// scriptReadsInput names the command of an inner shell's script (sh -c
// 'cat | sh', eval 'sh') that runs the standard input the inner shell is
// given as code, or returns "".
func (c *checker) scriptReadsInput(script string) string {
	inner := c.innerChecker(script)
	if inner == nil {
		return "an inner shell whose script hookd cannot follow"
	}
	inner.learn()
	for _, st := range inner.file.Stmts {
		if ownInput(st) {
			continue
		}
		if what := inner.readsInput(st.Cmd); what != "" {
			return what
		}
	}
	return ""
}

// funcReadsInput names the command in the script's function name that
// runs the standard input the function is given as code, or returns "".
func (c *checker) funcReadsInput(name string) string {
	if c.inFunc[name] {
		return ""
	}
	if c.inFunc == nil {
		c.inFunc = map[string]bool{}
	}
	c.inFunc[name] = true
	defer delete(c.inFunc, name)
	for _, body := range c.funcDecls[name] {
		if ownInput(body) {
			continue
		}
		if what := c.readsInput(body.Cmd); what != "" {
			return what
		}
	}
	return ""
}

// ownInput reports whether a statement reads its standard input from
// elsewhere than what it is given (<, <<, <<<, <&3; not <&0, and not a
// redirection of another descriptor, 3<<< x).
func ownInput(st *syntax.Stmt) bool {
	for _, r := range st.Redirs {
		if inputRedirect(r) {
			if l, ok := wordLit(r.Word); ok && r.Op == syntax.DplIn && l == "0" {
				continue
			}
			return true
		}
	}
	return false
}

// inputSubst reports whether one of words holds an input process
// substitution, <(...): given to a code reader as its script, it may read
// the reader's own standard input (bash <(cat)).
func inputSubst(words []*syntax.Word) bool {
	found := false
	for _, w := range words {
		syntax.Walk(w, func(n syntax.Node) bool {
			if ps, ok := n.(*syntax.ProcSubst); ok && ps.Op == syntax.CmdIn {
				found = true
			}
			return !found
		})
	}
	return found
}

// inputRedirect reports whether r redirects standard input.
func inputRedirect(r *syntax.Redirect) bool {
	if r.N != nil && r.N.Value != "0" {
		return false
	}
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.RdrIn, syntax.DplIn, syntax.RdrInOut:
		return true
	}
	return false
}

// readsDescriptor reports whether r makes standard input a copy of
// another descriptor (<&3, 0<&"$fd", <&3-), which hookd does not follow.
func readsDescriptor(r *syntax.Redirect) bool {
	if r.Op != syntax.DplIn || r.N != nil && r.N.Value != "0" {
		return false
	}
	l, ok := wordLit(r.Word)
	return !ok || l != "-" && l != "0"
}

// wordText returns the text of a word with each expansion written as
// "$": enough to recognise a path such as /dev/fd/$fd.
func wordText(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	if l, ok := wordLit(w); ok {
		return l
	}
	var b strings.Builder
	var parts func([]syntax.WordPart)
	parts = func(ps []syntax.WordPart) {
		for _, p := range ps {
			switch p := p.(type) {
			case *syntax.Lit:
				b.WriteString(p.Value)
			case *syntax.SglQuoted:
				b.WriteString(p.Value)
			case *syntax.DblQuoted:
				parts(p.Parts)
			default:
				b.WriteByte('$')
			}
		}
	}
	parts(w.Parts)
	return b.String()
}

// fdRE matches a path naming an open descriptor (/dev/fd/N,
// /proc/PID/fd/N, /proc/PID/task/TID/fd/N) or a process's environment.
var fdRE = regexp.MustCompile(`/dev/fd/[^/\s]*|/proc/[^\s]*?/fd/[^/\s]*|/proc/[^\s]*?environ`)

// fdPath returns the part of s that names an open descriptor other than
// standard input, output and error by path (/dev/fd/3, /dev/fd/$fd,
// /proc/self/fd/3, /proc/$$/fd/3, the directory /dev/fd/ itself) or a
// process's environment (/proc/self/environ), or "".
func fdPath(s string) string {
	if !strings.Contains(s, "/dev/fd") && !strings.Contains(s, "/proc/") {
		return ""
	}
	if strings.HasSuffix(s, "/dev/fd") {
		return "/dev/fd"
	}
	for _, m := range fdRE.FindAllString(s, -1) {
		n := m[strings.LastIndexByte(m, '/')+1:]
		if strings.HasSuffix(m, "environ") || n != "0" && n != "1" && n != "2" {
			return m
		}
	}
	return ""
}

// mentionsPath reports whether the text of parts may name a descriptor
// or /proc path: it holds "/dev/fd", "/proc/" or "/fd/".
func mentionsPath(parts []syntax.WordPart) bool {
	for _, p := range parts {
		var v string
		switch p := p.(type) {
		case *syntax.Lit:
			v = p.Value
		case *syntax.SglQuoted:
			v = p.Value
		case *syntax.DblQuoted:
			if mentionsPath(p.Parts) {
				return true
			}
			continue
		default:
			continue
		}
		if strings.Contains(v, "/dev/fd") || strings.Contains(v, "/proc/") || strings.Contains(v, "/fd/") {
			return true
		}
	}
	return false
}

// mayRunCommand reports whether parts may hold a command substitution or
// a process substitution: one of them, or an expansion with words inside
// (${v:-$(cmd)}).
func mayRunCommand(parts []syntax.WordPart) bool {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			if mayRunCommand(p.Parts) {
				return true
			}
		case *syntax.ParamExp:
			if p.Exp != nil || p.Repl != nil || p.Index != nil || p.Slice != nil || p.NestedParam != nil {
				return true
			}
		default:
			return true
		}
	}
	return false
}

func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// safeOutput are the programs whose output is their arguments, their
// standard input or the files they name: what they print holds data
// only where those do (which the word rules see).
var safeOutput = map[string]bool{
	"echo": true, "printf": true, "cat": true, "head": true, "tail": true, "sort": true, "uniq": true,
	"tr": true, "cut": true, "grep": true, "egrep": true, "fgrep": true, "wc": true, "true": true,
	"false": true, ":": true, "seq": true, "basename": true, "dirname": true, "tee": true, "rev": true,
	"nl": true, "paste": true, "fold": true, "expand": true, "unexpand": true, "comm": true,
	"join": true, "fmt": true, "column": true, "base64": true, "base32": true, "od": true,
	"test": true, "[": true, "sleep": true, "read": true,
}

// transparent are the wrappers whose output is the wrapped command's.
var transparent = map[string]bool{
	"command": true, "builtin": true, "exec": true, "nohup": true, "nice": true, "timeout": true,
	"stdbuf": true, "env": true, "time": true,
}

// opaqueOutput names a command in n (the left side of a pipe, a word
// fed to a program or run as code) whose output hookd cannot tell free
// of data, or returns "": any program but those of safeOutput, a
// declare or export (which may list variables), a function of the
// script, and a command reading another descriptor.
func (c *checker) opaqueOutput(n syntax.Node) string {
	if n == nil {
		return ""
	}
	what := ""
	syntax.Walk(n, func(n syntax.Node) bool {
		if what != "" {
			return false
		}
		switch n := n.(type) {
		case *syntax.Stmt:
			for _, r := range n.Redirs {
				if readsDescriptor(r) {
					what = fmt.Sprintf("a command reading descriptor %s (line %d)", wordText(r.Word), r.Pos().Line())
				}
				if k, _, ok := c.dataFileOf(r.Word); ok && inputRedirect(r) {
					what = fmt.Sprintf("a command reading %s, a file written with data (line %d)", k, r.Pos().Line())
				}
			}
		case *syntax.DeclClause:
			what = fmt.Sprintf("%s (line %d)", n.Variant.Value, n.Pos().Line())
		case *syntax.CoprocClause, *syntax.FuncDecl:
			what = fmt.Sprintf("a %s (line %d)", nodeKind(n), n.Pos().Line())
		case *syntax.CallExpr:
			if len(n.Args) == 0 {
				break
			}
			for _, w := range n.Args[1:] {
				if k, _, ok := c.dataFileOf(w); ok {
					what = fmt.Sprintf("%s %s, a file written with data (line %d)", n.Args[0].Lit(), k, n.Pos().Line())
					return false
				}
			}
			ci := c.call(n)
			for k, s := range ci.rules.starts {
				if s >= len(ci.args) {
					continue
				}
				a := ci.args[s]
				if !a.isLit {
					what = fmt.Sprintf("a command named by an expansion (line %d)", n.Pos().Line())
					break
				}
				name := path.Base(a.lit)
				last := k == len(ci.rules.starts)-1
				if name == "command" || name == "type" || name == "which" {
					if s+1 < len(ci.args) && ci.args[s+1].isLit && (ci.args[s+1].lit == "-v" || ci.args[s+1].lit == "-V" || ci.args[s+1].lit == "-P") || name == "which" {
						break // command -v NAME prints where a program is
					}
				}
				if last && safeOutput[name] && c.funcDecls[name] == nil {
					continue
				}
				if !last && transparent[name] {
					continue
				}
				what = fmt.Sprintf("%s (line %d)", a.lit, n.Pos().Line())
				break
			}
		}
		return what == ""
	})
	return what
}

func nodeKind(n syntax.Node) string {
	switch n.(type) {
	case *syntax.CoprocClause:
		return "coprocess"
	case *syntax.FuncDecl:
		return "function declaration"
	}
	return "command"
}

// opaqueErr is the error for data-free-looking input to a code reader
// that comes from a program hookd cannot see into.
func (c *checker) opaqueErr(culprit, how string) error {
	return fmt.Errorf("the output of %s %s; the script holds %s, which that program may print (from its environment, a descriptor or a file), and hookd cannot tell: only echo, printf, cat and plain text filters may feed code here", culprit, how, c.describeRoots(c.allRoots()))
}

// streamNode applies the rules of this file to one node; node calls it
// for the kinds it concerns.
func (c *checker) streamNode(n syntax.Node) error {
	if !c.holdsData() {
		return nil
	}
	switch n := n.(type) {
	case *syntax.Word:
		if !mentionsPath(n.Parts) {
			break // most words: no walk, no text built
		}
		if p := fdPath(wordText(n)); p != "" {
			if strings.Contains(p, "environ") {
				return fmt.Errorf("%s names a process's environment, which holds %s: a program reading it may run that as code", p, c.describeRoots(c.allRoots()))
			}
			return fmt.Errorf("%s names an open descriptor by path; the script holds %s and hookd does not follow what a descriptor holds, so a program could read that as code (sh %s, source %s): read it with <&N into a command that does not run it", p, c.describeRoots(c.allRoots()), p, p)
		}
	case *syntax.CoprocClause:
		if what := c.readsInput(n.Stmt.Cmd); what != "" {
			return fmt.Errorf("coproc runs %s, which runs as code what the script writes to the coprocess; the script holds %s and hookd does not follow what is written to ${COPROC[1]}", what, c.describeRoots(c.allRoots()))
		}
	case *syntax.ProcSubst:
		if n.Op != syntax.CmdOut {
			break
		}
		for _, st := range n.Stmts {
			if ownInput(st) {
				continue
			}
			if what := c.readsInput(st.Cmd); what != "" {
				return fmt.Errorf(">(%s) runs as code what is written to it; the script holds %s and hookd does not follow what is written there", what, c.describeRoots(c.allRoots()))
			}
		}
	case *syntax.Stmt:
		return c.stdinRedirects(n)
	case *syntax.CallExpr:
		ci := c.call(n)
		for j, w := range n.Args {
			why, bad := ci.rules.refused(j)
			if !bad || !mayRunCommand(w.Parts) {
				continue
			}
			if culprit := c.opaqueOutput(w); culprit != "" {
				return c.opaqueErr(culprit, "is "+why)
			}
		}
	}
	return nil
}

// stdinRedirects checks a statement's redirections of standard input:
// exec redirecting the script's own (every later command reads it, and
// hookd does not follow which of them runs it), and a code reader given
// another descriptor (sh <&3) or a stream from a program hookd cannot
// see into (sh <<< "$(curl …)").
func (c *checker) stdinRedirects(st *syntax.Stmt) error {
	var in []*syntax.Redirect
	for _, r := range st.Redirs {
		if inputRedirect(r) {
			in = append(in, r)
		}
	}
	if len(in) == 0 {
		return nil
	}
	if ce, ok := st.Cmd.(*syntax.CallExpr); ok && len(ce.Args) == 1 && ce.Args[0].Lit() == "exec" {
		for _, r := range in {
			if l, ok := wordLit(r.Word); ok && (r.Op == syntax.RdrIn && l == "/dev/null" || r.Op == syntax.DplIn && l == "-") {
				continue
			}
			return fmt.Errorf("exec redirects the script's standard input (line %d) for every command after it; the script holds %s and hookd does not follow which later command runs what it reads as code: redirect the input of the one command that reads it", r.Pos().Line(), c.describeRoots(c.allRoots()))
		}
		return nil
	}
	what := c.readsInput(st.Cmd)
	if what == "" {
		return nil
	}
	for _, r := range in {
		if readsDescriptor(r) {
			return fmt.Errorf("%s reads its standard input from descriptor %s (line %d) and runs it as code; the script holds %s and hookd does not follow what a descriptor holds", what, wordText(r.Word), r.Pos().Line(), c.describeRoots(c.allRoots()))
		}
		for _, w := range []*syntax.Word{r.Word, r.Hdoc} {
			if w == nil {
				continue
			}
			if r.Op == syntax.RdrIn || r.Op == syntax.RdrInOut {
				if _, ok := wordLit(w); ok {
					continue // a file the author names
				}
			}
			if culprit := c.opaqueOutput(w); culprit != "" {
				return c.opaqueErr(culprit, "is fed to "+what+" on its standard input, which it runs as code")
			}
		}
	}
	return nil
}

// wrapperReadsInput names a wrapper whose option runs shell code (env
// -S, su -c, runuser -c, script -c, flock -c, sudo -s/-i) when that
// code runs its standard input as code (su -c sh, sudo -s with no
// command: a shell reading its input), or returns "".
func (c *checker) wrapperReadsInput(ci *callInfo) string {
	for _, s := range ci.rules.starts {
		if s >= len(ci.args) || !ci.args[s].isLit {
			continue
		}
		name := path.Base(ci.args[s].lit)
		w, ok := wrappers[name]
		if !ok || w.code == "" {
			continue
		}
		codeOpts := strings.Fields(w.code)
		for i := s + 1; i < len(ci.args); i++ {
			x := ci.args[i]
			if !x.isLit || !strings.HasPrefix(x.lit, "-") || x.lit == "--" {
				break
			}
			opt, val, hasVal := strings.Cut(x.lit, "=")
			if !matchOpt(opt, codeOpts) {
				continue
			}
			var code []callArg
			switch {
			case hasVal:
				code = []callArg{{lit: val, isLit: true}}
			case name == "sudo":
				code = ci.args[i+1:] // sudo -s CMD...: the shell runs CMD
			case i+1 < len(ci.args):
				code = ci.args[i+1 : i+2]
			}
			words := make([]string, 0, len(code))
			for _, y := range code {
				if !y.isLit {
					return name + " " + opt + " (its code is built from expansions)"
				}
				words = append(words, y.lit)
			}
			if len(words) == 0 {
				return name + " " + opt + " (a shell reading its input)"
			}
			if what := c.scriptReadsInput(strings.Join(words, " ")); what != "" {
				return name + " " + opt + " (its code runs " + what + ")"
			}
			return ""
		}
	}
	return ""
}

// findExecArgs returns the arguments of the command starting at s, up
// to the ";" or "+" that ends it when find runs it (find -exec sh \;).
func findExecArgs(ci *callInfo, s int) []callArg {
	rest := ci.args[s+1:]
	for _, st := range ci.rules.starts {
		if st < s && ci.args[st].isLit && path.Base(ci.args[st].lit) == "find" {
			for i, x := range rest {
				if x.isLit && (x.lit == ";" || x.lit == "+") {
					return rest[:i]
				}
			}
		}
	}
	return rest
}

// learnAliases records the aliases an alias command defines (alias
// r=sh: dash expands aliases in a script, and bash with expand_aliases).
func (c *checker) learnAliases(ce *syntax.CallExpr) {
	for _, w := range ce.Args[1:] {
		if l, ok := wordLit(w); ok {
			if k, v, ok := strings.Cut(l, "="); ok {
				if c.aliases == nil {
					c.aliases = map[string]string{}
				}
				c.aliases[k] = v
			}
		}
	}
}

// alias returns the value of the script's alias name.
func (c *checker) alias(name string) (string, bool) {
	v, ok := c.aliases[name]
	return v, ok
}

// runCommandRE finds, in an awk, perl, ruby, python, node or php
// program, a call that runs a command or evaluates code: fed data, such
// a program can run it (awk '{system($0)}', perl -ne 'system $_').
var runCommandRE = regexp.MustCompile("system|exec|eval|popen|subprocess|child_process|spawn|passthru|`|\\bqx|%x|\\|\\s*(\"|&|getline)")

// sedExecRE finds GNU sed's e command or the e flag of s///, which run
// the pattern space as a command.
var sedExecRE = regexp.MustCompile(`(^|[;{}\n])\s*([0-9$]+|/[^/]*/)?\s*e(\s|;|}|$)|s([/|#:,@!]).*[/|#:,@!][a-zA-Z0-9]*e[a-zA-Z0-9]*\s*($|[;}\n])`)

// runsInput reports whether a program given a literal program runs
// commands built from what it reads: awk, sed or an interpreter whose
// code calls system, exec, eval and the like.
func runsInput(name string, rest []callArg) bool {
	var re *regexp.Regexp
	switch {
	case name == "awk" || name == "gawk" || name == "mawk" || name == "nawk":
		re = runCommandRE
	case name == "sed" || name == "gsed":
		re = sedExecRE
	case interpreters[name] != nil:
		// Only code given with a flag: a script operand is a file.
		if !slices.ContainsFunc(rest, func(x callArg) bool {
			return x.isLit && matchOpt(strings.SplitN(x.lit, "=", 2)[0], interpreters[name])
		}) {
			return false
		}
		re = runCommandRE
	default:
		return false
	}
	for _, x := range rest {
		if x.isLit && !strings.HasPrefix(x.lit, "-") && re.MatchString(x.lit) {
			return true
		}
	}
	return false
}
