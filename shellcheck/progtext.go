package shellcheck

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// This file holds the rules for the programs of text processors that
// are code: jq's and yq's filter (which reads the environment, $ENV and
// env, and can print a secret changed so that redaction misses it), and
// an awk, sed, jq or yq program read from standard input (-f -,
// -f /dev/stdin, -f <(cat)), which runs what the script pipes in.

// jqPrograms are jq and the programs that take a jq filter the same way.
var jqPrograms = map[string]bool{"jq": true, "gojq": true, "jaq": true, "yq": true}

// jqValueOpts are jq's and yq's options followed by values, with how many.
var jqValueOpts = map[string]int{
	"--arg": 2, "--argjson": 2, "--slurpfile": 2, "--rawfile": 2, "--indent": 1, "-L": 1,
	"--library-path": 1, "-w": 1, "--width": 1, "--yaml-output-grammar-version": 1, "--yml-out-ver": 1,
}

// jqFilter returns the index in args of the filter of the jq at args[s]
// (or of the file holding it, fromFile, with -f/--from-file), or -1 when
// it has none; lib lists the indexes of -L's values (directories of
// modules jq loads).
func jqFilter(args []callArg, s int) (filter int, fromFile bool, lib []int) {
	name := ""
	if args[s].isLit {
		name = strings.TrimSuffix(args[s].lit[strings.LastIndexByte(args[s].lit, '/')+1:], ".exe")
	}
	for i := s + 1; i < len(args); i++ {
		x := args[i]
		if !x.isLit {
			return i, fromFile, lib
		}
		switch {
		case x.lit == "--":
			if i+1 < len(args) {
				return i + 1, fromFile, lib
			}
			return -1, fromFile, lib
		case x.lit == "-f" || x.lit == "--from-file":
			fromFile = true
		case jqValueOpts[x.lit] > 0:
			if x.lit == "-L" || x.lit == "--library-path" {
				lib = append(lib, i+1)
			}
			i += jqValueOpts[x.lit]
		case strings.HasPrefix(x.lit, "--"):
		case strings.HasPrefix(x.lit, "-") && len(x.lit) > 1:
			if strings.HasPrefix(x.lit, "-L") {
				break // -Ldir
			}
			if strings.ContainsRune(x.lit[1:], 'f') {
				fromFile = true
			}
		default:
			if name == "yq" && (x.lit == "eval" || x.lit == "e" || x.lit == "eval-all" || x.lit == "ea") {
				continue // mikefarah yq's subcommand: the filter follows
			}
			return i, fromFile, lib
		}
	}
	return -1, fromFile, lib
}

// jq applies the rules to jq or yq at args[s]: data may not be the
// filter, the file holding it, nor a directory of modules.
func (r *callRules) jq(args []callArg, s int, name string) {
	filter, fromFile, lib := jqFilter(args, s)
	if filter >= 0 {
		if fromFile {
			r.set(filter, "the file holding the filter "+name+" runs")
		} else {
			r.set(filter, "the filter "+name+" runs, which is code: it can read the environment ($ENV, env) and print a secret changed so that redaction misses it; pass data with --arg NAME VALUE and use $NAME")
		}
	}
	for _, i := range lib {
		if i < len(args) {
			r.set(i, "a directory "+name+" loads modules (code) from")
		}
	}
}

// programFromStdin names an awk, sed, jq or yq at the start of rest's
// command whose program is read from standard input (-f -, -f
// /dev/stdin, --file=/dev/fd/0, -f <(cat)), or returns "". words are the
// shell words of rest, when known.
func programFromStdin(name string, rest []callArg, words []*syntax.Word) string {
	var opts []string
	switch name {
	case "awk", "gawk", "mawk", "nawk":
		opts = []string{"-f", "--file", "-E", "--exec", "-i", "--include"}
	case "sed", "gsed":
		opts = []string{"-f", "--file"}
	}
	if opts != nil {
		if optNamesStdin(rest, opts) {
			return name + " -f (its program is read from standard input)"
		}
		for i, x := range rest {
			if x.isLit && slices.Contains(opts, x.lit) && i+1 < len(words) && inputSubst(words[i+1:i+2]) {
				return name + " -f (its program is a <(...), which reads the same standard input)"
			}
		}
		return ""
	}
	if !jqPrograms[name] {
		return ""
	}
	args := append([]callArg{{lit: name, isLit: true}}, rest...)
	filter, fromFile, _ := jqFilter(args, 0)
	if !fromFile || filter < 0 {
		return ""
	}
	if x := args[filter]; x.isLit && namesStdin(x.lit) || filter-1 < len(words) && inputSubst(words[filter-1:filter]) {
		return name + " -f (its filter is read from standard input)"
	}
	return ""
}
