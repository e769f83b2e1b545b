// Command hookd is a scheduled automation engine with LLM-driven hooks.
// See docs/hooks.md for the hook file format and docs/cli.md for the
// commands.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hookd/hookd/config"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/suggest"
)

// Exit codes: engine.ExitCodes is their table.
const (
	exitOK      = int(engine.ExitOK)
	exitError   = int(engine.ExitError)
	exitUsage   = int(engine.ExitUsage)
	exitRefused = int(engine.ExitTryAgain) // nothing happened: a gate refused a fire, the database is locked, the daemon is starting
)

type command struct {
	name    string
	args    string
	summary string
	run     func(c *cli, args []string) int
}

var commands = []command{
	{"init", "[DIR] --llama-cpp URL|--ollama|--openai [--model NAME]", "make a project here (or in DIR): hookd.yaml for the model server, and a first hook in hooks.d", cmdInit},
	{"serve", "[--hooks DIR] [--db PATH] [--config FILE] [--log-format text|json]", "run the daemon", cmdServe},
	{"fire", "NAME [--wait] [--force] [--even-disabled] [--event JSON [--ignore-where]] [--traceparent TP] [--json] [--wait-lock D]", "fire a hook through the running daemon, or in-process if none runs", cmdFire},
	{"emit", "TYPE [key=value ...] [--data JSON] [--id ID] [--traceparent TP] [--wait] [--json] [--wait-lock D]", "publish an event", cmdEmit},
	{"list", "[--json] [--names]", "hooks, trigger, next due, last status", cmdList},
	{"runs", "[NAME] [--status S] [--limit N] [--before ID] [--json]", "recent runs, newest first", cmdRuns},
	{"events", "[--type TYPE] [--limit N] [--all] [--json]", "recent events, newest first, with what became of each", cmdEvents},
	{"run", "ID|PREFIX|HOOK|last [--brief] [--json]", "one run: outcome and answer, then steps, prompt, tool calls, tokens", cmdRun},
	{"search", "QUERY [--hook H] [--limit N] [--json]", "finished runs whose records best match the words", cmdSearch},
	{"validate", "[DIR] [--json]", "check hook files; exit 1 on error", cmdValidate},
	{"next", "NAME [-n 5] [--json]", "next fire times", cmdNext},
	{"render", "NAME [--event JSON] [--json]", "run a hook's steps and print the prompt it would send, without a model", cmdRender},
	{"replay", "RUN|--hook NAME --last N [--hook FILE|NAME] [--model M] [--base-url U] [--live-tools] [--live-steps] [--json] [--wait-lock D]", "replay recorded runs against the hook as it is now (or another file, model or server), tools answered from the record; nothing is written to the run history", cmdReplay},
	{"handlers", "[--json]", "lifecycle handlers: point, priority, label, plugin, source file", cmdHandlers},
	{"tools", "[--json] [--builtin]", "the tools hooks may give the model: built-in and MCP, with their schemas", cmdTools},
	{"pause", "NAME [--wait-lock D]", "pause a hook (kept across restarts)", cmdPause},
	{"resume", "NAME [--wait-lock D]", "resume a paused hook", cmdResume},
	{"status", "[--json]", "runs in flight, the queue, overdue hooks, counters since start", cmdStatus},
	{"prune", "[--dry-run] [--json] [--wait-lock D]", "delete the history retention lets go, through the daemon or in-process", cmdPrune},
	{"ui", "", "print a one-time login link to the web dashboard of the running daemon", cmdUI},
	{"watch", "[--since SEQ] [--hook NAME] [--type PATTERNS] [--json] [-n N] [--url URL] [--output]", "follow the live event stream, one line per event (--output: and running steps' output)", cmdWatch},
	{"guard", "--allow 'CMD ARGS' [--allow ...]", "the allowlist guard of run_command, run as a tool:call:before handler (hooks.d/allow-commands.yaml)", cmdGuard},
}

// The commands about the commands are added at init: they read the
// table.
func init() {
	commands = append(commands,
		command{"version", "[--json]", "the module version and VCS revision hookd was built from", cmdVersion},
		command{"completion", "bash|zsh|fish", "print a shell completion script", cmdCompletion},
		command{"help", "[COMMAND]", "what a command does, its arguments and flags", cmdHelp},
	)
}

func main() {
	if err := hideEnviron(); err != nil {
		fmt.Fprintf(os.Stderr, "hookd: warning: cannot hide the process environment from child processes: %v\n", err)
	}
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

// runMain runs the command args name. Its stdout is buffered (a listing
// of 10,000 hooks is a few writes, not one per table cell) and flushed
// when the command returns, whatever its exit code; a write to stderr
// flushes it first, so the two streams keep their order, and commands
// that print as they go (watch, fire) flush after each line.
//
// Both escape the control characters of what they print (termSafe).
func runMain(args []string, stdout, stderr io.Writer) int {
	return runIn(host{}, args, stdout, stderr)
}

// runIn is runMain in h: tests run commands in process, each in a
// directory of its own.
func runIn(h host, args []string, stdout, stderr io.Writer) (code int) {
	h.log = stderr
	term := isTerminal(stderr)
	if h.columns == 0 {
		h.columns = terminalWidth(stdout)
	}
	safeOut, safeErr := newTermSafe(stdout), newTermSafe(stderr)
	out := &output{Writer: newOutput(safeOut), safe: safeOut}
	defer func() {
		err := out.Flush()
		if err == nil {
			err = safeOut.Close()
		}
		safeErr.Close()
		if err != nil && code == exitOK {
			fmt.Fprintf(stderr, "hookd: write output: %v\n", err)
			code = exitError
		}
	}()
	stdout, stderr = out, &flushFirst{out: out.Writer, w: safeErr}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(&cli{host: h, name: c.name, argsHelp: c.args, stdout: stdout, stderr: stderr, term: term}, args[1:])
		}
	}
	if s := suggest.Closest(args[0], commandNames()); s != "" {
		fmt.Fprintf(stderr, "hookd: unknown command %q; did you mean %s? (hookd help lists the commands)\n", args[0], s)
	} else {
		fmt.Fprintf(stderr, "hookd: unknown command %q (hookd help lists the commands)\n", args[0])
	}
	return exitUsage
}

// newOutput buffers a command's stdout.
func newOutput(stdout io.Writer) *bufio.Writer { return bufio.NewWriterSize(stdout, 64<<10) }

// output is a command's stdout: its buffer over its termSafe, which
// writeRaw writes hookd's own sequences to (a table's colours) once the
// buffer is flushed.
type output struct {
	*bufio.Writer
	safe *termSafe
}

// flushFirst is a writer that flushes out before each write to w.
type flushFirst struct {
	out *bufio.Writer
	w   io.Writer
}

func (f *flushFirst) Write(p []byte) (int, error) {
	f.out.Flush() // an error shows again at the final flush
	return f.w.Write(p)
}

// flush writes out what the command printed so far, for commands that
// print as they go.
func (c *cli) flush() {
	if b, ok := c.stdout.(interface{ Flush() error }); ok {
		b.Flush()
	}
}

// noCommonFlags are the commands that do not take the flags every other
// command takes (--config, --db, --hooks).
var noCommonFlags = []string{"init", "guard", "completion", "help"}

func usage(w io.Writer) {
	fmt.Fprintln(w, "hookd: scheduled automation with LLM-driven hooks")
	fmt.Fprintln(w, "\nUsage:")
	for _, c := range commands {
		fmt.Fprintf(w, "  hookd %-9s %s\n  %10s %s\n", c.name, c.args, "", c.summary)
	}
	fmt.Fprintln(w, "\nEvery command but "+strings.Join(noCommonFlags, ", ")+" takes --config FILE (default $HOOKD_CONFIG, else the hookd.yaml of the project: here or the nearest parent directory with hookd.yaml or hooks.d), --db PATH, --hooks DIR and --color auto|always|never (tables fit a terminal's width; colour on a terminal unless NO_COLOR is set).")
	fmt.Fprintln(w, "\nExit codes:")
	for _, e := range engine.ExitCodes {
		fmt.Fprintf(w, "  %-3d %s\n", e.Code, e.Means)
	}
}

// host is what a command takes from the process it runs in. The zero
// value is this process's own; tests run commands in process with their
// own.
type host struct {
	dir     string              // the directory relative paths are read from; "": the working directory
	getenv  func(string) string // the environment hookd reads; nil: the process's
	stdin   io.Reader           // nil: the process's
	signals <-chan os.Signal    // what stops `hookd serve`; nil: the process's SIGINT and SIGTERM
	log     io.Writer           // where a daemon's and an engine's log go: stderr, unescaped
	// columns is the width of the terminal stdout is: 0 when it is none
	// (found from stdout when runIn is given 0; tests set it to stand for
	// a terminal).
	columns int
}

// env reads the environment variable key.
func (h *host) env(key string) string {
	if h.getenv != nil {
		return h.getenv(key)
	}
	return os.Getenv(key)
}

// lookupEnv reads the environment variable key, and whether it is set.
func (h *host) lookupEnv(key string) (string, bool) {
	if h.getenv != nil {
		v := h.getenv(key)
		return v, v != ""
	}
	return os.LookupEnv(key)
}

// path is p read from h's directory: p itself in the working directory.
func (h *host) path(p string) string {
	if h.dir == "" || p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(h.dir, p)
}

// short is p as a command run in h names it to the user: relative when
// it lies under h's directory, as the binary run in that directory names
// it; else shortPath (under the working directory). A host with a
// directory of its own opens its files by absolute paths (this process's
// working directory is not its own): without this, its messages named
// /tmp/hk…/hooks.d/a.yaml where the binary's say hooks.d/a.yaml.
func (h *host) short(p string) string {
	if h.dir == "" {
		return shortPath(p)
	}
	return relUnder(h.dir, p)
}

// shortErr is err with the files its configuration errors name made
// short, in a host with a directory of its own. (The binary's loader is
// given the paths as the user spelled them: err names them so already.)
func (h *host) shortErr(err error) error {
	if h.dir == "" {
		return err
	}
	short := func(e *config.Error) *config.Error {
		c := *e
		c.File = h.short(c.File)
		return &c
	}
	switch e := err.(type) {
	case *config.Error:
		return short(e)
	case config.Errors:
		l := make(config.Errors, len(e))
		for i, x := range e {
			l[i] = short(x)
		}
		return l
	}
	return err
}

// input is the command's standard input.
func (h *host) input() io.Reader {
	if h.stdin != nil {
		return h.stdin
	}
	return os.Stdin
}

// cli is one invocation of a subcommand.
type cli struct {
	host
	name     string
	argsHelp string
	stdout   io.Writer
	stderr   io.Writer
	term     bool   // stderr is a terminal: commands may show a live line there
	quiet    bool   // --json: stdout gets JSON only, stderr errors only
	color    string // --color: auto (""), always or never

	configPath string
	dbPath     string
	hooksDir   string

	badSettings  error  // hookd.yaml's error, for a read-only command that went on (settings)
	settingsUsed string // what it used instead (config.LoadDaemonLenient)
}

// flags returns a flag set with the flags every command takes.
func (c *cli) flags() *flag.FlagSet {
	fs := flag.NewFlagSet("hookd "+c.name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.StringVar(&c.configPath, "config", "", "daemon settings file (default $HOOKD_CONFIG, else hookd.yaml here or in the nearest parent directory with hookd.yaml or hooks.d)")
	fs.StringVar(&c.dbPath, "db", "", "SQLite database path (default .hookd/hookd.db), or a postgres:// URL")
	fs.StringVar(&c.hooksDir, "hooks", "", "hooks directory (default hooks.d)")
	fs.Func("color", "colour tables: auto (on a terminal, unless NO_COLOR is set), always or never", func(v string) error {
		switch v {
		case "auto", "always", "never":
			c.color = v
			return nil
		}
		return errors.New("want auto, always or never")
	})
	fs.Usage = func() {
		fmt.Fprintf(c.stderr, "Usage: hookd %s %s\n", c.name, c.argsHelp)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags that may come before, between or after positional
// arguments, and checks the count of positionals.
func (c *cli) parse(fs *flag.FlagSet, args []string, minPos, maxPos int) ([]string, int, bool) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitUsage, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if rest[0] == "--" {
			pos = append(pos, rest[1:]...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if len(pos) < minPos || (maxPos >= 0 && len(pos) > maxPos) {
		fs.Usage()
		return nil, exitUsage, false
	}
	return pos, exitOK, true
}

// setup parses the command line and resolves the daemon settings.
func (c *cli) setup(fs *flag.FlagSet, args []string, minPos, maxPos int) ([]string, *config.Daemon, int, bool) {
	pos, code, ok := c.parse(fs, args, minPos, maxPos)
	if !ok {
		return nil, nil, code, false
	}
	d, err := c.settings()
	if err != nil {
		return nil, nil, c.errorf("%v", err), false
	}
	return pos, d, exitOK, true
}

// jsonObject decodes a flag's JSON object; "" is nil. A bad value is
// reported as a usage error.
func (c *cli) jsonObject(flag, text string) (map[string]any, bool) {
	if text == "" {
		return nil, true
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		fmt.Fprintf(c.stderr, "hookd %s: --%s must be a JSON object: %v\n", c.name, flag, err)
		return nil, false
	}
	return m, true
}

func (c *cli) errorf(format string, args ...any) int {
	fmt.Fprintf(c.stderr, "hookd %s: %s\n", c.name, fmt.Sprintf(format, args...))
	return exitError
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
