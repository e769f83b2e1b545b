package shellcheck

import (
	"path"
	"slices"
	"strconv"
	"strings"
)

// callArg is what the command rules know about one argument of a simple
// command: a shell word or an element of an argv list.
type callArg struct {
	lit     string // the argument's text when it is fixed by the author (isLit)
	isLit   bool
	tainted bool   // holds data from a placeholder (or from a variable set from one)
	lead    bool   // that data may begin the argument
	prefix  string // the author's text the argument begins with, before any data
}

// callRules is the verdict of the command rules on one simple command.
type callRules struct {
	// refuse[i] says why data may not stand in argument i ("" where it
	// may); read it with refused. Nil until a rule refuses one.
	refuse []string
	starts []int // indexes where a command word starts: 0 and those of wrapped commands
	// scripts holds the code the author wrote for an inner shell (sh -c
	// 'script', eval 'code'): it is checked like the command itself, as
	// it may use variables that hold data.
	scripts []innerScript
	// params are the indexes from which the arguments are an inner
	// shell's positional parameters ($0, $1, ...: sh -c 'script' sh
	// ARGS): not options of anything.
	params []int
	seen   []int // command starts already checked (few)

	// Room for what most commands need, so that analyzing one takes a
	// single allocation (loading runs it for every command of every
	// hook).
	refuseBuf [8]string
	startsBuf [2]int
	seenBuf   [2]int
}

// innerScript is code the author wrote for an inner shell.
type innerScript struct {
	text string
	// argv is the index of the argument that becomes the inner shell's
	// $0, those after it $1, $2, ... (sh -c 'script' sh ARGS); -1 when
	// none are passed (eval 'code').
	argv int
}

// posixShells are the shells whose -c script reads the arguments after
// it as $0, $1, ... with the quoting rules the checker knows.
var posixShells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "ksh": true, "mksh": true, "lksh": true, "pdksh": true,
	"ash": true, "yash": true, "posh": true, "rbash": true,
}

// sinkCommands run an argument of theirs as code, or use it as the name of
// a variable (whose array subscript bash evaluates): data may not be any of
// their arguments.
var sinkCommands = map[string]string{
	"eval": "runs its arguments as shell code", "trap": "runs its argument as shell code",
	"source": "runs the file it names", ".": "runs the file it names",
	"alias": "defines shell code", "let": "evaluates its arguments as arithmetic",
	"unset": "takes variable names, whose subscripts bash evaluates",
	"read":  "takes variable names, whose subscripts bash evaluates", "mapfile": "takes variable names and callbacks",
	"readarray": "takes variable names and callbacks", "getopts": "takes a variable name",
	"declare": "takes variable names and attributes", "typeset": "takes variable names and attributes",
	"local": "takes variable names and attributes", "export": "takes variable names and attributes",
	"readonly": "takes variable names and attributes", "enable": "loads builtins from files",
	"hash": "sets the paths of programs", "fc": "runs shell history", "bind": "binds shell commands",
	"complete": "defines commands to run", "compgen": "expands its word list as shell code",
	"watch": "passes its arguments to sh -c", "ssh": "passes its arguments to a remote shell",
	"printf": "",          // only with -v, handled below
	"test":   "", "[": "", // only with -v/-R, handled below
}

// shells run their -c argument as code and their first operand as a script.
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "lksh": true,
	"pdksh": true, "ash": true, "yash": true, "posh": true, "rbash": true, "fish": true, "csh": true,
	"tcsh": true, "busybox": true, "toybox": true,
}

// interpreters run code given with one of their flags, or a script named
// by their first operand.
var interpreters = map[string][]string{
	"python": {"-c"}, "python2": {"-c"}, "python3": {"-c"}, "pypy": {"-c"}, "pypy3": {"-c"},
	"perl": {"-e", "-E"}, "ruby": {"-e"}, "node": {"-e", "-p", "--eval", "--print"},
	"nodejs": {"-e", "-p", "--eval", "--print"}, "deno": {"eval"}, "bun": {"-e", "--eval"},
	"php": {"-r"}, "lua": {"-e"}, "luajit": {"-e"}, "Rscript": {"-e"}, "osascript": {"-e"},
	"pwsh": {"-c", "-command", "-Command"}, "tclsh": {}, "wish": {}, "expect": {"-c"},
}

// wrappers run the command that follows their options. optValue lists
// their options that take a value as the next argument; skip is the
// number of operands before the command (timeout's duration, chroot's
// root, ...).
type wrapper struct {
	optValue string // space-separated
	skip     int
	code     string // space-separated options whose value is shell code (flock -c)
}

var wrappers = map[string]wrapper{
	"exec": {optValue: "-a"}, "command": {}, "builtin": {}, "nohup": {}, "setsid": {}, "time": {optValue: "-f -o --format --output"},
	"nice": {optValue: "-n --adjustment"}, "timeout": {optValue: "-s -k --signal --kill-after", skip: 1},
	"env":  {optValue: "-u -C --unset --chdir -S --split-string", code: "-S --split-string"},
	"sudo": {optValue: "-u -g -C -D -h -p -r -t -U -T --user --group --close-from --chdir --host --prompt --role --type --other-user --command-timeout", code: "-s -i --shell --login"},
	"doas": {optValue: "-u -C"}, "su": {optValue: "-s -g -G -w --shell --group --supp-group --whitelist-environment", code: "-c --command --session-command"},
	"runuser": {optValue: "-u -s -g -G -w --user --shell --group --supp-group", code: "-c --command --session-command"},
	"stdbuf":  {optValue: "-i -o -e --input --output --error"}, "chroot": {optValue: "--userspec --groups", skip: 1},
	"ionice": {optValue: "-c -n -p -P -u --class --classdata --pid --pgid --uid"}, "taskset": {optValue: "-c --cpu-list", skip: 1},
	"chrt": {skip: 1}, "flock": {optValue: "-w -E --timeout --conflict-exit-code", skip: 1, code: "-c --command"},
	"xargs":    {optValue: "-a -d -E -I -L -n -P -s --arg-file --delimiter --eof --max-lines --max-args --max-procs --max-chars --process-slot-var"},
	"unbuffer": {}, "strace": {optValue: "-e -o -p -s -u -E -P -a -b -I -O -S -X"}, "ltrace": {optValue: "-e -o -p -s -u -n -a -A -D -F"},
	"nsenter": {optValue: "-t -S -G --target --setuid --setgid -w --wd -r --root"}, "unshare": {optValue: "--map-user --map-group --propagation --setgroups"},
	"firejail": {}, "systemd-run": {optValue: "-u -p -E --unit --property --setenv --uid --gid --working-directory"},
	"script": {code: "-c --command"}, "caffeinate": {}, "torsocks": {}, "proxychains": {}, "proxychains4": {},
	"fakeroot": {}, "catchsegv": {}, "valgrind": {}, "setpriv": {}, "numactl": {}, "cgexec": {optValue: "-g"},
}

// analyzeCall applies the command rules to args.
func analyzeCall(args []callArg) *callRules {
	r := &callRules{}
	r.analyze(args)
	return r
}

// analyze applies the command rules to args, filling r (a zero value).
func (r *callRules) analyze(args []callArg) {
	r.starts, r.seen = r.startsBuf[:0], r.seenBuf[:0]
	if len(args) > 0 {
		r.command(args, 0, 0)
	}
}

// set refuses data in argument i, unless a rule did already: the first
// reason stands. why is never empty.
func (r *callRules) set(i int, why string) {
	if i >= len(r.refuse) {
		n := max(i+1, 2*len(r.refuse))
		if r.refuse == nil && n <= len(r.refuseBuf) {
			r.refuse = r.refuseBuf[:n]
		} else {
			r.refuse = append(r.refuse, make([]string, n-len(r.refuse))...)
		}
	}
	if r.refuse[i] == "" {
		r.refuse[i] = why
	}
}

// refused says why data may not stand in argument i, if a rule refuses it.
func (r *callRules) refused(i int) (string, bool) {
	if i < 0 || i >= len(r.refuse) || r.refuse[i] == "" {
		return "", false
	}
	return r.refuse[i], true
}

// command applies the rules to the command starting at args[s].
func (r *callRules) command(args []callArg, s, depth int) {
	if slices.Contains(r.seen, s) {
		return
	}
	r.seen = append(r.seen, s)
	if depth > 8 {
		for i := s; i < len(args); i++ {
			r.set(i, "deep inside nested command wrappers")
		}
		return
	}
	r.starts = append(r.starts, s)
	r.set(s, "in command position: the value would choose the program to run")
	a := args[s]
	if !a.isLit {
		return
	}
	name := path.Base(a.lit)
	rest := args[s+1:]
	all := func(why string) {
		for i := s + 1; i < len(args); i++ {
			r.set(i, why)
		}
	}
	switch {
	case name == "printf":
		for i, x := range rest {
			if x.isLit && x.lit == "-v" && i+1 < len(rest) {
				r.set(s+2+i, "the variable name of printf -v, whose subscript bash evaluates")
			}
		}
		return
	case name == "test" || name == "[":
		for i, x := range rest {
			if x.isLit && (x.lit == "-v" || x.lit == "-R") && i+1 < len(rest) {
				r.set(s+2+i, "the variable name of test "+x.lit+", whose subscript bash evaluates")
			}
		}
		return
	case sinkCommands[name] != "":
		all("an argument of " + name + ", which " + sinkCommands[name])
		if name == "eval" || name == "trap" && len(rest) > 0 {
			code := rest
			if name == "trap" {
				code = rest[:1]
			}
			var parts []string
			for _, x := range code {
				if !x.isLit {
					return
				}
				parts = append(parts, x.lit)
			}
			r.scripts = append(r.scripts, innerScript{text: strings.Join(parts, " "), argv: -1})
		}
		return
	case shells[name]:
		r.shell(args, s, name, depth)
		return
	case interpreters[name] != nil:
		r.interpreter(args, s, name)
		return
	case name == "awk" || name == "gawk" || name == "mawk" || name == "nawk":
		r.script(args, s, name, "-v -F", "-f --file -i --include -l --load -E --exec", "-e --source", "the program "+name+" runs")
		return
	case name == "sed" || name == "gsed":
		r.script(args, s, name, "-l --line-length", "-f --file", "-e --expression", "the script "+name+" runs (GNU sed can execute commands)")
		return
	case name == "find":
		for i := s + 1; i < len(args); i++ {
			if x := args[i]; x.isLit && (x.lit == "-exec" || x.lit == "-execdir" || x.lit == "-ok" || x.lit == "-okdir") && i+1 < len(args) {
				r.command(args, i+1, depth+1)
			}
		}
		return
	case jqPrograms[name]:
		r.jq(args, s, name)
		return
	case codePrograms[name].why != "":
		r.codeProgram(args, s, name, depth)
		return
	}
	w, ok := wrappers[name]
	if !ok {
		return
	}
	// A wrapper: its options, then the command it runs. Data may stand in
	// neither: hookd cannot tell an option's value from the command.
	codeOpts := strings.Fields(w.code)
	valOpts := strings.Fields(w.optValue)
	i := s + 1
	for ; i < len(args); i++ {
		x := args[i]
		if !x.isLit {
			if name == "env" {
				if v, ok := envAssign(x.prefix); ok {
					if why := DangerousVar(v); why != "" {
						r.set(i, "assigned by env to "+v+", which "+why)
					}
					continue
				}
			}
			break
		}
		if x.lit == "--" {
			i++
			break
		}
		if !strings.HasPrefix(x.lit, "-") || x.lit == "-" {
			if _, ok := envAssign(x.lit); ok && name == "env" {
				continue
			}
			break
		}
		opt, _, hasVal := strings.Cut(x.lit, "=")
		if matchOpt(opt, codeOpts) {
			all("an argument of " + name + " " + opt + ", which runs it as shell code")
			return
		}
		if !hasVal && valueNext(opt, valOpts) {
			i++
		}
	}
	for n := 0; n < w.skip && i < len(args) && args[i].isLit; n++ {
		i++
	}
	for j := s + 1; j < i && j < len(args); j++ {
		if _, ok := envAssign(args[j].prefix); ok && name == "env" {
			continue // NAME=data, checked above
		}
		r.set(j, "an option of "+name+", ahead of the command it runs")
	}
	if i < len(args) {
		r.command(args, i, depth+1)
	}
	// Whatever the option tables miss: any later word naming a shell,
	// an interpreter or a wrapper is checked as a command too.
	for j := i + 1; j < len(args); j++ {
		if slices.ContainsFunc(r.params, func(p int) bool { return p > i && j >= p }) {
			break // an inner shell's $0, $1, ...: sh -c 'script' sh
		}
		if x := args[j]; x.isLit && isRunner(path.Base(x.lit)) {
			r.command(args, j, depth+1)
		}
	}
}

// envAssign returns NAME when s begins with NAME=.
func envAssign(s string) (string, bool) {
	name, _, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return "", false
	}
	for i, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return "", false
		}
	}
	return name, true
}

// matchOpt reports whether opt is one of opts, or a cluster of short
// options that holds one of the one-letter ones (-ec holds -c).
func matchOpt(opt string, opts []string) bool {
	for _, o := range opts {
		if opt == o {
			return true
		}
		if len(o) == 2 && len(opt) > 2 && opt[0] == '-' && opt[1] != '-' && strings.IndexByte(opt[1:], o[1]) >= 0 {
			return true
		}
	}
	return false
}

// valueNext reports whether the option word opt takes the next argument
// as its value, opts being the options that take one: opt is one of
// them, or a cluster of short options whose first letter that takes a
// value is its last (-vk: the next argument is -k's value). In -k5 the
// value is 5, and the next argument is not an option's value: counting
// it as one would hide the command or script that follows (timeout -k5
// 10 sh -c ..., awk -F: PROGRAM).
func valueNext(opt string, opts []string) bool {
	if slices.Contains(opts, opt) {
		return true
	}
	if len(opt) <= 2 || opt[0] != '-' || opt[1] == '-' {
		return false
	}
	for i := 1; i < len(opt); i++ {
		if slices.Contains(opts, "-"+opt[i:i+1]) {
			return i == len(opt)-1
		}
	}
	return false
}

func isRunner(name string) bool {
	_, w := wrappers[name]
	return w || shells[name] || interpreters[name] != nil || sinkCommands[name] != ""
}

// shell applies the rules to a shell: with -c the script and the options
// are refused, and the arguments after the script are its positional
// parameters, which the script is checked with (holding data, of a
// POSIX shell; every argument of another); without, its first operand is
// the script.
func (r *callRules) shell(args []callArg, s int, name string, depth int) {
	i := s + 1
	if name == "busybox" || name == "toybox" {
		if i < len(args) {
			r.command(args, i, depth+1) // the applet
		}
		return
	}
	for ; i < len(args); i++ {
		x := args[i]
		if !x.isLit || !(strings.HasPrefix(x.lit, "-") || strings.HasPrefix(x.lit, "+")) || x.lit == "-" {
			break
		}
		if x.lit == "--" {
			i++
			break
		}
		if matchOpt(x.lit, []string{"-c"}) || x.lit == "--command" {
			last := len(args) - 1 // the last argument refused
			for j := i + 1; j < len(args); j++ {
				if y := args[j]; !y.isLit || !strings.HasPrefix(y.lit, "-") && !strings.HasPrefix(y.lit, "+") {
					if y.isLit && posixShells[name] {
						r.scripts = append(r.scripts, innerScript{text: y.lit, argv: j + 1})
						r.params = append(r.params, j+1)
						last = j
					} else if y.isLit {
						r.scripts = append(r.scripts, innerScript{text: y.lit, argv: -1})
					}
					break
				}
			}
			for j := s + 1; j <= last; j++ {
				r.set(j, "an argument of "+name+" -c: the inner shell would parse it as code")
			}
			return
		}
		if x.lit == "-o" || x.lit == "+o" || x.lit == "-O" || x.lit == "+O" || x.lit == "--rcfile" || x.lit == "--init-file" {
			i++
		}
	}
	for j := s + 1; j <= i && j < len(args); j++ {
		r.set(j, "the script "+name+" runs, or an option of "+name)
	}
}

// interpreter applies the rules to a language interpreter: with a code
// flag every argument is refused; without, its first operand is the script.
func (r *callRules) interpreter(args []callArg, s int, name string) {
	flags := interpreters[name]
	for j := s + 1; j < len(args); j++ {
		if x := args[j]; x.isLit && matchOpt(strings.SplitN(x.lit, "=", 2)[0], flags) {
			for k := s + 1; k < len(args); k++ {
				r.set(k, "an argument of "+name+" "+x.lit+", which runs code")
			}
			return
		}
	}
	for j := s + 1; j < len(args); j++ {
		r.set(j, "the script "+name+" runs, or an option of "+name)
		if x := args[j]; x.isLit && !strings.HasPrefix(x.lit, "-") {
			return
		}
	}
}

// script applies the rules to a program that takes its script as an
// option's value (prog -e SCRIPT, -f FILE) or as its first operand.
func (r *callRules) script(args []callArg, s int, name, valOpts, fileOpts, codeOpts, what string) {
	vals, files, codes := strings.Fields(valOpts), strings.Fields(fileOpts), strings.Fields(codeOpts)
	explicit := false
	i := s + 1
	for ; i < len(args); i++ {
		x := args[i]
		if !x.isLit {
			if !explicit {
				r.set(i, what)
			}
			break
		}
		if x.lit == "--" || !strings.HasPrefix(x.lit, "-") || x.lit == "-" {
			if x.lit == "--" {
				i++
			}
			if !explicit && i < len(args) {
				r.set(i, what)
			}
			break
		}
		opt, _, hasVal := strings.Cut(x.lit, "=")
		switch {
		case matchOpt(opt, codes):
			explicit = true
			if !hasVal && i+1 < len(args) {
				i++
				r.set(i, what)
			}
		case matchOpt(opt, files):
			explicit = true
			if !hasVal && i+1 < len(args) {
				i++
				r.set(i, "the file of the script "+name+" runs")
			}
		case !hasVal && valueNext(opt, vals):
			i++
		}
	}
	// Later -e/-f options still name code.
	for ; i < len(args); i++ {
		if x := args[i]; x.isLit && i+1 < len(args) {
			opt, _, hasVal := strings.Cut(x.lit, "=")
			if !hasVal && (matchOpt(opt, codes) || matchOpt(opt, files)) {
				r.set(i+1, what)
			}
		}
	}
}

// where names args[i] as an argument of the command it belongs to.
func (r *callRules) where(args []callArg, i int) string {
	s := r.start(i)
	b := make([]byte, 0, 64)
	b = append(b, "argument "...)
	b = strconv.AppendInt(b, int64(i-s), 10)
	b = append(b, " of "...)
	if s >= 0 && args[s].isLit {
		b = strconv.AppendQuote(b, args[s].lit)
	} else {
		b = append(b, "the command"...)
	}
	return string(b)
}

// start returns the index of the command word args[i] belongs to.
func (r *callRules) start(i int) int {
	s := -1
	for _, st := range r.starts {
		if st <= i && st > s {
			s = st
		}
	}
	return s
}

// optionPosition reports whether data at the start of args[i] would be
// read as an option: i is an argument of the command that starts before
// it, with no "--" in between.
func (r *callRules) optionPosition(args []callArg, i int) bool {
	s := r.start(i)
	if s < 0 || s == i {
		return false
	}
	for _, p := range r.params {
		if i >= p && s < p {
			return false // sh -c 'script' sh ARGS: $0, $1, ...
		}
	}
	for j := s + 1; j < i; j++ {
		if args[j].isLit && args[j].lit == "--" {
			return false
		}
	}
	return true
}
