package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/hookd/hookd/handlers"
	"mvdan.cc/sh/v3/syntax"
)

// exitDeny is how a command handler blocks a call.
const exitDeny = 2

// cmdGuard is the allowlist guard of the model's run_command: a
// tool:call:before command handler (hooks.d/allow-commands.yaml) that
// reads the call on stdin and exits 0 when its argv is one of the
// --allow command lines, 2 (deny, with the reason on stderr) when it is
// not. Any other failure exits 1, which a fail_closed handler turns into
// a denial too.
func cmdGuard(c *cli, args []string) int {
	fs := flag.NewFlagSet("hookd guard", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	var allow []string
	fs.Func("allow", "a command line run_command may run, in shell syntax (repeat for more); a lone * is one argument not beginning with -, not an absolute path and without a .. element",
		func(s string) error { allow = append(allow, s); return nil })
	fs.Usage = func() {
		fmt.Fprintf(c.stderr, "Usage: hookd guard %s\n", c.argsHelp)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitError
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(c.stderr, "hookd guard: unexpected argument %q (each command line is one --allow)\n", fs.Arg(0))
		return exitError
	}
	if len(allow) == 0 {
		fmt.Fprintln(c.stderr, "hookd guard: no --allow given; nothing would be allowed")
		return exitError
	}
	list, err := handlers.ParseAllowlist(allow)
	if err != nil {
		fmt.Fprintf(c.stderr, "hookd guard: %v\n", err)
		return exitError
	}
	var in handlers.Input
	if err := json.NewDecoder(io.LimitReader(c.input(), 4<<20)).Decode(&in); err != nil {
		fmt.Fprintf(c.stderr, "hookd guard: read the call on stdin: %v\n", err)
		return exitError
	}
	if in.ToolName != "run_command" {
		return exitOK // not a command: another handler's business
	}
	var call struct {
		Argv  []string `json:"argv"`
		Stdin string   `json:"stdin"`
	}
	if err := json.Unmarshal(in.ToolInput, &call); err != nil {
		fmt.Fprintf(c.stderr, "run_command arguments the guard cannot read: %v\n", err)
		return exitDeny
	}
	if !list.Allows(call.Argv) {
		why := ""
		if w := list.WildReason(call.Argv); w != "" {
			why = " (" + w + ")"
		}
		fmt.Fprintf(c.stderr, "command not allowed: %s%s; the allowed commands are: %s\n", quoteArgv(call.Argv), why, strings.Join(list.Entries(), "; "))
		return exitDeny
	}
	if why := handlers.StdinRefused(call.Argv); why != "" && call.Stdin != "" {
		fmt.Fprintf(c.stderr, "standard input not allowed: %s\n", why)
		return exitDeny
	}
	return exitOK
}

// quoteArgv shows argv as a shell would need it written, for messages.
func quoteArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			q = fmt.Sprintf("%q", a)
		}
		parts[i] = q
	}
	return strings.Join(parts, " ")
}
