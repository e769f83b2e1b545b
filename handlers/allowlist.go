package handlers

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Allowlist is the set of commands the model's run_command may run, for
// the guard `hookd guard` (see hooks.d/allow-commands.yaml). Each entry
// is one command line in shell syntax, parsed with a real shell parser
// (mvdan.cc/sh): its words, quotes removed, are compared with the argv
// the model asks for, word by word, and the lengths must be equal. An
// unquoted `*` word stands for any one argument that does not begin with
// "-" (so it never adds an option), is not an absolute path and has no
// ".." path element (so it names nothing outside the directory the call
// runs in, which run_command keeps inside the hook's workdir). Nothing
// else is a pattern: no expansion, no glob, no prefix match; `/bin/rm`
// is not `rm`.
type Allowlist struct {
	entries []allowEntry
}

type allowEntry struct {
	text  string
	words []string // "" stands for the wildcard
	wild  []bool
}

// runners run another program, or code, given in their arguments or
// read on their standard input: an entry that gives one of them a
// wildcard argument would allow anything, and so would a call that
// feeds one of them standard input (sqlite3's .shell, sh -s, an
// interpreter with no script, a wrapper passing its input on). Shells,
// interpreters and wrappers first, then programs with a command
// language of their own (database shells, editors, calculators,
// debuggers, schedulers: the shell steps' list, shellcheck/codeprog.go).
var runners = []string{"sh", "bash", "dash", "zsh", "ksh", "fish", "busybox", "env", "xargs", "sudo", "su", "doas",
	"nice", "nohup", "timeout", "exec", "eval", "command", "python", "python3", "perl", "ruby", "node", "php", "lua",
	"awk", "gawk", "ssh", "npx",
	"sqlite3", "psql", "mysql", "mariadb", "ed", "ex", "vi", "vim", "nvim", "view", "vimdiff", "dc", "m4",
	"gdb", "lldb", "at", "batch", "crontab", "parallel", "make", "gmake", "bmake"}

// runner reports whether the program prog (as an entry or a call names
// it, a path or not) is one of the runners.
func runner(prog string) bool { return slices.Contains(runners, path.Base(prog)) }

// ParseAllowlist parses the entries of an allowlist. A bad entry is an
// error naming it.
func ParseAllowlist(entries []string) (*Allowlist, error) {
	a := &Allowlist{}
	parser := syntax.NewParser(syntax.Variant(syntax.LangBash))
	for i, text := range entries {
		e, err := parseEntry(parser, text)
		if err != nil {
			return nil, fmt.Errorf("allowlist entry %d %q: %w", i+1, text, err)
		}
		a.entries = append(a.entries, e)
	}
	return a, nil
}

func parseEntry(parser *syntax.Parser, text string) (allowEntry, error) {
	e := allowEntry{text: text}
	f, err := parser.Parse(strings.NewReader(text), "")
	if err != nil {
		return e, err
	}
	if len(f.Stmts) != 1 {
		return e, errors.New("give exactly one command")
	}
	st := f.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || st.Negated || st.Background || st.Coprocess || len(st.Redirs) > 0 || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return e, errors.New("give one simple command: a program and its arguments, no pipes, redirections, assignments or control structures")
	}
	for i, w := range call.Args {
		word, wild, err := literal(w)
		if err != nil {
			return e, fmt.Errorf("word %d: %w", i+1, err)
		}
		if wild && i == 0 {
			return e, errors.New("the program must be named, not *")
		}
		e.words, e.wild = append(e.words, word), append(e.wild, wild)
	}
	if slices.Contains(e.wild, true) && runner(e.words[0]) {
		return e, fmt.Errorf("%s runs what its arguments say: list its exact command lines, without *", e.words[0])
	}
	return e, nil
}

// literal returns the value of a word made only of literal text and
// quotes; a lone unquoted * is the wildcard.
func literal(w *syntax.Word) (string, bool, error) {
	if len(w.Parts) == 1 {
		if l, ok := w.Parts[0].(*syntax.Lit); ok && l.Value == "*" {
			return "", true, nil
		}
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, `*?[\`) {
				return "", false, fmt.Errorf("%q: globs and escapes are not patterns here; quote the word, or use a lone * for one argument", p.Value)
			}
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false, errors.New("$'...' is not supported; use plain quotes")
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok || strings.Contains(l.Value, `\`) {
					return "", false, errors.New("only literal text may be quoted: no $, `...` or escapes")
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false, errors.New("only literal text: no $variables, command substitution, arithmetic or braces")
		}
	}
	return b.String(), false, nil
}

// Allows reports whether argv is one of the allowed commands.
func (a *Allowlist) Allows(argv []string) bool {
	return slices.ContainsFunc(a.entries, func(e allowEntry) bool { return e.matches(argv) })
}

// StdinRefused says why a call of argv that is given standard input is
// refused, or "" when it is not: the entries say what the arguments
// may be, not what a runner reads on its standard input, which it may
// run as code (sqlite3 runs .shell, sh -s its script), so a runner gets
// none.
func StdinRefused(argv []string) string {
	if len(argv) == 0 || !runner(argv[0]) {
		return ""
	}
	return fmt.Sprintf("%s may run what it reads on standard input as code, so the guard does not let a call give it any; call it without stdin", path.Base(argv[0]))
}

func (e *allowEntry) matches(argv []string) bool {
	if len(argv) != len(e.words) {
		return false
	}
	for i, arg := range argv {
		if e.wild[i] {
			if WildRefused(arg) != "" {
				return false
			}
		} else if arg != e.words[i] {
			return false
		}
	}
	return true
}

// WildReason says, for an argv refused only because an argument given
// for a `*` is not allowed there, which entry and argument and why, so the
// model learns what to change; "" otherwise.
func (a *Allowlist) WildReason(argv []string) string {
	for _, e := range a.entries {
		if len(argv) != len(e.words) {
			continue
		}
		why, other := "", false
		for i, arg := range argv {
			switch {
			case !e.wild[i]:
				other = other || arg != e.words[i]
			case why == "":
				if w := WildRefused(arg); w != "" {
					why = fmt.Sprintf("%q cannot stand for the * of %q: %s (a * is one argument inside the call's directory: no option, no absolute path, no ..)", arg, e.text, w)
				}
			}
		}
		if why != "" && !other {
			return why
		}
	}
	return ""
}

// WildRefused says why arg cannot stand for a `*` of an entry, or ""
// when it can: it is empty, begins with "-" (an option), is an absolute
// path, or has a ".." path element (it would name something above the
// call's directory: `..`, `../..`, `docs/../../etc`).
func WildRefused(arg string) string {
	switch {
	case arg == "":
		return "it is empty"
	case strings.HasPrefix(arg, "-"):
		return "it begins with -"
	case strings.HasPrefix(arg, "/"):
		return "it is an absolute path"
	case slices.Contains(strings.Split(arg, "/"), ".."):
		return "it has a .. path element"
	}
	return ""
}

// Entries returns the entries as written.
func (a *Allowlist) Entries() []string {
	out := make([]string, len(a.entries))
	for i, e := range a.entries {
		out[i] = e.text
	}
	return out
}
