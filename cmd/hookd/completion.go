package main

import (
	"fmt"
	"strings"
)

// hookArgCommands take a hook name as their first argument; completion
// offers the names `hookd list --names` prints.
var hookArgCommands = []string{"fire", "runs", "run", "next", "render", "pause", "resume"}

// cmdCompletion prints a completion script for bash, zsh or fish:
// commands, each command's flags (from its help) and hook names.
func cmdCompletion(c *cli, args []string) int {
	if len(args) != 1 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(c.stderr, "Usage: hookd completion bash|zsh|fish")
		fmt.Fprintln(c.stderr, "  bash: source <(hookd completion bash)   (or save it in /etc/bash_completion.d/hookd)")
		fmt.Fprintln(c.stderr, "  zsh:  hookd completion zsh > \"${fpath[1]}/_hookd\"")
		fmt.Fprintln(c.stderr, "  fish: hookd completion fish > ~/.config/fish/completions/hookd.fish")
		if len(args) == 1 {
			return exitOK
		}
		return exitUsage
	}
	var script string
	switch args[0] {
	case "bash":
		script = bashCompletion()
	case "zsh":
		script = zshCompletion()
	case "fish":
		script = fishCompletion()
	default:
		fmt.Fprintf(c.stderr, "hookd completion: unknown shell %q (want bash, zsh or fish)\n", args[0])
		return exitUsage
	}
	fmt.Fprint(c.stdout, script)
	return exitOK
}

func bashCompletion() string {
	var b strings.Builder
	b.WriteString("# bash completion for hookd: source <(hookd completion bash)\n_hookd() {\n")
	b.WriteString("  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]}\n")
	fmt.Fprintf(&b, "  if [ \"$COMP_CWORD\" -eq 1 ]; then COMPREPLY=($(compgen -W %q -- \"$cur\")); return; fi\n", strings.Join(commandNames(), " "))
	b.WriteString("  local flags=\n  case $cmd in\n")
	for _, cmd := range commands {
		fmt.Fprintf(&b, "    %s) flags=%q ;;\n", cmd.name, strings.Join(commandFlags(cmd), " "))
	}
	b.WriteString("  esac\n")
	b.WriteString("  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\")); return; fi\n")
	fmt.Fprintf(&b, "  case $cmd in %s) [ \"$COMP_CWORD\" -eq 2 ] && COMPREPLY=($(compgen -W \"$(hookd list --names 2>/dev/null)\" -- \"$cur\")) ;;\n",
		strings.Join(hookArgCommands, "|"))
	b.WriteString("    completion) COMPREPLY=($(compgen -W \"bash zsh fish\" -- \"$cur\")) ;;\n")
	fmt.Fprintf(&b, "    help) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", strings.Join(commandNames(), " "))
	b.WriteString("  esac\n}\ncomplete -o default -F _hookd hookd\n")
	return b.String()
}

func zshCompletion() string {
	var b strings.Builder
	b.WriteString("#compdef hookd\n# zsh completion for hookd: hookd completion zsh > \"${fpath[1]}/_hookd\"\n_hookd() {\n")
	b.WriteString("  local -a cmds\n  cmds=(\n")
	for _, cmd := range commands {
		fmt.Fprintf(&b, "    %s\n", zshQuote(cmd.name+":"+cmd.summary))
	}
	b.WriteString("  )\n  if (( CURRENT == 2 )); then _describe command cmds; return; fi\n")
	b.WriteString("  local -a flags\n  case $words[2] in\n")
	for _, cmd := range commands {
		fmt.Fprintf(&b, "    %s) flags=(%s) ;;\n", cmd.name, strings.Join(commandFlags(cmd), " "))
	}
	b.WriteString("  esac\n  if [[ $words[CURRENT] == -* ]]; then compadd -a flags; return; fi\n")
	fmt.Fprintf(&b, "  case $words[2] in\n    %s) (( CURRENT == 3 )) && compadd -- ${(f)\"$(hookd list --names 2>/dev/null)\"} ;;\n", strings.Join(hookArgCommands, "|"))
	b.WriteString("    completion) compadd bash zsh fish ;;\n")
	fmt.Fprintf(&b, "    help) compadd %s ;;\n", strings.Join(commandNames(), " "))
	b.WriteString("    *) _files ;;\n  esac\n}\ncompdef _hookd hookd\n")
	return b.String()
}

func fishCompletion() string {
	var b strings.Builder
	b.WriteString("# fish completion for hookd: hookd completion fish > ~/.config/fish/completions/hookd.fish\n")
	b.WriteString("complete -c hookd -f\n")
	for _, cmd := range commands {
		fmt.Fprintf(&b, "complete -c hookd -n __fish_use_subcommand -a %s -d %s\n", cmd.name, fishQuote(cmd.summary))
		for _, f := range commandFlags(cmd) {
			fmt.Fprintf(&b, "complete -c hookd -n '__fish_seen_subcommand_from %s' -l %s\n", cmd.name, strings.TrimPrefix(f, "--"))
		}
	}
	fmt.Fprintf(&b, "complete -c hookd -n '__fish_seen_subcommand_from %s' -a '(hookd list --names 2>/dev/null)'\n", strings.Join(hookArgCommands, " "))
	b.WriteString("complete -c hookd -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'\n")
	fmt.Fprintf(&b, "complete -c hookd -n '__fish_seen_subcommand_from help' -a %s\n", fishQuote(strings.Join(commandNames(), " ")))
	return b.String()
}

// zshQuote and fishQuote quote a word in single quotes for the shell.
func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
func fishQuote(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}
