// Package shelltest holds what the tests of the shell checker
// (shellcheck) and of the shell step (steps) share: the places a
// placeholder can stand in a command that loads, which the battery runs
// hostile values through and the checker's own tests parse.
package shelltest

import (
	"fmt"
	"strings"
)

// Context is one place a placeholder can stand in a command that
// loads. In line, {{X}} is the placeholder and @ a per-value suffix for
// names; env, when set, is an env entry's template the line reads.
type Context struct {
	Name, Line, Env string
	Head            string             // a line before the values' lines
	Tail            func(n int) string // a line after them, given their count
	Opt             bool               // a value starting with '-' is refused here
	Argv            bool               // the list form: line is "program first-args", the values follow
	Want            func(v string) string
}

// Bracket is v on a line of its own in brackets, as the contexts print it.
func Bracket(v string) string { return "[" + v + "]\n" }

// ChildShell prints $E0 ... $E(n-1) from a child shell.
func ChildShell(n int) string {
	var b strings.Builder
	b.WriteString(`sh -c 'printf -- "[%s]\n"`)
	for j := range n {
		fmt.Fprintf(&b, ` "$E%d"`, j)
	}
	b.WriteString(`'`)
	return b.String()
}

// Contexts are the places the batteries try.
var Contexts = []Context{
	{Name: "unquoted", Line: `printf '[%s]\n' {{X}}`, Opt: true, Want: Bracket},
	{Name: "after --", Line: `printf -- '[%s]\n' {{X}}`, Want: Bracket},
	{Name: "double quotes", Line: `printf -- '[%s]\n' "<{{X}}>"`, Want: func(v string) string { return Bracket("<" + v + ">") }},
	{Name: "glued", Line: `printf -- '[%s]\n' a{{X}}b`, Want: func(v string) string { return Bracket("a" + v + "b") }},
	{Name: "command substitution", Line: `printf -- '[%s]\n' "$(printf -- '%s.' {{X}})"`, Want: func(v string) string { return Bracket(v + ".") }},
	{Name: "param default", Line: `printf -- '[%s]\n' ${HOOKD_UNSET_VAR:-{{X}}}`, Want: Bracket},
	{Name: "param default quoted", Line: `printf -- '[%s]\n' "${HOOKD_UNSET_VAR:-{{X}}}"`, Want: Bracket},
	{Name: "param alternative", Line: `printf -- '[%s]\n' "${HOME:+{{X}}}"`, Want: Bracket},
	{Name: "assignment", Line: `a@={{X}}; printf -- '[%s]\n' "$a@"`, Want: Bracket},
	{Name: "export to a child shell", Line: `export E@={{X}}`, Tail: ChildShell, Want: Bracket},
	{Name: "heredoc", Line: "cat <<EOF@\n[{{X}}]\nEOF@", Want: Bracket},
	{Name: "case", Line: `case {{X}} in {{X}}) printf -- '[%s]\n' same;; *) printf -- '[%s]\n' diff;; esac`, Want: func(string) string { return "[same]\n" }},
	{Name: "for", Line: `for i@ in {{X}}; do printf -- '[%s]\n' "$i@"; done`, Want: Bracket},
	{Name: "test", Line: `[ "{{X}}" = "{{X}}" ] && printf -- '[%s]\n' eq`, Opt: true, Want: func(string) string { return "[eq]\n" }},
	{Name: "if", Line: `if [ -n "{{X}}" ]; then printf -- '[%s]\n' "{{X}}"; fi`, Opt: true, Want: Bracket},
	{Name: "pipe", Head: "{", Line: `printf -- '[%s]\n' {{X}}`, Tail: func(int) string { return "} | cat" }, Want: Bracket},
	{Name: "subshell", Head: "(", Line: `printf -- '[%s]\n' {{X}}`, Tail: func(int) string { return ")" }, Want: Bracket},
	{Name: "function", Line: `f@() { printf -- '[%s]\n' "$1"; }; f@ {{X}}`, Opt: true, Want: Bracket},
	{Name: "comment", Line: `printf -- '[%s]\n' {{X}} # {{X}}`, Want: Bracket},
	{Name: "twice", Line: `printf -- '[%s|%s]\n' {{X}} "{{X}}"`, Want: func(v string) string { return "[" + v + "|" + v + "]\n" }},
	{Name: "while read", Head: "{", Line: `printf -- '%s\n' {{X}}`, Tail: func(int) string {
		return `} | while IFS= read -r l; do printf -- '[%s]\n' "$l"; done`
	}, Want: func(v string) string {
		var b strings.Builder
		for _, l := range strings.Split(v, "\n") {
			b.WriteString(Bracket(l))
		}
		return b.String()
	}},
	{Name: "env value", Line: `printf -- '[%s]\n' "$E@"`, Env: "{{X}}", Want: Bracket},
	{Name: "env value glued", Line: `printf -- '[%s]\n' "x$E@"`, Env: "{{X}}", Want: func(v string) string { return Bracket("x" + v) }},
	{Name: "env value in sh -c", Line: ":", Env: "{{X}}", Tail: ChildShell, Want: Bracket},
	{Name: "argv", Line: `printf [%s]\n`, Argv: true, Opt: true, Want: Bracket},
	{Name: "argv after --", Line: `printf -- [%s]\n`, Argv: true, Want: Bracket},
}
