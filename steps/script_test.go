package steps

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/testtool"
)

// TestShellRefusedTemplates lists templates that must be refused when the
// hook loads, each with the context the error must name. Every one was a
// way for event data to run as code (or to be evaluated) under bash.
func TestShellRefusedTemplates(t *testing.T) {
	tests := []struct{ name, cmd, env, want string }{
		// Not expanded as a whole, or in a context that changes it.
		{"single quotes", `echo '{{event.v}}'`, "", "inside single quotes"},
		{"ansi quotes", `echo $'{{event.v}}'`, "", "inside $'...'"},
		{"quoted heredoc", "cat <<'E'\n{{event.v}}\nE", "", "quoted delimiter"},
		{"backquotes", "echo `echo {{event.v}}`", "", "inside backquotes"},
		{"after dollar", `echo ${{event.v}}`, "", "right after '$'"},
		{"after backslash", `echo \{{event.v}}`, "", "right after a backslash"},
		// Command position.
		{"command position", `{{event.cmd}} args`, "", "in command position"},
		{"command position glued", `/usr/bin/{{event.cmd}} args`, "", "in command position"},
		{"command position after pipe", `echo x | {{event.cmd}}`, "", "in command position"},
		{"command position in substitution", `echo $({{event.cmd}})`, "", "in command position"},
		{"command position via substitution", `$(echo {{event.cmd}}) x`, "", "in command position"},
		{"command position after if", `if {{event.cmd}}; then :; fi`, "", "in command position"},
		{"command position via variable", "c={{event.cmd}}\n$c arg", "", "in command position"},
		{"command position via env", `"$CMD" arg`, "CMD", "in command position"},
		{"exec", `exec {{event.cmd}}`, "", "in command position"},
		{"time", `time {{event.cmd}}`, "", "in command position"},
		// Arithmetic, test, index, substring.
		{"arithmetic", `echo $(( {{event.v}} + 1 ))`, "", "inside $((...))"},
		{"arithmetic quoted", `echo $(( "{{event.v}}" + 1 ))`, "", "inside $((...))"},
		{"arithmetic after continuation", "echo $\\\n(( {{event.v}} ))", "", "inside $((...))"},
		{"arithmetic command", `(( {{event.v}} ))`, "", "inside ((...))"},
		{"bracket arithmetic", `echo $[ {{event.v}} ]`, "", "inside $[...]"},
		{"test clause", `[[ {{event.v}} -eq 1 ]]`, "", "inside [[ ... ]]"},
		{"test clause string", `[[ -n "{{event.v}}" ]]`, "", "inside [[ ... ]]"},
		{"substring", `s=abc; echo "${s:{{event.v}}}"`, "", "substring offset"},
		{"substring length", `s=abc; echo "${s:0:{{event.v}}}"`, "", "substring offset"},
		{"array index", `a=(x); echo "${a[{{event.v}}]}"`, "", "array index"},
		{"array assignment index", `a[{{event.v}}]=1`, "", "array index"},
		{"array literal index", `a=([{{event.v}}]=1)`, "", "array index"},
		{"let", `let x={{event.v}}`, "", "let"},
		{"let quoted", `let "x={{event.v}}"`, "", "let"},
		{"c-style for", `for ((i={{event.v}}; i<3; i++)); do :; done`, "", "for ((...))"},
		{"declare -i", `declare -i n={{event.v}}`, "", "integer variable"},
		{"typeset -i", `typeset -i n; n={{event.v}}`, "", "integer variable"},
		{"local -i", `f() { local -i n="{{event.v}}"; }; f`, "", "integer variable"},
		{"variable in arithmetic", "n={{event.v}}\necho $((n + 1))", "", "inside $((...))"},
		{"variable in arithmetic by name", "n=\"{{event.v}}\"\necho $((n + 1))", "", "is used inside $((...))"},
		{"variable copied then arithmetic", "a={{event.v}}; b=\"x$a\"; echo $(( b ))", "", "is used inside $((...))"},
		{"env variable in arithmetic", `echo $(( N * 2 ))`, "N", "is used inside $((...))"},
		{"variable in index", "i={{event.v}}; a=(x); echo \"${a[$i]}\"", "", "array index"},
		{"variable in [[ -eq ]]", "n={{event.v}}; [[ $n -eq 1 ]]", "", "-eq"},
		{"variable in [[ -v ]]", "n={{event.v}}; [[ -v $n ]]", "", "-v"},
		{"read into arithmetic", "printf '%s\\n' {{event.v}} | while read n; do echo $((n)); done", "", "data read from input"},
		// Variable names.
		{"declare name", `declare "{{event.v}}"`, "", "name or option of declare"},
		{"export name", `export {{event.v}}`, "", "name or option of export"},
		{"nameref", `declare -n r={{event.v}}`, "", "name reference"},
		{"indirect", "v={{event.v}}; echo \"${!v}\"", "", "indirect reference"},
		{"prompt expansion", "v={{event.v}}; echo \"${v@P}\"", "", "@P"},
		{"printf -v", `printf -v "{{event.v}}" %s x`, "", "printf -v"},
		{"test -v", `[ -v "{{event.v}}" ]`, "", "test -v"},
		{"unset", `unset "{{event.v}}"`, "", "argument of unset"},
		{"read name", `read -r "{{event.v}}" < /dev/null`, "", "argument of read"},
		// Code runners.
		{"eval", `eval "echo {{event.v}}"`, "", "argument of eval"},
		{"eval via variable", "v={{event.v}}; eval \"echo $v\"", "", "argument of eval"},
		{"source", `. "{{event.v}}"`, "", "argument of ."},
		{"trap", `trap "echo {{event.v}}" EXIT`, "", "argument of trap"},
		{"sh -c", `sh -c "echo {{event.v}}"`, "", "sh -c"},
		{"bash -c", `bash -c "echo {{event.v}}"`, "", "bash -c"},
		{"dash -ec", `dash -ec "echo {{event.v}}"`, "", "dash -c"},
		{"zsh -c", `zsh -c "echo {{event.v}}"`, "", "zsh -c"},
		{"ksh -c", `ksh -c "echo {{event.v}}"`, "", "ksh -c"},
		{"busybox sh -c", `busybox sh -c "echo {{event.v}}"`, "", "sh -c"},
		{"absolute shell path", `/bin/bash -c "echo {{event.v}}"`, "", "bash -c"},
		{"sh -c positional into eval", `sh -c 'eval "$1"' sh "{{event.v}}"`, "", "$1, which holds data from {{event.v}}, is an argument of eval"},
		{"shell script from data", `bash "{{event.v}}"`, "", "the script bash runs"},
		{"ssh", `ssh host "ls {{event.v}}"`, "", "remote shell"},
		{"su -c", `su -c "id {{event.v}}" root`, "", "su -c"},
		{"sudo sh -c", `sudo -u root sh -c "echo {{event.v}}"`, "", "sh -c"},
		{"sudo command", `sudo {{event.cmd}}`, "", "in command position"},
		{"env sh -c", `env -i A=1 sh -c "echo {{event.v}}"`, "", "sh -c"},
		{"env command", `env A=1 {{event.cmd}}`, "", "in command position"},
		{"env data then command", `env A={{event.v}} {{event.cmd}}`, "", "in command position"},
		{"env LD_PRELOAD", `env LD_PRELOAD={{event.v}} ls`, "", "assigned by env to LD_PRELOAD"},
		{"xargs sh -c", `printf x | xargs sh -c "echo {{event.v}}"`, "", "sh -c"},
		{"xargs command", `printf x | xargs {{event.cmd}}`, "", "in command position"},
		{"find -exec sh -c", `find . -exec sh -c "echo {{event.v}}" \;`, "", "sh -c"},
		{"find -exec command", `find . -exec {{event.cmd}} {} \;`, "", "in command position"},
		{"watch", `watch "ls {{event.v}}"`, "", "sh -c"},
		{"nohup", `nohup {{event.cmd}}`, "", "in command position"},
		{"nohup sh -c", `nohup sh -c "echo {{event.v}}"`, "", "sh -c"},
		{"timeout", `timeout 5 {{event.cmd}}`, "", "in command position"},
		{"timeout sh -c", `timeout -s KILL 5 bash -c "echo {{event.v}}"`, "", "bash -c"},
		{"nice", `nice -n 5 {{event.cmd}}`, "", "in command position"},
		{"nice sh -c", `nice sh -c "echo {{event.v}}"`, "", "sh -c"},
		{"python -c", `python3 -c "print('{{event.v}}')"`, "", "python3 -c"},
		{"perl -e", `perl -le "print {{event.v}}"`, "", "perl -le"},
		{"awk program", `awk "BEGIN { print {{event.v}} }"`, "", "the program awk runs"},
		{"sed script", `sed "s/a/{{event.v}}/" file`, "", "the script sed runs"},
		{"sed -e script", `sed -n -e "s/a/{{event.v}}/p" file`, "", "the script sed runs"},
		// Variables that change what runs.
		{"PATH", `PATH={{event.v}} ls`, "", "PATH"},
		{"LD_PRELOAD", `LD_PRELOAD={{event.v}} ls`, "", "LD_PRELOAD"},
		{"BASH_ENV export", `export BASH_ENV="{{event.v}}"`, "", "BASH_ENV"},
		{"TAR_OPTIONS inline", `TAR_OPTIONS={{event.v}} tar xf a.tar`, "", "TAR_OPTIONS, assigned data from {{event.v}}, is a name programs read as configuration"},
		{"MAKEFLAGS export", `export MAKEFLAGS="{{event.flags}}"; make all`, "", "MAKEFLAGS"},
		{"GIT_SSH_COMMAND inline", `GIT_SSH_COMMAND="{{event.v}}" git fetch`, "", "GIT_SSH_COMMAND"},
		{"env NODE_OPTIONS", `env NODE_OPTIONS={{event.v}} node a.js`, "", "assigned by env to NODE_OPTIONS"},
		{"heredoc delimiter", "cat <<{{event.v}}\nx\n{{event.v}}\n", "", "heredoc"},
		// Inner shells' scripts, checked with the outer data.
		{"inner shell eval", "export V={{event.v}}; sh -c 'eval \"$V\"'", "", "in the script of an inner shell: $V, which holds data from {{event.v}}, is an argument of eval"},
		{"inner shell arithmetic", `bash -c 'echo $((V))'`, "V", "in the script of an inner shell: $V, which holds data from env V, is used inside $((...))"},
		{"inner eval", "v={{event.v}}; eval 'eval \"$v\"'", "", "in the script of an inner shell"},
		{"inner command position", `sudo sh -c '"$V" x'`, "V", "in command position"},
		// Positional parameters.
		{"set -- then command", "set -- {{event.cmd}}\n\"$1\" x", "", "$1, which holds data from {{event.cmd}}, is in command position"},
		{"function argument as command", "f() { \"$@\"; }\nf {{event.cmd}}", "", "in command position"},
		{"function argument in arithmetic", "f() { echo $(( $1 + 1 )); }\nf {{event.v}}", "", "inside $((...))"},
		// Code read from standard input.
		{"heredoc into sh", "sh <<EOF\necho {{event.v}}\nEOF", "", "is fed to sh on its standard input"},
		{"heredoc into bash -s", "bash -s <<EOF\necho {{event.v}}\nEOF", "", "is fed to bash"},
		{"here-string into python", `python3 <<< "print({{event.v}})"`, "", "is fed to python3"},
		{"pipe into sh", `printf '%s\n' "{{event.v}}" | sh`, "", "is piped into sh"},
		{"pipe into sudo bash", `echo "{{event.v}}" | sudo -u x bash`, "", "is piped into bash"},
		{"pipe into eval of cat", `echo "{{event.v}}" | eval "$(cat)"`, "", "piped into eval"},
		{"pipe into sh -c cat", `echo "{{event.v}}" | sh -c "$(cat)"`, "", "piped into sh -c"},
		{"file from data into sh", `sh < "{{event.v}}"`, "", "is fed to sh"},
		{"source stdin", `echo "{{event.v}}" | . /dev/stdin`, "", "piped into . /dev/stdin"},
		// The list form.
		{"argv program", `list: ["{{event.cmd}}", x]`, "", "element 0"},
		{"argv sh -c", `list: [sh, -c, "echo {{event.v}}"]`, "", "sh -c"},
		{"argv bash -c positional into eval", `list: [bash, -c, 'eval "$1"', bash, "{{event.v}}"]`, "", "$1, which holds data from command[4], is an argument of eval"},
		{"argv env command", `list: [env, "{{event.cmd}}"]`, "", "in command position"},
		{"argv env PATH", `list: [env, "PATH={{event.v}}", ls]`, "", "assigned by env to PATH"},
		{"argv xargs sh -c", `list: [xargs, sh, -c, "echo {{event.v}}"]`, "", "sh -c"},
		{"argv timeout command", `list: [timeout, "5", "{{event.cmd}}"]`, "", "in command position"},
		{"argv eval", `list: [eval, "{{event.v}}"]`, "", "eval"},
		{"argv python -c", `list: [python3, -c, "{{event.v}}"]`, "", "python3 -c"},
		{"argv inner script eval", `list: [sh, -c, 'eval "$V"']`, "V", "in the script of an inner shell"},
		{"argv inner script arithmetic", `list: [bash, -c, 'echo $((V + 1))']`, "V", "is used inside $((...))"},
		{"unparsable", `echo "{{event.v}}`, "", "parse the command as bash"},
		// Word splitting of data a variable holds.
		{"unquoted variable argument", "pkgs={{event.v}}\ngo test $pkgs", "", "$pkgs, which holds data from {{event.v}}, is expanded unquoted"},
		{"unquoted positional arguments", "set -- {{event.v}}; git log $1 $2", "", "quote it: \"$1\""},
		{"unquoted variable in for list", "pkgs={{event.v}}; for p in $pkgs; do go test \"$p\"; done", "", "quote it: \"$pkgs\""},
		{"unquoted variable in set --", "pkgs={{event.v}}; set -- $pkgs", "", "expanded unquoted"},
		{"unquoted variable in array", "pkgs={{event.v}}; a=($pkgs)", "", "expanded unquoted"},
		{"unquoted env variable", `ls ${V}`, "V", "expanded unquoted"},
		// Transformed data that may begin an argument.
		{"prefix strip as argument", "p={{event.v}}; git log \"${p#refs/heads/}\"", "", "is transformed by ${p#...}"},
		{"replace as argument", "p={{event.v}}; git log \"${p//x/}\"", "", "is transformed by ${p/...}"},
		{"substring as argument", "p={{event.v}}; git log \"${p:3}\"", "", "is transformed by ${p:...}"},
		{"case change as argument", "p={{event.v}}; git log \"${p,,}\"", "", "is transformed by ${p,,...}"},
		{"case change by @U as argument", "p={{event.v}}; git log \"${p@U}\"", "", "is transformed by ${p@...}"},
		{"suffix strip kept in a variable", "p={{event.v}}; q=${p%x}; git log \"$q\"", "", "is transformed by ${p%...}"},
		// Bare names in integer variables' values.
		{"declare -i by name", "limit={{event.v}}; declare -i max=limit", "", "max is assigned the name limit"},
		{"local -i by name", "f() { n={{event.v}}; local -i m=n; }; f", "", "m is assigned the name n"},
		{"integer variable assigned a name", "n={{event.v}}; declare -i m; m=n+1", "", "m is assigned the name n"},
		// A filter changes the value, never where it stands: filtered
		// data is still data (base64 of code is not code to trust).
		{"filtered command position", `{{event.cmd | base64}} args`, "", "in command position"},
		{"filtered eval", `eval {{event.v | trim | base64}}`, "", "eval"},
		{"filtered single quotes", `echo '{{event.v | json}}'`, "", "inside single quotes"},
		{"filtered arithmetic", `echo $(( {{event.v | default "1"}} + 1 ))`, "", "inside $((...))"},
		{"filtered sh -c", `sh -c {{event.v | urlquery}}`, "", "sh -c"},
		{"filtered via variable", "c={{event.cmd | lower}}\n$c arg", "", "in command position"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "command: " + yamlString(tt.cmd)
			if list, ok := strings.CutPrefix(tt.cmd, "list: "); ok {
				src = "command: " + list
			}
			if tt.env != "" {
				src += "\nenv: {" + tt.env + ": '{{event.v}}'}"
			}
			_, err := newShellStep(t, src, 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%s\nerr = %v\nwant it to contain %q", tt.cmd, err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "command: ") && !strings.HasPrefix(err.Error(), "env.") {
				t.Errorf("err %q does not name the field", err)
			}
		})
	}
}

// TestShellAcceptedTemplates keeps the rules from refusing the ordinary
// ways of passing data to commands.
func TestShellAcceptedTemplates(t *testing.T) {
	for _, cmd := range []string{
		`printf '%s\n' {{event.x}} | grep -- foo`,
		"cat <<EOF\n{{event.x}}\nEOF",
		`echo "{{event.x}}" | jq .`,
		`sh script.sh {{event.x}}`,
		`python3 script.py "{{event.x}}"`,
		`bash -c 'echo hi'`,
		`f() { printf '%s\n' "$1"; }; f {{event.x}}`,
		`set -- {{event.x}}; printf '%s\n' "$@"`,
		`timeout 5 grep -- {{event.x}} file`,
		`sudo -u root grep -- {{event.x}} file`,
		`env -i A="{{event.x}}" printenv A`,
		`x={{event.x}}; [ "$x" = y ] && echo same`,
		`n={{event.x}}; [ "$n" -eq 1 ] && echo one`,
		`awk -v v={{event.x}} 'BEGIN { print v }'`,
		`sed -e 's/a/b/' -- {{event.x}}`,
		`find . -name {{event.x}}`,
		`git log --format=%H -- {{event.path}}`,
		`docker ps --format {{"{{.Names}}"}}`,
		`case {{event.x}} in a*) echo a;; esac`,
		`for f in {{event.x}}; do echo "$f"; done`,
		`echo "${X:-{{event.x}}}" "${#X}" $((1 + 2))`,
		`export V={{event.x}}; sh -c 'printf "%s\n" "$V"'`,
		`printf '%s' "{{event.x}}" | sh -c 'cat'`,
		`ls # {{event.x}}`,
		"echo \\\n  {{event.x}}",
		`printf '%s' {{event.x}} > out.txt`,
		`pkgs={{event.x}}; go test "$pkgs"`,
		`set -- {{event.x}}; git log "$1"`,
		`p={{event.x}}; git log -- "${p#refs/heads/}"`,
		`p={{event.x}}; git log "x${p#refs/heads/}" ${p:+--all} "${#p}"`,
		`p={{event.x}}; case "${p#a}" in b) echo b;; esac`,
		`declare -i n=5; n=n+1; echo "$n"`,
		`printf '%s\n' {{event.x | base64}} "{{event.x | json}}" {{event.x | tail 3 | trim}}`,
	} {
		if _, err := newShellStep(t, "command: "+yamlString(cmd), 0); err != nil {
			t.Errorf("%s\nrefused: %v", cmd, err)
		}
	}
}

// TestShellSplitTransformAttacks performs, with real shells, the attacks
// the word-splitting, transformation and integer-name rules stop: the
// script the template would have run creates the marker file when run
// with the hostile value as hookd passes it (HOOKD_P1), and the template
// is refused when the hook loads, so it never runs.
func TestShellSplitTransformAttacks(t *testing.T) {
	bash := testtool.Need(t, "bash")
	tests := []struct {
		name, tmpl, value, shell, want string
	}{
		{"word splitting", "v={{event.v}}\nfind . -maxdepth 0 $v", "-exec touch MARK ;", "/bin/sh", "expanded unquoted"},
		{"prefix strip", "p={{event.v}}\nsort \"${p#refs/heads/}\" /dev/null", "refs/heads/-oMARK", "/bin/sh", "is transformed by ${p#...}"},
		{"declare -i by name", "limit={{event.v}}\ndeclare -i max=limit", "a[$(touch MARK)]", bash, "max is assigned the name limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newShellStep(t, "command: "+yamlString(tt.tmpl), 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v; want it to contain %q", err, tt.want)
			}
			// The attack is real: the same script, as the old checker
			// accepted it, run with the value hookd would pass.
			script := strings.Replace(tt.tmpl, "{{event.v}}", `"${HOOKD_P1}"`, 1)
			dir := t.TempDir()
			cmd := exec.Command(tt.shell, "-c", script)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "HOOKD_P1="+tt.value)
			_ = cmd.Run()
			if _, err := os.Stat(filepath.Join(dir, "MARK")); err != nil {
				t.Fatalf("the attack did not work without the rule (%v): the test shows nothing", err)
			}
		})
	}
}

// TestShellAssigningExpansionAttacks performs, with real shells, attacks
// through ${v:=word} and ${v=word}, which assign word to v as a side
// effect of expanding, and through getopts, which puts an option's
// argument from the positional parameters in OPTARG: the variable holds
// data like v=word would, so it may not later become code, nor take data
// as an integer variable. The
// template is refused when the hook loads; the same script run with the
// value hookd would pass creates the marker file.
func TestShellAssigningExpansionAttacks(t *testing.T) {
	bash := testtool.Need(t, "bash")
	tests := []struct {
		name, tmpl, value, shell, want string
	}{
		{":= then eval", ": \"${x:={{event.v}}}\"; eval \"$x\"", "touch MARK", "/bin/sh", "$x, which holds data from {{event.v}}, is an argument of eval"},
		{"= then eval", ": \"${x={{event.v}}}\"; eval \"$x\"", "touch MARK", "/bin/sh", "$x, which holds data from {{event.v}}, is an argument of eval"},
		{"from a variable", "y={{event.v}}\n: \"${x:=$y}\"\nsh -c \"$x\"", "touch MARK", "/bin/sh", "$x, which holds data from {{event.v}}, is an argument of sh -c"},
		{"integer variable", "declare -i n\n: \"${n:={{event.v}}}\"", "a[$(touch MARK)]", bash, "n, assigned data from {{event.v}}, is an integer variable"},
		{"getopts OPTARG", "set -- -a {{event.v}}\ngetopts a: o\neval \"$OPTARG\"", "touch MARK", "/bin/sh", "$OPTARG, which holds data from {{event.v}}, is an argument of eval"},
		{"getopts in a function", "f() { getopts a: o; sh -c \"$OPTARG\"; }\nf -a {{event.v}}", "touch MARK", "/bin/sh", "$OPTARG, which holds data from {{event.v}}, is an argument of sh -c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newShellStep(t, "command: "+yamlString(tt.tmpl), 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v; want it to contain %q", err, tt.want)
			}
			script := strings.Replace(tt.tmpl, "{{event.v}}", `"${HOOKD_P1}"`, 1) // as hookd rewrites it where unquoted
			dir := t.TempDir()
			cmd := exec.Command(tt.shell, "-c", script)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "HOOKD_P1="+tt.value)
			_ = cmd.Run()
			if _, err := os.Stat(filepath.Join(dir, "MARK")); err != nil {
				t.Fatalf("the attack did not work without the rule (%v): the test shows nothing", err)
			}
		})
	}
}
