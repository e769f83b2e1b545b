package shellcheck

import (
	"path"
	"slices"
	"strings"
)

// codeProgram describes a program that reads some of its arguments, or
// its standard input, as code or as configuration that can run
// commands, beyond the shells, interpreters, awk and sed the command
// rules know already. Data from a placeholder may stand in none of those
// arguments, and may not be fed to its standard input when stdin is set.
type codeProgram struct {
	why   string // what the program does with such an argument
	all   bool   // every argument is (or may become) code
	opts  string // space-separated options whose value is code: "--opt VAL", "--opt=VAL", "-oVAL"
	stdin bool   // runs what it reads on standard input (unless one of opts gives the code)
	// stdinOpts: space-separated options that, naming standard input as
	// their value (make -f -), make it run what it reads there.
	stdinOpts string
}

// codePrograms is the list of programs whose arguments or standard input
// are programs. It is the principle the rules follow, not a promise that
// no other program runs what it is given: a program that is not here is
// one whose arguments hookd treats as data.
var codePrograms = map[string]codeProgram{
	// Build tools: an argument with '=' is a variable assignment whose
	// value make expands ($(shell ...) runs a command), -f names the
	// makefile, --eval is makefile text.
	"make":  {why: "reads an argument holding '=' as a variable assignment whose value it expands ($(shell ...) runs commands), and a makefile from -f - (recipes run commands)", all: true, stdinOpts: "-f --file --makefile"},
	"gmake": {why: "reads an argument holding '=' as a variable assignment whose value it expands ($(shell ...) runs commands), and a makefile from -f - (recipes run commands)", all: true, stdinOpts: "-f --file --makefile"},
	"bmake": {why: "reads an argument holding '=' as a variable assignment whose value it expands ($(shell ...) runs commands), and a makefile from -f - (recipes run commands)", all: true, stdinOpts: "-f --file --makefile"},
	// Database shells: SQL text holds client commands that run programs.
	"sqlite3": {why: "runs its arguments as SQL and dot-commands (.shell and .system run programs)", all: true, stdin: true},
	"psql":    {why: "runs it as SQL and meta-commands (\\! runs a shell)", opts: "-c --command -f --file", stdin: true},
	"mysql":   {why: "runs it as SQL and client commands (\\! runs a shell), or loads it as configuration", opts: "-e --execute --init-command --pager --plugin-dir --defaults-file --defaults-extra-file", stdin: true},
	"mariadb": {why: "runs it as SQL and client commands (\\! runs a shell), or loads it as configuration", opts: "-e --execute --init-command --pager --plugin-dir --defaults-file --defaults-extra-file", stdin: true},
	// Editors and calculators with a command language: ed's !cmd and
	// '!cmd' file names, vim's +cmd, -c and :!, dc's !, m4's syscmd.
	"ed":      {why: "runs editor commands, and !cmd (also as a file name) runs a shell", all: true, stdin: true},
	"ex":      {why: "runs editor commands (+cmd, -c cmd, :!cmd runs a shell)", all: true, stdin: true},
	"vi":      {why: "runs editor commands (+cmd, -c cmd, :!cmd runs a shell)", all: true, stdin: true},
	"vim":     {why: "runs editor commands (+cmd, -c cmd, :!cmd runs a shell)", all: true, stdin: true},
	"nvim":    {why: "runs editor commands (+cmd, -c cmd, :!cmd runs a shell)", all: true, stdin: true},
	"view":    {why: "runs editor commands (+cmd, -c cmd, :!cmd runs a shell)", all: true, stdin: true},
	"vimdiff": {why: "runs editor commands (+cmd, -c cmd, :!cmd runs a shell)", all: true, stdin: true},
	"dc":      {why: "runs its expressions, and !cmd runs a shell", all: true, stdin: true},
	"m4":      {why: "expands macros, and syscmd/esyscmd run a shell", all: true, stdin: true},
	// Debuggers run the program named and the commands given (-ex, shell).
	"gdb":  {why: "runs the program it names and debugger commands (shell runs a shell)", all: true, stdin: true},
	"lldb": {why: "runs the program it names and debugger commands (platform shell runs a shell)", all: true, stdin: true},
	// Schedulers and terminal multiplexers run their text as shell commands.
	"at":       {why: "schedules shell commands", all: true, stdin: true},
	"batch":    {why: "schedules shell commands", all: true, stdin: true},
	"crontab":  {why: "installs a crontab, whose lines are shell commands", all: true, stdin: true},
	"tmux":     {why: "runs its command arguments through a shell", all: true},
	"screen":   {why: "runs its command arguments", all: true},
	"parallel": {why: "joins its command and arguments into shell command lines", all: true, stdin: true},
	// Options whose value is a program to run or configuration.
	"git":    {why: "runs it as a command or reads it as configuration (alias.*=!cmd, core.fsmonitor, core.pager run commands)"},
	"tar":    {why: "runs it as a command", opts: "--to-command --checkpoint-action -I --use-compress-program --rsh-command --info-script -F --new-volume-script --rmt-command"},
	"gtar":   {why: "runs it as a command", opts: "--to-command --checkpoint-action -I --use-compress-program --rsh-command --info-script -F --new-volume-script --rmt-command"},
	"bsdtar": {why: "runs it as a command", opts: "-I --use-compress-program"},
	"rsync":  {why: "runs it as the remote shell or the remote rsync command", opts: "-e --rsh --rsync-path -M --remote-option"},
	"scp":    {why: "runs it as an ssh program or reads it as ssh configuration (ProxyCommand runs a shell)", opts: "-o -S -F -J"},
	"sftp":   {why: "runs it as an ssh program or reads it as ssh configuration (ProxyCommand runs a shell)", opts: "-o -S -F -J -D"},
	"zip":    {why: "runs it as the command that tests the archive", opts: "-TT --unzip-command"},
	"man":    {why: "runs it as the pager, browser or preprocessor", opts: "-P --pager -H --html -p --preprocessor"},
	"wget":   {why: "runs it as a wgetrc command (which can write files and post them)", opts: "-e --execute --config"},
	"curl":   {why: "reads it as a config file of curl options", opts: "-K --config"},
}

// gitGlobalCode are git's options before the subcommand whose value is
// configuration or the place git runs its programs from.
var gitGlobalCode = []string{"-c", "--config-env", "--exec-path"}

// gitCode says, per git subcommand, which arguments are code: all of
// them (config writes configuration that runs commands), those after a
// word (submodule foreach CMD, bisect run CMD ARGS), or option values.
var gitCode = map[string]struct {
	all          bool
	after, opts  string
	afterCommand bool // the words after `after` are a command (bisect run)
}{
	"config":        {all: true},
	"filter-branch": {all: true},
	"submodule":     {after: "foreach"},
	"bisect":        {after: "run", afterCommand: true},
	"rebase":        {opts: "-x --exec"},
	"difftool":      {opts: "-x --extcmd -t --tool"},
	"mergetool":     {opts: "-t --tool"},
	"clone":         {opts: "-u --upload-pack -c --config --template"},
	"init":          {opts: "--template"},
	"fetch":         {opts: "--upload-pack"},
	"pull":          {opts: "--upload-pack"},
	"ls-remote":     {opts: "--upload-pack"},
	"push":          {opts: "--receive-pack --exec"},
	"archive":       {opts: "--exec"},
	"grep":          {opts: "-O --open-files-in-pager"},
	"send-email":    {opts: "--smtp-server --sendmail-cmd"},
}

// codeProgram applies the rules to a program of codePrograms.
func (r *callRules) codeProgram(args []callArg, s int, name string, depth int) {
	p := codePrograms[name]
	what := "an argument of " + name + ", which " + p.why
	switch {
	case p.all:
		for i := s + 1; i < len(args); i++ {
			r.set(i, what)
		}
	case name == "git":
		r.git(args, s, depth, what)
	default:
		r.codeOpts(args, s+1, len(args), strings.Fields(p.opts), what)
	}
}

// git applies the rules to git: its global -c/--config-env/--exec-path,
// the subcommand (an alias can run a shell), and gitCode.
func (r *callRules) git(args []callArg, s, depth int, what string) {
	i := s + 1
	for ; i < len(args); i++ {
		x := args[i]
		if !x.isLit {
			if strings.HasPrefix(x.prefix, "-") {
				r.codeOpts(args, i, i+1, gitGlobalCode, what)
				continue
			}
			r.set(i, "the git subcommand: the value would choose what git runs (an alias can run a shell)")
			return
		}
		if !strings.HasPrefix(x.lit, "-") {
			break
		}
		opt, _, hasVal := strings.Cut(x.lit, "=")
		if !hasVal && i+1 < len(args) {
			if matchOpt(opt, gitGlobalCode) {
				i++
				r.set(i, what)
			} else if opt == "-C" || opt == "--git-dir" || opt == "--work-tree" || opt == "--namespace" || opt == "--super-prefix" {
				i++
			}
		}
	}
	if i >= len(args) {
		return
	}
	sub, ok := gitCode[args[i].lit]
	if !ok {
		return
	}
	subWhat := "an argument of git " + args[i].lit + ", which runs it as a command or writes it as configuration that runs commands"
	switch {
	case sub.all:
		for j := i + 1; j < len(args); j++ {
			r.set(j, subWhat)
		}
	case sub.after != "":
		for j := i + 1; j < len(args); j++ {
			if args[j].isLit && args[j].lit == sub.after {
				if sub.afterCommand && j+1 < len(args) {
					r.command(args, j+1, depth+1)
				}
				for k := j + 1; k < len(args); k++ {
					r.set(k, subWhat)
				}
				return
			}
		}
	default:
		r.codeOpts(args, i+1, len(args), strings.Fields(sub.opts), subWhat)
	}
}

// codeOpts refuses data in the value of any of opts among args[from:to]:
// "--opt VAL", "--opt=VAL", "-oVAL" and "-xo VAL" (a cluster of short
// options). After "--" the words are operands.
func (r *callRules) codeOpts(args []callArg, from, to int, opts []string, what string) {
	for i := from; i < to; i++ {
		x := args[i]
		if !x.isLit {
			// Data glued to an option the author wrote.
			if p := x.prefix; strings.HasPrefix(p, "-") {
				opt, _, hasVal := strings.Cut(p, "=")
				if hasVal && matchOpt(opt, opts) || !hasVal && !strings.HasPrefix(p, "--") && shortIn(p, opts) {
					r.set(i, what)
				}
			}
			continue
		}
		if x.lit == "--" {
			return
		}
		if !strings.HasPrefix(x.lit, "-") || strings.Contains(x.lit, "=") {
			continue
		}
		if matchOpt(x.lit, opts) && i+1 < to {
			i++
			r.set(i, what)
		}
	}
}

// shortIn reports whether the cluster of short options p ("-xI") holds
// one of the one-letter options of opts, whose value would then be the
// data glued to it.
func shortIn(p string, opts []string) bool {
	for _, o := range opts {
		if len(o) == 2 && o[0] == '-' && strings.IndexByte(p[1:], o[1]) >= 0 {
			return true
		}
	}
	return false
}

// stdinCode reports whether the program of codePrograms name, called
// with rest, runs what it reads on its standard input.
func stdinCode(name string, rest []callArg) bool {
	p, ok := codePrograms[name]
	if !ok {
		return false
	}
	if p.stdinOpts != "" && optNamesStdin(rest, strings.Fields(p.stdinOpts)) {
		return true
	}
	if !p.stdin {
		return false
	}
	opts := strings.Fields(p.opts)
	for i, x := range rest {
		if !x.isLit || !strings.HasPrefix(x.lit, "-") {
			continue
		}
		opt, val, hasVal := strings.Cut(x.lit, "=")
		if !matchOpt(opt, opts) {
			continue
		}
		if !hasVal && i+1 < len(rest) {
			val = rest[i+1].lit
		}
		// The code comes from the option, unless it names stdin (-f -).
		return namesStdin(val)
	}
	return true
}

// namesStdin reports whether the file name s is standard input.
func namesStdin(s string) bool {
	return s == "-" || s == "/dev/stdin" || s == "/dev/fd/0" || s == "/proc/self/fd/0"
}

// optNamesStdin reports whether one of the options opts in rest is given
// standard input as its value: "-f -", "-f-", "--file=-", "--file -",
// or a cluster of short options holding the letter ("-sf -", "-sf-").
// It errs toward yes: a cluster counts when the letter is anywhere in it.
func optNamesStdin(rest []callArg, opts []string) bool {
	next := func(i int) bool { return i+1 < len(rest) && rest[i+1].isLit && namesStdin(rest[i+1].lit) }
	for i, x := range rest {
		if !x.isLit || !strings.HasPrefix(x.lit, "-") {
			continue
		}
		opt, val, hasVal := strings.Cut(x.lit, "=")
		for _, o := range opts {
			switch {
			case opt == o && hasVal:
				if namesStdin(val) {
					return true
				}
			case opt == o:
				if next(i) {
					return true
				}
			case len(o) == 2 && len(x.lit) > 2 && x.lit[1] != '-':
				if k := strings.IndexByte(x.lit[1:], o[1]); k >= 0 {
					if glued := x.lit[k+2:]; glued == "" && next(i) || namesStdin(glued) {
						return true
					}
				}
			}
		}
	}
	return false
}

// xargsSplice names an xargs -I (-i, --replace) whose replacement string
// stands in an argument the command it runs reads as code (sh -c 'echo
// {}'): xargs splices each line of its input into that code.
func xargsSplice(args []callArg, r *callRules) string {
	for _, s := range r.starts {
		if !args[s].isLit || path.Base(args[s].lit) != "xargs" {
			continue
		}
		repl := xargsRepl(args, s)
		if repl == "" {
			continue
		}
		for j := s + 1; j < len(args); j++ {
			if _, code := r.refused(j); code && r.start(j) > s && args[j].isLit && strings.Contains(args[j].lit, repl) {
				return "xargs -I " + repl + " (it splices each line into " + r.where(args, j) + ", read as code)"
			}
		}
	}
	return ""
}

// xargsAppend names an xargs that appends what it reads to the arguments
// of the command it runs where data may not stand: `… | xargs make`
// (an assignment make expands), `… | xargs sh -c 'eval "$1"' sh` (an
// argument of sh -c), `… | xargs -0 python3 -c CODE`. It checks the
// command with one more argument, holding data, at its end.
func xargsAppend(args []callArg, r *callRules) string {
	for _, s := range r.starts {
		if !args[s].isLit || path.Base(args[s].lit) != "xargs" || !slices.ContainsFunc(r.starts, func(st int) bool { return st > s }) {
			continue // no command: xargs runs echo
		}
		more := append(append([]callArg(nil), args...), callArg{tainted: true, lead: true})
		r2 := analyzeCall(more)
		if why, bad := r2.refused(len(args)); bad {
			return "xargs (it appends what it reads to the arguments of the command it runs, where data is " + why + ")"
		}
	}
	return ""
}
