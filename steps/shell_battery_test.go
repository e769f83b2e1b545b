package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/process"
)

// batteryValues builds hostile values combinatorially: a prefix and a
// suffix of shell metacharacters, quotes, backslashes, newlines, globs,
// option dashes and unicode around a payload that would create marker if
// the shell ever ran it. Every stride-th of them is kept.
func batteryValues(marker string, stride int) []string {
	atoms := []string{"", "'", `"`, `\`, `\\`, "`", "$", "${", "}", "(", ")", "*", "?", "[a]", "~", "#", " ", "\t",
		"\n", "-", "--", "ü", "💥", "\x01", "%s", "!", "{a,b}"}
	m := marker
	payloads := []string{
		"$(touch " + m + ")", "`touch " + m + "`", ";touch " + m + ";", "|touch " + m, "&&touch " + m, "||touch " + m,
		"\ntouch " + m + "\n", "&touch " + m + "&", "a[$(touch " + m + ")]", "x[$(touch " + m + ")]+1",
		"$((a[$(touch " + m + ")]))", "${IFS}touch${IFS}" + m, "';touch " + m + ";'", `";touch ` + m + `;"`,
		`\";touch ` + m + `;\"`, "EOF\ntouch " + m + "\nEOF", "}}{{event.v0}}", "-exec touch " + m + " ;",
		"--output=" + m, "$'\\x74ouch' " + m,
	}
	var out []string
	n := 0
	for _, p := range atoms {
		for _, c := range payloads {
			for _, s := range atoms {
				n++
				if n%stride != 0 {
					continue
				}
				out = append(out, p+c+s)
			}
		}
	}
	return out
}

// batteryContext is one place a placeholder can stand in a command that
// loads. In line, {{X}} is the placeholder and @ a per-value suffix for
// names; env, when set, is an env entry's template the line reads.
type batteryContext struct {
	name, line, env string
	head            string             // a line before the values' lines
	tail            func(n int) string // a line after them, given their count
	opt             bool               // a value starting with '-' is refused here
	argv            bool               // the list form: line is "program first-args", the values follow
	want            func(v string) string
}

func bracket(v string) string { return "[" + v + "]\n" }

// childShell prints $E0 ... $E(n-1) from a child shell.
func childShell(n int) string {
	var b strings.Builder
	b.WriteString(`sh -c 'printf -- "[%s]\n"`)
	for j := range n {
		fmt.Fprintf(&b, ` "$E%d"`, j)
	}
	b.WriteString(`'`)
	return b.String()
}

var batteryContexts = []batteryContext{
	{name: "unquoted", line: `printf '[%s]\n' {{X}}`, opt: true, want: bracket},
	{name: "after --", line: `printf -- '[%s]\n' {{X}}`, want: bracket},
	{name: "double quotes", line: `printf -- '[%s]\n' "<{{X}}>"`, want: func(v string) string { return bracket("<" + v + ">") }},
	{name: "glued", line: `printf -- '[%s]\n' a{{X}}b`, want: func(v string) string { return bracket("a" + v + "b") }},
	{name: "command substitution", line: `printf -- '[%s]\n' "$(printf -- '%s.' {{X}})"`, want: func(v string) string { return bracket(v + ".") }},
	{name: "param default", line: `printf -- '[%s]\n' ${HOOKD_UNSET_VAR:-{{X}}}`, want: bracket},
	{name: "param default quoted", line: `printf -- '[%s]\n' "${HOOKD_UNSET_VAR:-{{X}}}"`, want: bracket},
	{name: "param alternative", line: `printf -- '[%s]\n' "${HOME:+{{X}}}"`, want: bracket},
	{name: "assignment", line: `a@={{X}}; printf -- '[%s]\n' "$a@"`, want: bracket},
	{name: "export to a child shell", line: `export E@={{X}}`, tail: childShell, want: bracket},
	{name: "heredoc", line: "cat <<EOF@\n[{{X}}]\nEOF@", want: bracket},
	{name: "case", line: `case {{X}} in {{X}}) printf -- '[%s]\n' same;; *) printf -- '[%s]\n' diff;; esac`, want: func(string) string { return "[same]\n" }},
	{name: "for", line: `for i@ in {{X}}; do printf -- '[%s]\n' "$i@"; done`, want: bracket},
	{name: "test", line: `[ "{{X}}" = "{{X}}" ] && printf -- '[%s]\n' eq`, opt: true, want: func(string) string { return "[eq]\n" }},
	{name: "if", line: `if [ -n "{{X}}" ]; then printf -- '[%s]\n' "{{X}}"; fi`, opt: true, want: bracket},
	{name: "pipe", head: "{", line: `printf -- '[%s]\n' {{X}}`, tail: func(int) string { return "} | cat" }, want: bracket},
	{name: "subshell", head: "(", line: `printf -- '[%s]\n' {{X}}`, tail: func(int) string { return ")" }, want: bracket},
	{name: "function", line: `f@() { printf -- '[%s]\n' "$1"; }; f@ {{X}}`, opt: true, want: bracket},
	{name: "comment", line: `printf -- '[%s]\n' {{X}} # {{X}}`, want: bracket},
	{name: "twice", line: `printf -- '[%s|%s]\n' {{X}} "{{X}}"`, want: func(v string) string { return "[" + v + "|" + v + "]\n" }},
	{name: "while read", head: "{", line: `printf -- '%s\n' {{X}}`, tail: func(int) string {
		return `} | while IFS= read -r l; do printf -- '[%s]\n' "$l"; done`
	}, want: func(v string) string {
		var b strings.Builder
		for _, l := range strings.Split(v, "\n") {
			b.WriteString(bracket(l))
		}
		return b.String()
	}},
	{name: "env value", line: `printf -- '[%s]\n' "$E@"`, env: "{{X}}", want: bracket},
	{name: "env value glued", line: `printf -- '[%s]\n' "x$E@"`, env: "{{X}}", want: func(v string) string { return bracket("x" + v) }},
	{name: "env value in sh -c", line: ":", env: "{{X}}", tail: childShell, want: bracket},
	{name: "argv", line: `printf [%s]\n`, argv: true, opt: true, want: bracket},
	{name: "argv after --", line: `printf -- [%s]\n`, argv: true, want: bracket},
}

// TestShellBattery runs the real shell step over hostile values in every
// context above, under /bin/sh and under bash when present, and checks
// that each value arrived as data and that no marker file was made.
func TestShellBattery(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	// HOOKD_BATTERY=full runs every value; by default a twentieth of them,
	// with -short a sixtieth.
	stride := 20
	switch {
	case os.Getenv("HOOKD_BATTERY") == "full":
		stride = 1
	case testing.Short():
		stride = 60
	}
	values := batteryValues(marker, stride)
	shells := []string{"/bin/sh", testtool.Need(t, "bash")}
	const chunk = 300
	runs, checks := 0, 0
	for _, bc := range batteryContexts {
		var plain, dashed []string
		for _, v := range values {
			if bc.opt && strings.HasPrefix(v, "-") {
				dashed = append(dashed, v)
			} else {
				plain = append(plain, v)
			}
		}
		for start := 0; start < len(plain); start += chunk {
			vs := plain[start:min(start+chunk, len(plain))]
			for _, sh := range shells {
				if bc.argv && sh != "/bin/sh" {
					continue
				}
				res, err := runBattery(t, bc, vs, sh, dir)
				runs++
				checks += len(vs)
				if _, serr := os.Stat(marker); serr == nil {
					os.Remove(marker)
					t.Fatalf("%s under %s: a value ran as code", bc.name, sh)
				}
				if err != nil {
					t.Fatalf("%s under %s: %v", bc.name, sh, err)
				}
				var want strings.Builder
				for _, v := range vs {
					want.WriteString(bc.want(v))
				}
				if res.Stdout != want.String() {
					t.Errorf("%s under %s: output differs at %s\nstderr %q", bc.name, sh, firstDiff(res.Stdout, want.String()), res.Stderr)
				}
			}
		}
		// Values that begin with '-' are refused where they would be
		// options; a refused run runs nothing.
		for _, v := range dashed {
			_, err := runBattery(t, bc, []string{v}, "/bin/sh", dir)
			runs++
			checks++
			if err == nil || !strings.Contains(err.Error(), "would be read as an option") {
				t.Errorf("%s: %q: err = %v; want an option refusal", bc.name, v, err)
			}
			if _, serr := os.Stat(marker); serr == nil {
				os.Remove(marker)
				t.Fatalf("%s: %q ran as code", bc.name, v)
			}
		}
	}
	t.Logf("battery: %d values x %d contexts, %d shells; %d value checks in %d runs; 0 executed", len(values), len(batteryContexts), len(shells), checks, runs)
}

// runBattery builds the step for values in context bc as a hook file
// would hold it and runs it with shell as /bin/sh.
func runBattery(t *testing.T, bc batteryContext, values []string, shell, dir string) (process.CommandResult, error) {
	t.Helper()
	event := map[string]any{}
	var src strings.Builder
	if bc.argv {
		src.WriteString("command: [")
		for i, f := range strings.Fields(bc.line) {
			if i > 0 {
				src.WriteString(", ")
			}
			src.WriteString(yamlString(strings.ReplaceAll(f, `\n`, "\n")))
		}
		for j, v := range values {
			src.WriteString(", " + yamlString("{{event.v"+strconv.Itoa(j)+"}}"))
			event["v"+strconv.Itoa(j)] = v
		}
		src.WriteString("]\n")
	} else {
		var lines []string
		var env []string
		if bc.head != "" {
			lines = append(lines, bc.head)
		}
		for j, v := range values {
			n := strconv.Itoa(j)
			ph := "{{event.v" + n + "}}"
			event["v"+n] = v
			line := strings.ReplaceAll(strings.ReplaceAll(bc.line, "@", n), "{{X}}", ph)
			if bc.env != "" {
				env = append(env, fmt.Sprintf("E%s: %s", n, yamlString(strings.ReplaceAll(bc.env, "{{X}}", ph))))
			}
			lines = append(lines, line)
		}
		if bc.tail != nil {
			lines = append(lines, bc.tail(len(values)))
		}
		src.WriteString("command: " + yamlString(strings.Join(lines, "\n")) + "\n")
		if len(env) > 0 {
			src.WriteString("env: {" + strings.Join(env, ", ") + "}\n")
		}
	}
	src.WriteString("max_output: 10000000\n")
	s, err := newShellStep(t, src.String(), 0)
	if err != nil {
		t.Fatalf("%s: the command does not load: %v", bc.name, err)
	}
	env := &engine.StepEnv{Workdir: dir, Env: os.Environ(), Scope: &engine.Scope{Hook: "battery", Event: event}}
	c, err := s.(*shellStep).command(env)
	if err != nil {
		return process.CommandResult{}, err
	}
	if !bc.argv {
		// The string form runs as /bin/sh -c SCRIPT, as documented;
		// the battery swaps in the shell under test.
		if len(c.Argv) != 3 || c.Argv[0] != "/bin/sh" || c.Argv[1] != "-c" {
			t.Fatalf("%s: the string form runs %q, not /bin/sh -c SCRIPT", bc.name, c.Argv)
		}
		c.Argv[0] = shell
	}
	r := c.Run(context.Background())
	return r, r.Err
}

func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-40)
	return fmt.Sprintf("byte %d: got %q, want %q", i, got[from:min(len(got), i+40)], want[from:min(len(want), i+40)])
}
