// Package shellcheck checks, when a hook loads, the shell commands its
// steps run with placeholders, and binds the placeholders' values when a
// step runs (Parse, Script.Vars, CheckArgv). It refuses what it can prove
// dangerous; it is not the only wall: every process a hook starts runs in
// the sandbox (package sandbox), whatever code it ends up running.
//
// A placeholder's value never becomes shell code. In the list form each
// argument is expanded on its own, so a value stays inside its one
// argument whatever it holds. In the string form the value is not spliced
// into the script at all: the placeholder is replaced by a reference to an
// environment variable (HOOKD_P1, HOOKD_P2, ...) that holds the value —
// "${HOOKD_P1}" where it stands unquoted, so it is one word with no
// splitting or globbing, and ${HOOKD_P1} inside double quotes or an
// unquoted here-document. The shell expands a variable without parsing
// its value again, so quotes, semicolons, $(...), backquotes and newlines
// in event data arrive as data.
//
// The string form is parsed as bash (mvdan.cc/sh/v3/syntax, with line
// continuations joined first, and the joined script is what runs), so
// what is unsafe under bash is refused even where /bin/sh is dash. Where
// the shell would not expand the reference the hook is refused when it
// is loaded: single quotes, $'...', a here-document with a quoted
// delimiter, backquotes, right after a '$' or a backslash. Data — a
// placeholder, or a variable assigned from one (v=..., for v in, read,
// printf -v, ${v:=...}, ${v=...}, getopts' OPTARG) or from an env value
// that holds one — is refused where bash would run or evaluate it: in
// command position (also the command run by env, sudo, xargs, timeout, nice,
// nohup, find -exec and other wrappers), in arithmetic ($((...)),
// ((...)), $[...], let, for ((...)), array indexes, substring offsets,
// declare -i variables, the operands of [[ -eq ]]), anywhere in
// [[ ... ]] for a placeholder, as a variable name (declare, export,
// read, unset, printf -v, test -v, ${!v}, declare -n) or with ${v@P},
// and as an argument of eval, source, trap, sh/bash/dash/zsh/ksh -c,
// busybox sh, su -c, ssh, watch, an interpreter's code flag (python -c,
// perl -e, ...), an awk program or a sed script. codePrograms lists the
// other programs whose arguments or standard input are programs: make
// (an argument with '=' is an assignment it expands, running $(shell
// ...)), sqlite3, psql and mysql (client commands run a shell), ed, ex,
// vi, vim, dc and m4 (their command languages run a shell), gdb, lldb,
// at, crontab, tmux, screen and parallel (every argument); the
// command-running options of git (-c, --config-env, git config, rebase
// --exec, submodule foreach, bisect run, --upload-pack, ...), tar
// (--to-command, --checkpoint-action, -I, ...), rsync -e, scp/sftp -o
// and -S, zip -TT, man -P, wget -e and curl -K; xargs -I splicing its
// input into a shell's code; xargs appending its input to a command
// that would take it as code (xargs make); and jq's and yq's filter
// (progtext.go). Data is refused there, and fed to the standard input of
// those that run it (also an awk, sed, jq or yq program read from
// standard input: awk -f -, sed -f /dev/stdin). analyzeCall (shellcall.go) holds the
// command rules; the list form is checked with them too. The arguments
// after a POSIX shell's -c script are its positional parameters: the
// script is checked with $0, $1, ... holding their data.
//
// A file the script writes data to (by redirection, tee, cp, ...) and
// then runs — by path, with source, as a shell's, interpreter's or awk's
// script, on a code reader's standard input — is refused (datafile.go).
//
// A value that begins with '-' where it would begin an argument of a
// command (not after a "--" argument) is refused when the step runs,
// unless the step sets allow_option_values: true. Data derived from a
// value rather than copied — split by read or mapfile, the output of
// $(...), a for list over $(...), a word xargs reads, an inner shell's
// positional parameters — cannot be checked that way: where it may begin
// an argument before "--" the hook is refused when it loads
// (derived.go).
package shellcheck
