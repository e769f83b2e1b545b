package main

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
)

// versionInfo is what `hookd version` prints: from the build information
// the Go toolchain embeds in the binary.
type versionInfo struct {
	Module    string `json:"module"`
	Version   string `json:"version"`            // v1.2.3 from go install …@version; (devel) from a checkout
	Revision  string `json:"revision,omitempty"` // the VCS commit it was built from, when the build knew it
	Time      string `json:"time,omitempty"`     // the commit's time (RFC 3339)
	Modified  bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
	GoVersion string `json:"go"`
	Platform  string `json:"platform"`
}

func buildVersion() versionInfo {
	v := versionInfo{GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Version: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Module, v.Version = bi.Main.Path, bi.Main.Version
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func cmdVersion(c *cli, args []string) int {
	fs := c.flags()
	asJSON := fs.Bool("json", false, "print JSON")
	if _, _, ok := c.parse(fs, args, 0, 0); !ok {
		return exitUsage
	}
	v := buildVersion()
	if *asJSON {
		return c.printJSON(v)
	}
	line := "hookd " + v.Version
	if v.Revision != "" {
		rev := v.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		line += " (" + rev
		if v.Modified {
			line += ", modified"
		}
		if v.Time != "" {
			line += ", " + v.Time
		}
		line += ")"
	}
	fmt.Fprintf(c.stdout, "%s\n%s, %s", line, v.GoVersion, v.Platform)
	if v.Module != "" {
		fmt.Fprintf(c.stdout, ", module %s", v.Module)
	}
	fmt.Fprintln(c.stdout)
	return exitOK
}

// cmdHelp prints the usage of one command (what `hookd CMD -h` prints,
// after its summary), or of all.
func cmdHelp(c *cli, args []string) int {
	if len(args) == 0 {
		usage(c.stdout)
		return exitOK
	}
	cmd, ok := lookupCommand(args[0])
	if !ok || len(args) > 1 {
		fmt.Fprintf(c.stderr, "hookd help: unknown command %q (commands: %s)\n", strings.Join(args, " "), strings.Join(commandNames(), ", "))
		return exitUsage
	}
	fmt.Fprintf(c.stdout, "hookd %s: %s\n\n", cmd.name, cmd.summary)
	c.stdout.Write([]byte(commandHelp(cmd)))
	return exitOK
}

// commandHelp is what `hookd CMD -h` prints: usage and flags. Every
// command parses its flags before it does anything, so -h does nothing
// else.
func commandHelp(cmd command) string {
	var buf bytes.Buffer
	cmd.run(&cli{name: cmd.name, argsHelp: cmd.args, stdout: io.Discard, stderr: &buf}, []string{"-h"})
	return buf.String()
}

// flagPattern finds the flags in a command's help.
var flagPattern = regexp.MustCompile(`(?m)^  -(\S+)`)

// commandFlags lists a command's flags, from its help, as --name.
func commandFlags(cmd command) []string {
	var out []string
	for _, m := range flagPattern.FindAllStringSubmatch(commandHelp(cmd), -1) {
		out = append(out, "--"+m[1])
	}
	sort.Strings(out)
	return out
}

func lookupCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func commandNames() []string {
	out := make([]string, len(commands))
	for i, c := range commands {
		out[i] = c.name
	}
	return out
}
