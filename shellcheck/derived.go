package shellcheck

import (
	"fmt"
	"maps"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// This file holds the checker's rule for data that is derived from a
// placeholder rather than a copy of it: words re-split or rewritten by
// read, mapfile, $(…), a for list over $(…), printf -v '%b', getopts,
// and the words xargs builds from what it reads.
//
// A placeholder's own value, and a variable that copies it, is checked
// when the step runs: a value beginning with '-' where it would begin
// an argument is refused. A derived word has no such check — the value
// of {{event.paths}} may be "a.txt\n--use-compress-program=sh x" and pass,
// while read splits off the line that is an option — so a derived word
// that may begin an argument of a program before "--" is refused when
// the hook loads, with the fix: put "--" before it, or text such as ./
// in front.

// derive records that the variable name holds derived data, why saying
// how it was derived ("read from input by read (line 3)"). It reports
// whether that is new.
func (c *checker) derive(name, why string) bool {
	if name == "" || why == "" {
		return false
	}
	changed := c.taint(name, nil)
	if c.derived[name] != "" {
		return changed
	}
	if c.derived == nil {
		c.derived = map[string]string{}
	}
	c.derived[name] = why
	return true
}

// derivedWord says how the value of n (a word, an array, a for list
// item) is derived from data, or returns "" when it is at most a copy
// of data: it holds a command substitution whose output holds data, or
// a variable holding derived data.
func (c *checker) derivedWord(n syntax.Node) string {
	if n == nil {
		return ""
	}
	switch x := n.(type) {
	case *syntax.Word:
		if x == nil {
			return ""
		}
	case *syntax.ArrayExpr:
		if x == nil {
			return ""
		}
	}
	why := ""
	syntax.Walk(n, func(n syntax.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *syntax.CmdSubst:
			if c.wordTaint(n) != nil {
				why = fmt.Sprintf("the output of $(…) at line %d", n.Pos().Line())
			}
			return false
		case *syntax.ProcSubst:
			return false // a path, /dev/fd/63
		case *syntax.ParamExp:
			if n.Param != nil && !n.Length {
				why = c.derived[n.Param.Value]
			}
		}
		return why == ""
	})
	return why
}

// learnDerived is learn's rule for derived data at node n: what is
// assigned, iterated over, read or parsed from derived data, or from
// input, is derived.
func (c *checker) learnDerived(n syntax.Node) {
	if !c.holdsData() {
		return // nothing is data, so nothing is derived from it
	}
	derive := func(name, why string) {
		c.changed = c.derive(name, why) || c.changed
	}
	switch n := n.(type) {
	case *syntax.Assign:
		if n.Name != nil {
			if why := c.derivedWord(n.Value); why != "" {
				derive(n.Name.Value, why)
			} else if why := c.derivedWord(n.Array); why != "" {
				derive(n.Name.Value, why)
			}
		}
	case *syntax.ParamExp:
		if name, w := assigningExp(n); w != nil {
			derive(name, c.derivedWord(w))
		}
	case *syntax.ForClause:
		if wi, ok := n.Loop.(*syntax.WordIter); ok {
			if !wi.InPos.IsValid() {
				// for f; do …: over "$@".
				if roots, ok := c.tainted["@"]; ok {
					c.changed = c.taint(wi.Name.Value, roots) || c.changed
				}
				derive(wi.Name.Value, c.derived["@"])
			}
			for _, w := range wi.Items {
				if why := c.derivedWord(w); why != "" {
					derive(wi.Name.Value, why)
				}
			}
		}
	case *syntax.CallExpr:
		if len(n.Args) == 0 {
			return
		}
		name := n.Args[0].Lit()
		switch {
		case name == "set" || c.funcs[name]:
			for _, w := range n.Args[1:] {
				if why := c.derivedWord(w); why != "" {
					for _, p := range positionalParams {
						derive(p, why)
					}
					break
				}
			}
		case name == "read" || name == "mapfile" || name == "readarray":
			if len(c.occs) == 0 && len(c.tainted) == 0 {
				return
			}
			why := fmt.Sprintf("split by %s at line %d", name, n.Pos().Line())
			for _, w := range n.Args[1:] {
				if l := w.Lit(); l != "" && !strings.HasPrefix(l, "-") {
					derive(l, why)
				}
			}
		case name == "getopts":
			for _, p := range positionalParams {
				if _, ok := c.tainted[p]; ok {
					derive("OPTARG", fmt.Sprintf("an option's value split off by getopts at line %d", n.Pos().Line()))
					break
				}
			}
		case name == "printf":
			// printf -v NAME FORMAT ARGS: '%b' rewrites escapes
			// (\x2d is '-'), and a format from an expansion may.
			for i := 1; i+2 < len(n.Args); i++ {
				if n.Args[i].Lit() != "-v" {
					continue
				}
				format, rest := n.Args[i+2], n.Args[i+3:]
				if l, ok := wordLit(format); ok && l == "--" && len(rest) > 0 {
					format, rest = rest[0], rest[1:]
				}
				l, ok := wordLit(format)
				held := c.wordTaint(format) != nil
				for _, w := range rest {
					held = held || c.wordTaint(w) != nil
				}
				if held && (!ok || strings.Contains(l, "%b")) {
					derive(n.Args[i+1].Lit(), fmt.Sprintf("rewritten by printf -v at line %d", n.Pos().Line()))
				}
				break
			}
		}
	}
}

// optionHarmless reports whether a leading '-' in args[j] cannot change
// what the command does beyond what it prints or tests: an argument of
// echo, test, [, :, true and false, and an argument of printf after a
// format the author wrote.
func optionHarmless(args []callArg, r *callRules, j int) bool {
	s := r.start(j)
	if s < 0 || !args[s].isLit {
		return false
	}
	switch path.Base(args[s].lit) {
	case "echo", "test", "[", ":", "true", "false":
		return true
	case "printf":
		return j-s >= 2 && args[s+1].isLit
	}
	return false
}

// derivedOptionErr is the error for derived data that may begin args[j]
// of ci's command, described by what.
func derivedOptionErr(ci *callInfo, j int, what string) error {
	where := ci.rules.where(ci.args, j)
	return fmt.Errorf("%s may begin %s, where a value beginning with '-' is read as an option (tar --use-compress-program=CMD runs CMD, git --output=FILE writes FILE); hookd checks a placeholder's own value when the step runs, not words split or rewritten from it: put -- before it (%s), text such as ./ in front, or, for an option's value, glue it to the option (-n\"$n\", --lines=\"$n\")", what, where, fixWithDashes(ci, j))
}

// fixWithDashes renders ci's command with "--" inserted before argument
// j, for an error message.
func fixWithDashes(ci *callInfo, j int) string {
	var b strings.Builder
	for i, w := range ci.ce.Args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if i == j {
			b.WriteString("-- ")
		}
		b.WriteString(clip(wordSource(w), 40))
	}
	if j >= len(ci.ce.Args) {
		b.WriteString(" --")
	}
	return b.String()
}

// wordSource returns a word as the script writes it.
func wordSource(w *syntax.Word) string {
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, w); err != nil {
		return wordText(w)
	}
	return b.String()
}

// substOption returns a command substitution in w whose output holds
// data and that may begin w or stands unquoted (where the shell splits
// its output into several arguments, any of which may begin with '-').
func (c *checker) substOption(w *syntax.Word) *syntax.CmdSubst {
	return c.substIn(w, w.Parts, false)
}

// substIn is substOption for parts of w, inside double quotes if quoted.
func (c *checker) substIn(w *syntax.Word, parts []syntax.WordPart, quoted bool) *syntax.CmdSubst {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.DblQuoted:
			if cs := c.substIn(w, p.Parts, true); cs != nil {
				return cs
			}
		case *syntax.CmdSubst:
			if (!quoted || leadsAt(w, p)) && c.wordTaint(p) != nil {
				return p
			}
		}
	}
	return nil
}

// derivedCall applies the rule to a simple command: a command
// substitution of data that may begin an argument, and the words xargs
// builds from what it reads.
func (c *checker) derivedCall(ci *callInfo) error {
	if !c.holdsData() {
		return nil
	}
	for j, w := range ci.ce.Args {
		if j == 0 || !ci.rules.optionPosition(ci.args, j) || optionHarmless(ci.args, ci.rules, j) {
			continue
		}
		if _, bad := ci.rules.refused(j); bad {
			continue // refused for data of any kind
		}
		if cs := c.substOption(w); cs != nil {
			return derivedOptionErr(ci, j, fmt.Sprintf("the output of $(…) (line %d), which holds %s,", cs.Pos().Line(), c.describeRoots(c.wordTaint(cs))))
		}
	}
	return c.xargsOptions(ci)
}

// xargsOptions refuses an xargs, in a script that holds data, whose
// command may take a word xargs reads as an option: the words are
// appended after the command's arguments (so `xargs tar czf out.tgz --`
// is safe), or replace -I's string where it begins an argument.
func (c *checker) xargsOptions(ci *callInfo) error {
	args, r := ci.args, ci.rules
	for _, s := range r.starts {
		if !args[s].isLit || path.Base(args[s].lit) != "xargs" {
			continue
		}
		cmd := -1
		for _, st := range r.starts {
			if st > s && (cmd < 0 || st < cmd) {
				cmd = st
			}
		}
		if cmd < 0 || !args[cmd].isLit {
			continue // xargs runs echo, or data names the command (refused as such)
		}
		what := fmt.Sprintf("a word xargs (line %d) reads from its input (the script holds %s)", ci.ce.Pos().Line(), c.describeRoots(c.allRoots()))
		line := ci.ce.Pos().Line()
		if repl := xargsRepl(args, s); repl != "" {
			err := c.xargsScripts(r.scripts, func(argv int) bool {
				for k := argv; k < len(args); k++ {
					if args[k].isLit && strings.Contains(args[k].lit, repl) {
						return true
					}
				}
				return false
			}, line)
			if err != nil {
				return err
			}
			for j := cmd + 1; j < len(args); j++ {
				if args[j].isLit && strings.HasPrefix(args[j].lit, repl) && r.optionPosition(args, j) && !optionHarmless(args, r, j) {
					return derivedOptionErr(ci, j, what+", put in place of "+repl+",")
				}
			}
			continue
		}
		more := append(append([]callArg(nil), args...), callArg{tainted: true, lead: true})
		r2 := analyzeCall(more)
		j := len(args)
		if _, bad := r2.refused(j); bad {
			continue // xargsAppend refuses it where data is piped in
		}
		if err := c.xargsScripts(r2.scripts, func(argv int) bool { return argv <= j }, line); err != nil {
			return err
		}
		if r2.optionPosition(more, j) && !optionHarmless(more, r2, j) {
			return derivedOptionErr(&callInfo{ce: ci.ce, args: more, rules: r2}, j, what+", appended to the arguments,")
		}
	}
	return nil
}

// withPositional returns copies of tainted and derived in which an
// inner shell's positional parameters ($0, $1, ..., $@, $*) hold the
// data roots, derived as why: hookd does not check them when the step
// runs, so they are refused where they may begin an option.
func withPositional(tainted map[string]map[string]bool, derived map[string]string, roots map[string]bool, why string) (map[string]map[string]bool, map[string]string) {
	t := make(map[string]map[string]bool, len(tainted)+len(positionalParams)+1)
	maps.Copy(t, tainted)
	d := make(map[string]string, len(derived)+len(positionalParams)+1)
	maps.Copy(d, derived)
	for _, p := range append([]string{"0"}, positionalParams...) {
		all := maps.Clone(t[p])
		if all == nil {
			all = map[string]bool{}
		}
		maps.Copy(all, roots)
		t[p] = all
		d[p] = why
	}
	return t, d
}

// xargsScripts checks the scripts of inner shells that the xargs of ci
// passes the words it reads to as positional parameters (xargs sh -c
// 'script' sh, xargs -I{} sh -c 'script' sh {}), with those holding
// data read from input.
func (c *checker) xargsScripts(scripts []innerScript, passed func(argv int) bool, line uint) error {
	for _, sc := range scripts {
		if sc.argv < 0 || !passed(sc.argv) {
			continue
		}
		t, d := withPositional(c.tainted, c.derived, map[string]bool{}, fmt.Sprintf("a word xargs reads at line %d, passed to the inner shell as a positional parameter", line))
		if err := c.nestedWith(sc.text, t, d); err != nil {
			return err
		}
	}
	return nil
}

// xargsRepl returns the replacement string of the xargs at args[s]
// (-I R, -IR, -i, --replace), or "".
func xargsRepl(args []callArg, s int) string {
	repl := ""
	for i := s + 1; i < len(args) && args[i].isLit && strings.HasPrefix(args[i].lit, "-"); i++ {
		switch l := args[i].lit; {
		case l == "-I" && i+1 < len(args):
			repl = args[i+1].lit
			i++
		case strings.HasPrefix(l, "-I"):
			repl = l[2:]
		case l == "-i" || l == "--replace":
			repl = "{}"
		case strings.HasPrefix(l, "-i"):
			repl = l[2:]
		case strings.HasPrefix(l, "--replace="):
			repl = l[len("--replace="):]
		}
	}
	return repl
}
