package config

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/hookd/hookd/engine"
	"gopkg.in/yaml.v3"
	"mvdan.cc/sh/v3/syntax"
)

// stepCommand is the command: of a step that starts processes, kept
// while its hook file loads for the warnings about it.
type stepCommand struct {
	def  *engine.StepDef
	path string
	node *yaml.Node
}

// networkWarnings warns, through warn, about each step of h that runs a
// program that usually needs the network (curl, git fetch, npm install,
// …) where its processes get none: h takes untrusted input and neither
// the step nor the hook declares network:.
func networkWarnings(h *engine.Hook, cmds []stepCommand, warn func(line int, path, msg string)) {
	if !h.UntrustedInput() {
		return
	}
	for _, c := range cmds {
		net := c.def.Network
		if net == nil {
			net = h.Network
		}
		if net != nil || engine.KindProcesses(c.def.Type) != engine.ProcessesDeclared {
			continue // declared (even as none), or a kind that declares nothing
		}
		if prog := networkProgram(c.node); prog != "" {
			warn(c.node.Line, join(c.path, "command"), prog+" usually needs the network, which this step does not get: "+
				"the hook takes untrusted input, so its processes have no network unless declared; "+
				"add network: true (or the TCP ports, network: [443]) to the step or the hook")
		}
	}
}

// networkProgram returns the first command of n, a command: (a script or
// a list of arguments), that usually needs the network, as "curl" or
// "git fetch", or "".
func networkProgram(n *yaml.Node) string {
	n = resolve(n)
	switch n.Kind {
	case yaml.ScalarNode:
		f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(n.Value), "")
		if err != nil {
			return ""
		}
		found := ""
		syntax.Walk(f, func(node syntax.Node) bool {
			call, ok := node.(*syntax.CallExpr)
			if !ok || found != "" {
				return found == ""
			}
			args := make([]string, 0, len(call.Args))
			for _, w := range call.Args {
				args = append(args, w.Lit()) // "" for a word that is not plain text
			}
			found = needsNetwork(args)
			return found == ""
		})
		return found
	case yaml.SequenceNode:
		args := make([]string, 0, len(n.Content))
		for _, a := range n.Content {
			args = append(args, resolve(a).Value)
		}
		return needsNetwork(args)
	}
	return ""
}

// netSubcommands are the programs that need the network for some of
// their subcommands; netPrograms need it for everything.
var (
	netPrograms    = []string{"curl", "wget", "apt-get", "apt", "ssh", "scp", "rsync", "nc", "aria2c"}
	netSubcommands = map[string][]string{
		"git":   {"fetch", "clone", "push", "pull", "ls-remote", "submodule"},
		"npm":   {"install", "i", "ci", "update", "publish"},
		"pnpm":  {"install", "i", "add", "update"},
		"yarn":  {"install", "add", "upgrade"},
		"pip":   {"install", "download"},
		"pip3":  {"install", "download"},
		"go":    {"get"},
		"cargo": {"fetch", "install", "update", "publish"},
	}
)

// needsNetwork reports, as "curl" or "git fetch", whether argv runs a
// program that usually needs the network; "" when not.
func needsNetwork(argv []string) string {
	// Leading prefixes that run the rest (env, sudo, time, …), with
	// their options and env's assignments.
	for len(argv) > 0 && slices.Contains([]string{"env", "sudo", "time", "command", "exec", "nice"}, filepath.Base(argv[0])) {
		argv = argv[1:]
		for len(argv) > 0 && (strings.HasPrefix(argv[0], "-") || strings.Contains(argv[0], "=")) {
			argv = argv[1:]
		}
	}
	if len(argv) == 0 || argv[0] == "" {
		return ""
	}
	prog := filepath.Base(argv[0])
	if slices.Contains(netPrograms, prog) {
		return prog
	}
	rest := argv[1:]
	if strings.HasPrefix(prog, "python") && len(rest) >= 3 && rest[0] == "-m" && strings.HasPrefix(rest[1], "pip") {
		prog, rest = "pip", rest[2:]
	}
	subs, ok := netSubcommands[prog]
	if !ok {
		return ""
	}
	// The subcommand: the first word that is not an option (nor the
	// value of git's -C and -c).
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case prog == "git" && (a == "-C" || a == "-c"):
			i++
		case strings.HasPrefix(a, "-"):
		case prog == "go" && a == "mod":
			if i+1 < len(rest) && rest[i+1] == "download" {
				return "go mod download"
			}
			return ""
		case slices.Contains(subs, a):
			return prog + " " + a
		default:
			return ""
		}
	}
	return ""
}
