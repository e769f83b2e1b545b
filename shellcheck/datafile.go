package shellcheck

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// This file holds the rule for a file the script writes data to and
// then runs: `cat > job.sh <<EOF … {{event.x}} … EOF; sh job.sh`,
// `printf %s {{event.x}} > f; . ./f`, `… > f.py; python3 f.py`,
// `chmod +x f; ./f`. A file receives data when a command that holds data
// (in its words, its here-documents or the input piped to it) writes it
// by redirection, tee, cp, mv, install, ln or dd of=, or when the
// command reads a file that holds data (cat f > g). Running one — as a
// command by path, with source or ., as the script of a shell or an
// interpreter, as the program file of awk, sed, jq, yq or make -f, or
// fed to a code reader's standard input (sh < f) — is refused, and so is
// reading one into an inner shell's code ($(cat f), $(< f)).
//
// Files are matched by the text of their names ("./f" is "f"; an
// expansion counts as "$", so "$dir/job.sh" matches itself), within the
// script and the inner shells it runs; a file reached by another name
// (a cd between, a symbolic link) is not followed.

// dataFile is a file the script writes data to.
type dataFile struct {
	line  uint            // where it is first written
	roots map[string]bool // the data it receives
}

// fileKey returns the name by which a file word is matched, or "".
func fileKey(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	t := wordText(w)
	if t == "" || t == "-" || strings.HasPrefix(t, "/dev/") {
		return ""
	}
	if !strings.Contains(t, "$") {
		t = path.Clean(t)
	}
	return strings.TrimPrefix(t, "./")
}

// dataFileOf returns the data file w names, if any.
func (c *checker) dataFileOf(w *syntax.Word) (string, dataFile, bool) {
	if len(c.dataFiles) == 0 {
		return "", dataFile{}, false
	}
	k := fileKey(w)
	f, ok := c.dataFiles[k]
	return k, f, ok && k != ""
}

// addDataFile records that w, a file written at line, receives data
// from roots (nil: none known, data read from input).
func (c *checker) addDataFile(w *syntax.Word, line uint, roots map[string]bool) {
	k := fileKey(w)
	if k == "" {
		return
	}
	f, ok := c.dataFiles[k]
	if !ok {
		if c.dataFiles == nil {
			c.dataFiles = map[string]dataFile{}
		}
		f = dataFile{line: line, roots: map[string]bool{}}
		c.dataFiles[k] = f
		c.changed = true
	}
	for r := range roots {
		if !f.roots[r] {
			f.roots[r] = true
			c.changed = true
		}
	}
}

// stmtData returns the data a statement's command works on: what its
// words and here-documents hold, and the data files it reads; nil if
// none.
func (c *checker) stmtData(st *syntax.Stmt) map[string]bool {
	out := c.wordTaint(st)
	if len(c.dataFiles) == 0 {
		return out
	}
	syntax.Walk(st, func(n syntax.Node) bool {
		if w, ok := n.(*syntax.Word); ok {
			if _, f, ok := c.dataFileOf(w); ok {
				if out == nil {
					out = map[string]bool{}
				}
				for r := range f.roots {
					out[r] = true
				}
			}
		}
		return true
	})
	return out
}

// learnDataFiles is learn's rule for files receiving data at node n.
func (c *checker) learnDataFiles(n syntax.Node) {
	if !c.holdsData() {
		return
	}
	switch n := n.(type) {
	case *syntax.Stmt:
		if !writesFiles(n) {
			return // most statements: no walk for the data they hold
		}
		if t := c.stmtData(n); t != nil {
			c.writesOf(n, t, false)
		}
	case *syntax.BinaryCmd:
		if n.Op != syntax.Pipe && n.Op != syntax.PipeAll {
			return
		}
		if !writesFiles(n.Y) && !innerWrites(n.Y) {
			return
		}
		t := c.stmtData(n.X)
		if t == nil {
			return
		}
		// What the left side prints is the input of the right side's
		// commands: their output, and what tee writes, holds it.
		syntax.Walk(n.Y, func(m syntax.Node) bool {
			switch m := m.(type) {
			case *syntax.CmdSubst, *syntax.ProcSubst:
				return false
			case *syntax.Stmt:
				c.writesOf(m, t, true)
			}
			return true
		})
	}
}

// fileWriters are the programs writesOf knows to write their operands.
var fileWriters = map[string]bool{"tee": true, "cp": true, "mv": true, "install": true, "ln": true, "rsync": true, "dd": true}

// writesFiles reports whether st may write a file writesOf finds: it has
// an output redirection, or a word of its command names a program of
// fileWriters.
func writesFiles(st *syntax.Stmt) bool {
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.ClbOut, syntax.RdrAll, syntax.AppAll, syntax.RdrInOut:
			return true
		}
	}
	if ce, ok := st.Cmd.(*syntax.CallExpr); ok {
		for _, w := range ce.Args {
			if l := w.Lit(); l != "" && fileWriters[path.Base(l)] {
				return true
			}
		}
	}
	return false
}

// innerWrites reports whether a statement of the compound command st
// (a loop, a group) writes a file writesOf finds.
func innerWrites(st *syntax.Stmt) bool {
	if _, simple := st.Cmd.(*syntax.CallExpr); simple {
		return false
	}
	writes := false
	syntax.Walk(st, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			return false
		case *syntax.Stmt:
			writes = writes || writesFiles(m)
		}
		return !writes
	})
	return writes
}

// writesOf records the files the statement st writes as receiving the
// data t: its output redirections, tee's files, and the destination of
// cp, mv, install, ln and dd; piped says the data is its input, not
// only its words.
func (c *checker) writesOf(st *syntax.Stmt, t map[string]bool, piped bool) {
	line := st.Pos().Line()
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.ClbOut, syntax.RdrAll, syntax.AppAll, syntax.RdrInOut:
			c.addDataFile(r.Word, line, t)
		}
	}
	ce, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) == 0 {
		return
	}
	ci := c.callFresh(ce)
	for _, s := range ci.rules.starts {
		if s >= len(ci.args) || !ci.args[s].isLit {
			continue
		}
		operands := func() []int {
			var ops []int
			dashes := false
			for i := s + 1; i < len(ce.Args); i++ {
				if l, ok := wordLit(ce.Args[i]); ok && !dashes && strings.HasPrefix(l, "-") && l != "-" {
					dashes = l == "--"
					continue
				}
				ops = append(ops, i)
			}
			return ops
		}
		switch path.Base(ci.args[s].lit) {
		case "tee":
			for _, i := range operands() {
				c.addDataFile(ce.Args[i], line, t)
			}
		case "cp", "mv", "install", "ln", "rsync":
			if ops := operands(); len(ops) >= 2 {
				c.addDataFile(ce.Args[ops[len(ops)-1]], line, t)
			}
		case "dd":
			for _, w := range ce.Args[s+1:] {
				if l := wordText(w); strings.HasPrefix(l, "of=") {
					c.addDataFile(&syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: l[3:]}}}, line, t)
				}
			}
		}
	}
}

// callFresh analyzes ce without keeping the answer (learn runs while
// what holds data is still being learnt).
func (c *checker) callFresh(ce *syntax.CallExpr) *callInfo {
	ci := &callInfo{ce: ce, args: make([]callArg, len(ce.Args))}
	for i, w := range ce.Args {
		ci.args[i].lit, ci.args[i].isLit = wordLit(w)
	}
	ci.rules = analyzeCall(ci.args)
	return ci
}

// dataFileErr is the error for running the data file k, as how.
func (c *checker) dataFileErr(k string, f dataFile, line uint, how string) error {
	return fmt.Errorf("%s is written at line %d with %s and run at line %d (%s): the data would run as code; keep the script in a file of the hook (or in the step) and pass data to it as quoted arguments", k, f.line, c.describeRoots(f.roots), line, how)
}

// runsDataFile refuses a command that runs a data file: as the command
// by path, sourced, as the script of a shell or an interpreter, as the
// program file of awk, sed, jq, yq or make.
func (c *checker) runsDataFile(ci *callInfo) error {
	if len(c.dataFiles) == 0 {
		return nil
	}
	args, words := ci.args, ci.ce.Args
	line := ci.ce.Pos().Line()
	check := func(i int, how string) error {
		if i >= len(words) {
			return nil
		}
		if k, f, ok := c.dataFileOf(words[i]); ok {
			return c.dataFileErr(k, f, line, how)
		}
		return nil
	}
	for _, s := range ci.rules.starts {
		if s >= len(words) {
			continue
		}
		if strings.Contains(wordText(words[s]), "/") {
			if err := check(s, "as a command"); err != nil {
				return err
			}
		}
		if !args[s].isLit {
			continue
		}
		name := path.Base(args[s].lit)
		// The options whose value is a program file.
		var fileOpts []string
		switch {
		case name == "source" || name == ".":
			if err := check(s+1, name); err != nil {
				return err
			}
		case name == "awk" || name == "gawk" || name == "mawk" || name == "nawk":
			fileOpts = []string{"-f", "--file", "-i", "--include", "-E", "--exec"}
		case name == "sed" || name == "gsed":
			fileOpts = []string{"-f", "--file"}
		case name == "make" || name == "gmake" || name == "bmake":
			fileOpts = []string{"-f", "--file", "--makefile"}
		case jqPrograms[name]:
			if filter, fromFile, _ := jqFilter(args, s); fromFile && filter >= 0 {
				if err := check(filter, name+" -f"); err != nil {
					return err
				}
			}
		case shells[name] || interpreters[name] != nil:
			if op := scriptOperand(args, s, name); op > 0 {
				if err := check(op, "the script of "+name); err != nil {
					return err
				}
			}
		}
		for i := s + 1; i < len(args); i++ {
			x := args[i]
			if !x.isLit {
				continue
			}
			opt, _, hasVal := strings.Cut(x.lit, "=")
			if len(fileOpts) > 0 && matchOpt(opt, fileOpts) {
				if hasVal {
					k := fileKey(&syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: x.lit[len(opt)+1:]}}})
					if f, ok := c.dataFiles[k]; ok {
						return c.dataFileErr(k, f, line, name+" "+opt)
					}
				} else if err := check(i+1, name+" "+opt); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// scriptOperand returns the index of the script a shell or an
// interpreter at args[s] runs, or -1 when it runs code given with -c,
// -e and the like, or reads its standard input.
func scriptOperand(args []callArg, s int, name string) int {
	for i := s + 1; i < len(args); i++ {
		x := args[i]
		if !x.isLit {
			return i
		}
		if x.lit == "--" {
			if i+1 < len(args) {
				return i + 1
			}
			return -1
		}
		if !strings.HasPrefix(x.lit, "-") && !strings.HasPrefix(x.lit, "+") || x.lit == "-" {
			return i
		}
		if shells[name] {
			if matchOpt(x.lit, []string{"-c", "-s"}) || x.lit == "--command" {
				return -1
			}
			if x.lit == "-o" || x.lit == "+o" || x.lit == "-O" || x.lit == "+O" || x.lit == "--rcfile" || x.lit == "--init-file" {
				i++
			}
			continue
		}
		if matchOpt(strings.SplitN(x.lit, "=", 2)[0], interpreters[name]) {
			return -1
		}
		if name == "python" || name == "python2" || name == "python3" {
			if x.lit == "-m" || x.lit == "-W" || x.lit == "-X" || x.lit == "-Q" {
				if x.lit == "-m" {
					return -1
				}
				i++
			}
		}
	}
	return -1
}

// feedsDataFile refuses a code reader given a data file on its standard
// input (sh < job.sh).
func (c *checker) feedsDataFile(st *syntax.Stmt) error {
	if len(c.dataFiles) == 0 {
		return nil
	}
	for _, r := range st.Redirs {
		if r.Op != syntax.RdrIn && r.Op != syntax.RdrInOut || r.N != nil && r.N.Value != "0" {
			continue
		}
		k, f, ok := c.dataFileOf(r.Word)
		if !ok {
			continue
		}
		if what := c.readsInput(st.Cmd); what != "" {
			return c.dataFileErr(k, f, r.Pos().Line(), "fed to "+what+" on its standard input")
		}
	}
	return nil
}

// dataFileRoots returns the data the data files a command reads hold,
// for emitted: cat f, $(< f).
func (c *checker) dataFileRoots(words []*syntax.Word) map[string]bool {
	var out map[string]bool
	for _, w := range words {
		if _, f, ok := c.dataFileOf(w); ok {
			if out == nil {
				out = map[string]bool{}
			}
			for r := range f.roots {
				out[r] = true
			}
		}
	}
	return out
}
