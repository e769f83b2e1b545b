package steps

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/testtool"
)

// TestCodeProgramAttacks performs, with the real programs, attacks through
// programs that read an argument or their standard input as code (make
// variable assignments, sqlite3 dot-commands, ed's !, vim's +cmd, gdb -ex,
// tar and zip command options, git -c and git config, xargs -I into
// sh -c). Each template is refused when the hook loads; and the script it
// would have run, given the hostile value as hookd passes it (HOOKD_P1),
// does create the marker file, so the refusal is what stops the attack.
func TestCodeProgramAttacks(t *testing.T) {
	t.Parallel()
	const makefile = "all:\n\t@echo $(V)\n"
	tests := []struct {
		name, tmpl, value, prog, want string
	}{
		{"make assignment operand", "make {{event.v}}", "X:=$(shell touch MARK)", "make", "argument of make"},
		{"make variable value", "make V={{event.v}}", "$(shell touch MARK)", "make", "argument of make"},
		{"sqlite3 dot-command argument", "sqlite3 db.sqlite {{event.v}}", ".shell touch MARK", "sqlite3", "argument of sqlite3"},
		{"sqlite3 dot-command on stdin", "printf '%s\\n' {{event.v}} | sqlite3 db.sqlite", ".system touch MARK", "sqlite3", "is piped into sqlite3"},
		{"ed command on stdin", "printf '%s\\n' {{event.v}} | ed -s", "!touch MARK", "ed", "is piped into ed"},
		{"ed file name", "ed -s {{event.v}} < /dev/null", "!touch MARK", "ed", "argument of ed"},
		{"ed heredoc", "ed -s Makefile <<EOF\n{{event.v}}\nq\nEOF", "!touch MARK", "ed", "is fed to ed"},
		{"vim +cmd", "vim -es -u NONE {{event.v}} +q < /dev/null", "+!touch MARK", "vim", "argument of vim"},
		{"gdb -ex", "gdb -batch -nx -ex {{event.v}}", "shell touch MARK", "gdb", "argument of gdb"},
		{"tar --checkpoint-action", "tar cf a.tar --checkpoint=1 --checkpoint-action={{event.v}} Makefile", "exec=touch MARK", "tar", "argument of tar"},
		{"tar --to-command", "tar cf a.tar Makefile && tar xf a.tar --to-command {{event.v}}", "touch MARK", "tar", "argument of tar"},
		{"zip -TT", "zip -q z.zip Makefile -T -TT {{event.v}}", "touch MARK", "zip", "argument of zip"},
		{"git -c alias", "git init -q . && git -c {{event.v}} x", "alias.x=!touch MARK", "git", "argument of git"},
		{"git config value", "git init -q . && git config alias.y {{event.v}} && git y", "!touch MARK", "git", "argument of git config"},
		{"xargs -I into sh -c", "printf '%s\\n' {{event.v}} | xargs -I{} sh -c 'echo {}'", "$(touch MARK)", "xargs", "xargs -I {}"},
		{"xargs make", "printf '%s' {{event.v}} | xargs -0 make", "X:=$(shell touch MARK)", "make", "is piped into xargs (it appends"},
		{"make -f - on stdin", "printf '%s\\n' {{event.v}} | make -f -", "all:;@touch MARK", "make", "is piped into make"},
		{"xargs sh -c positional", "printf '%s' {{event.v}} | xargs -0 sh -c 'eval \"$1\"' sh", "touch MARK", "xargs", "is piped into sh -c (its script runs eval"},
		{"xargs python3 -c", "printf '%s' {{event.v}} | xargs -0 python3 -c 'import sys; exec(sys.argv[1])'", "open('MARK', 'w')", "python3", "is piped into xargs (it appends"},
		{"LESSOPEN", "LESSOPEN={{event.v}} less Makefile | cat", "|touch MARK; cat %s", "less", "LESSOPEN, assigned data from {{event.v}}"},
		{"node -e", "node -e {{event.v}}", `require("fs").writeFileSync("MARK", "")`, "node", "argument of node -e"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newShellStep(t, "command: "+yamlString(tt.tmpl), 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v; want it to contain %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "command: ") {
				t.Errorf("err %q does not name the field", err)
			}
			testtool.Need(t, tt.prog) // the refusal is checked; without the program the attack is not shown
			// The attack is real: the same script, as the old rules
			// accepted it, run with the value hookd would pass.
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(makefile), 0o644); err != nil {
				t.Fatal(err)
			}
			ref := `"${HOOKD_P1}"`
			if strings.Contains(tt.tmpl, "<<") {
				ref = "${HOOKD_P1}" // in a here-document, as hookd writes it
			}
			script := strings.Replace(tt.tmpl, "{{event.v}}", ref, 1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
			cmd.Dir = dir
			// SHELL is set because make evaluates a command-line
			// X:=$(shell …) before its own default SHELL exists, with
			// the environment's: unset (as under CI), it runs "-c".
			cmd.Env = append(os.Environ(), "HOOKD_P1="+tt.value, "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "SHELL=/bin/sh")
			out, _ := cmd.CombinedOutput()
			if _, err := os.Stat(filepath.Join(dir, "MARK")); err != nil {
				t.Fatalf("the attack did not work without the rule (%v; output %q): the test shows nothing", err, out)
			}
		})
	}
}

// TestCodeProgramsRefused lists more uses of the programs whose arguments
// or standard input are code, each refused with the context named.
func TestCodeProgramsRefused(t *testing.T) {
	tests := []struct{ name, cmd, want string }{
		{"gmake", `gmake -C sub {{event.v}}`, "argument of gmake"},
		{"make -f", `make -f {{event.v}} all`, "argument of make"},
		{"make --file=- stdin", `printf '%s' "{{event.v}}" | make --file=- all`, "is piped into make"},
		{"make -sf- stdin", `printf '%s' "{{event.v}}" | make -sf-`, "is piped into make"},
		{"make -s -f /dev/stdin", `printf '%s' "{{event.v}}" | make -s -f /dev/stdin`, "is piped into make"},
		{"gmake --makefile - heredoc", "gmake --makefile - <<EOF\n{{event.v}}\nEOF", "is fed to gmake"},
		{"make via env list", `list: [make, "V={{event.v}}"]`, "argument of make"},
		{"sqlite3 list", `list: [sqlite3, db, "{{event.v}}"]`, "argument of sqlite3"},
		{"sqlite3 heredoc", "sqlite3 db <<EOF\nselect '{{event.v}}';\nEOF", "is fed to sqlite3"},
		{"psql -c", `psql -At -c "{{event.v}}"`, "argument of psql"},
		{"psql -c cluster", `psql -Atc "select {{event.v}}"`, "argument of psql"},
		{"psql stdin", `printf '%s' "{{event.v}}" | psql`, "is piped into psql"},
		{"psql -f - stdin", `printf '%s' "{{event.v}}" | psql -f -`, "is piped into psql"},
		{"mysql -e", `mysql -e "{{event.v}}"`, "argument of mysql"},
		{"mysql --pager=", `mysql --pager={{event.v}}`, "argument of mysql"},
		{"ex -c", `ex -c "{{event.v}}" file`, "argument of ex"},
		{"vi", `vi "{{event.v}}"`, "argument of vi"},
		{"nvim stdin", `echo "{{event.v}}" | nvim -es`, "is piped into nvim"},
		{"dc", `dc -e "{{event.v}}"`, "argument of dc"},
		{"dc stdin", `echo "{{event.v}}" | dc`, "is piped into dc"},
		{"m4", `m4 -D x={{event.v}} file`, "argument of m4"},
		{"gdb list", `list: [gdb, -batch, -ex, "{{event.v}}"]`, "argument of gdb"},
		{"lldb", `lldb -o "{{event.v}}"`, "argument of lldb"},
		{"at stdin", `echo "{{event.v}}" | at now`, "is piped into at"},
		{"crontab", `echo "{{event.v}}" | crontab -`, "is piped into crontab"},
		{"tmux", `tmux new-session -d "{{event.v}}"`, "argument of tmux"},
		{"parallel", `parallel echo ::: {{event.v}}`, "argument of parallel"},
		{"tar -I glued", `tar -I{{event.v}} -xf a.tar`, "argument of tar"},
		{"tar --use-compress-program", `tar --use-compress-program "{{event.v}}" -xf a.tar`, "argument of tar"},
		{"tar --rsh-command", `list: [tar, "--rsh-command={{event.v}}", -tf, "h:a"]`, "argument of tar"},
		{"rsync -e", `rsync -e "{{event.v}}" a host:b`, "argument of rsync"},
		{"rsync --rsync-path", `rsync --rsync-path={{event.v}} a host:b`, "argument of rsync"},
		{"scp -o", `scp -o "{{event.v}}" a host:b`, "argument of scp"},
		{"scp -oProxyCommand glued", `scp -oProxyCommand={{event.v}} a host:b`, "argument of scp"},
		{"sftp -S", `sftp -S {{event.v}} host`, "argument of sftp"},
		{"zip --unzip-command", `zip -T --unzip-command={{event.v}} z.zip a`, "argument of zip"},
		{"man -P", `man -P "{{event.v}}" ls`, "argument of man"},
		{"wget -e", `wget -e "{{event.v}}" https://example.com/`, "argument of wget"},
		{"curl -K", `curl -K "{{event.v}}"`, "argument of curl"},
		{"git --config-env", `git --config-env={{event.v}} log`, "argument of git"},
		{"git -c after -C", `git -C repo -c "core.pager={{event.v}}" log`, "argument of git"},
		{"git subcommand", `git {{event.v}} --help`, "the git subcommand"},
		{"git config list", `list: [git, config, core.fsmonitor, "{{event.v}}"]`, "argument of git config"},
		{"git submodule foreach", `git submodule foreach --recursive "{{event.v}}"`, "argument of git submodule"},
		{"git bisect run command", `git bisect run {{event.v}} x`, "in command position"},
		{"git rebase --exec", `git rebase --exec "{{event.v}}" main`, "argument of git rebase"},
		{"git difftool -x", `git difftool -x {{event.v}} HEAD`, "argument of git difftool"},
		{"git clone --upload-pack", `git clone --upload-pack={{event.v}} url dir`, "argument of git clone"},
		{"git clone -c", `git clone -c "{{event.v}}" url dir`, "argument of git clone"},
		{"git push --receive-pack", `git push --receive-pack "{{event.v}}" origin`, "argument of git push"},
		{"git grep -O", `git grep -O{{event.v}} foo`, "argument of git grep"},
		{"gawk -i", `awk -i {{event.v}} 'BEGIN{}'`, "the file of the script awk runs"},
		{"gawk --load", `awk --load={{event.v}} 'BEGIN{}'`, "the program awk runs"},
		{"sudo make", `sudo -u build make {{event.v}}`, "argument of make"},
		{"find -exec make", `find . -name Makefile -execdir make {{event.v}} \;`, "argument of make"},
		{"make by path", `/usr/bin/make -C sub "{{event.v}}"`, "argument of make"},
		{"vim -c", `vim -es -c "{{event.v}}" file`, "argument of vim"},
		{"ruby -e", `ruby -e "puts {{event.v}}"`, "ruby -e"},
		{"php -r", `php -r "echo {{event.v}};"`, "php -r"},
		{"lua -e", `lua -e "print({{event.v}})"`, "lua -e"},
		{"Rscript -e", `Rscript -e "print({{event.v}})"`, "Rscript -e"},
		{"node --eval=", `node --eval="{{event.v}}"`, "node"},
		{"ssh remote command", `ssh host ls "{{event.v}}"`, "remote shell"},
		{"LESSOPEN export", `export LESSOPEN="{{event.v}}"; less f`, "LESSOPEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "command: " + yamlString(tt.cmd)
			if list, ok := strings.CutPrefix(tt.cmd, "list: "); ok {
				src = "command: " + list
			}
			_, err := newShellStep(t, src, 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%s\nerr = %v\nwant it to contain %q", tt.cmd, err, tt.want)
			}
		})
	}
}

// TestCodeProgramsAccepted keeps the ordinary uses of those programs
// with data in arguments they read as data.
func TestCodeProgramsAccepted(t *testing.T) {
	for _, cmd := range []string{
		`make test`,
		`git log --format=%H -- {{event.path}}`,
		`git -C "{{event.repo}}" status --short`,
		`git cherry-pick -x "{{event.sha}}"`,
		`git show "{{event.sha}}" -- file`,
		`git rebase -i HEAD~3 -- {{event.x}}`,
		`tar -xzf "{{event.archive}}" -C out`,
		`tar -cf out.tar -- {{event.path}}`,
		`zip -q out.zip -- {{event.path}}`,
		`rsync -a -- {{event.src}} dest/`,
		`printf '%s' "{{event.x}}" | psql -c "COPY t FROM STDIN"`,
		`mysql -e 'select 1' -- {{event.db}}`,
		`curl -sS --max-time 5 -- "{{event.url}}"`,
		`man -- {{event.page}}`,
		`printf '%s\n' {{event.x}} | xargs -I{} printf '[%s]\n' {}`,
		`printf '%s\n' {{event.x}} | xargs -0 grep -l -- foo`,
		`printf '%s\n' {{event.x}} | xargs -d '\n' wc -l --`,
	} {
		if _, err := newShellStep(t, "command: "+yamlString(cmd), 0); err != nil {
			t.Errorf("%s\nrefused: %v", cmd, err)
		}
	}
}
