package steps

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

// liveAttack is a template that, run with value as {{event.v}} in a
// directory prepared by setup, makes the file MARK there.
type liveAttack struct {
	name, tmpl, value, want string
	bashOnly                bool // uses bash's mapfile, printf -v, <(…)
	// leak, when set, is what the attack prints instead of making MARK:
	// the secret in HOOKD_TEST_SECRET (hunter2), changed.
	leak string
}

// testSecret is the secret the leaking attacks read from the environment.
const testSecret = "HOOKD_TEST_SECRET=hunter2"

// runLiveAttacks asserts that each template is refused when the step is
// built, with an error saying want, and that the attack is real: the
// script hookd would have run makes MARK when run, with the value hookd
// would pass, by bash and by dash (bash only where the template needs
// it). setup prepares each directory (a git repository, a file).
func runLiveAttacks(t *testing.T, setup func(t *testing.T, dir string), tests []liveAttack) {
	t.Helper()
	shells := []string{testtool.Need(t, "bash"), testtool.Need(t, "dash")}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := newShellStep(t, "command: "+yamlString(tt.tmpl), 0)
			if err == nil {
				dir := t.TempDir()
				setup(t, dir)
				env := &engine.StepEnv{Workdir: dir, Env: append(os.Environ(), testSecret), Scope: &engine.Scope{Hook: "h", Event: map[string]any{"v": tt.value}}}
				c, cerr := s.(*shellStep).command(env)
				if cerr != nil {
					t.Fatalf("%q: built, and refused when run: %v; want it refused at load (%s)", tt.tmpl, cerr, tt.want)
				}
				c.Argv[0] = shells[0]
				r := c.Run(context.Background())
				if tt.leak != "" {
					t.Fatalf("%q: built (the attack printed %q: %v); want it refused (%s)", tt.tmpl, tt.leak, strings.Contains(r.Stdout, tt.leak), tt.want)
				}
				t.Fatalf("%q: built (the attack made MARK: %v); want it refused (%s)", tt.tmpl, fileExists(filepath.Join(dir, "MARK")), tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%q: %v; want an error saying %q", tt.tmpl, err, tt.want)
			}
			for i, sh := range shells {
				if i > 0 && tt.bashOnly {
					break
				}
				dir := t.TempDir()
				setup(t, dir)
				cmd := exec.Command(sh, "-c", asRun(tt.tmpl))
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "HOOKD_P1="+tt.value, testSecret)
				out, _ := cmd.CombinedOutput()
				if tt.leak != "" {
					if !strings.Contains(string(out), tt.leak) {
						t.Fatalf("the attack did not print %q under %s without the rule (output %q): the test shows nothing", tt.leak, sh, out)
					}
					continue
				}
				if !fileExists(filepath.Join(dir, "MARK")) {
					t.Fatalf("the attack did not work under %s without the rule (output %q): the test shows nothing", sh, out)
				}
			}
		})
	}
}

// emptyGitRepo makes dir an empty git repository: git log --output=MARK
// writes MARK there.
func emptyGitRepo(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command(testtool.Need(t, "git"), "init", "-q", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
}

// TestShellDerivedOptionAttacks performs attacks where a word split or
// rewritten from data reaches git as an option (--output=MARK writes a
// file where the data says): docs/security.md's folder-watch loop, read's
// splitting, mapfile, $(… | tr …), a for list over $(…), set -- $(…),
// printf -v '%b'. The run-time check of a placeholder's value sees
// only the whole value, which does not begin with '-'.
func TestShellDerivedOptionAttacks(t *testing.T) {
	t.Parallel()
	const put = "put -- before it"
	runLiveAttacks(t, emptyGitRepo, []liveAttack{
		{name: "while read loop", tmpl: "printf '%s\\n' {{event.v}} | while read -r f; do git log \"$f\"; done", value: "a.md\n--output=MARK", want: put},
		{name: "while read without -r", tmpl: "printf '%s\\n' {{event.v}} | while read f; do git log \"$f\"; done", value: "a.md\n--output=MARK", want: put},
		{name: "read splits fields", tmpl: "printf '%s\\n' {{event.v}} | { read -r a b; git log \"$b\"; }", value: "a.md --output=MARK", want: put},
		{name: "read from a here-document", tmpl: "read -r a b <<EOF\n{{event.v}}\nEOF\ngit log \"$b\"", value: "a.md --output=MARK", want: put},
		{name: "mapfile", tmpl: "mapfile -t a < <(printf '%s\\n' {{event.v}}); git log \"${a[1]}\"", value: "a.md\n--output=MARK", want: put, bashOnly: true},
		{name: "readarray", tmpl: "readarray -t a <<< {{event.v}}; git log \"${a[1]}\"", value: "a.md\n--output=MARK", want: put, bashOnly: true},
		{name: "$(… | tr …) in a variable", tmpl: "x=$(printf '%s' {{event.v}} | tr + -); git log \"$x\"", value: "++output=MARK", want: put},
		{name: "$(… | tr …) as the argument", tmpl: "git log \"$(printf '%s' {{event.v}} | tr + -)\"", value: "++output=MARK", want: put},
		{name: "for over $(…)", tmpl: "for f in $(printf '%s' {{event.v}} | tr , ' '); do git log \"$f\"; done", value: "a,--output=MARK", want: put},
		{name: "set -- $(…)", tmpl: "set -- $(printf '%s' {{event.v}} | tr , ' '); git log \"$2\"", value: "a,--output=MARK", want: put},
		{name: "a copy of a derived variable", tmpl: "x=$(printf '%s' {{event.v}} | tr + -); y=\"$x\"; git log \"$y\"", value: "++output=MARK", want: put},
		{name: "printf -v %b", tmpl: "printf -v x '%b' {{event.v}}; git log \"$x\"", value: "\\x2d-output=MARK", want: put, bashOnly: true},
		{name: "xargs -I", tmpl: "printf '%s\\n' {{event.v}} | xargs -I{} git log {}", value: "a.md\n--output=MARK", want: put},
	})
}

// TestShellTarOptionAttacks performs the attack on a folder watch with
// xargs: a file named --use-compress-program=sh, beside one whose name
// is a command, makes tar run the archive through sh. Also through
// while read and an unquoted $(…) that splits.
func TestShellTarOptionAttacks(t *testing.T) {
	t.Parallel()
	testtool.Need(t, "tar")
	testtool.Need(t, "xargs")
	member := "x;touch${IFS}MARK;"
	setup := func(t *testing.T, dir string) {
		if err := os.WriteFile(filepath.Join(dir, member), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runLiveAttacks(t, setup, []liveAttack{
		{name: "xargs tar", tmpl: "printf '%s\\n' {{event.v}} | xargs tar cf out.tar", value: member + "\n--use-compress-program=sh", want: "(xargs tar cf out.tar --)"},
		{name: "xargs -0 tar", tmpl: "printf '%s\\n' {{event.v}} | tr '\\n' '\\0' | xargs -0 tar cf out.tar", value: member + "\n--use-compress-program=sh", want: "put -- before it"},
		{name: "$(…) unquoted after text", tmpl: "tar cf out.tar x$(printf '%s' {{event.v}} | tr , ' ')", value: ";touch${IFS}MARK;,--use-compress-program=sh", want: "put -- before it"},
		{name: "while read into tar", tmpl: "printf '%s\\n' {{event.v}} | while read -r f; do tar cf out.tar \"$f\" x\\;touch\\${IFS}MARK\\;; done", value: "--use-compress-program=sh", want: "put -- before it"},
	})
}

// TestShellDerivedStillLoads lists derived words that stay clear of
// options: after "--", after text, in echo, printf's arguments, test,
// and a redirection target; and xargs with "--" at the end.
func TestShellDerivedStillLoads(t *testing.T) {
	for _, tmpl := range []string{
		"printf '%s\\n' {{event.v}} | while read -r f; do git log -- \"$f\"; done",
		"printf '%s\\n' {{event.v}} | while read -r f; do tar czf out.tgz -- \"$f\"; done",
		"printf '%s\\n' {{event.v}} | while read -r f; do wc -l \"./$f\"; done",
		"printf '%s\\n' {{event.v}} | while read -r f; do echo \"$f\"; printf '%s\\n' \"$f\"; [ -f \"$f\" ] && test -n \"$f\"; done",
		"printf '%s\\n' {{event.v}} | while read -r f; do cat -- \"$f\" > \"$f.bak\"; done",
		"printf '%s\\n' {{event.v}} | xargs tar czf out.tgz --",
		"printf '%s\\0' {{event.v}} | xargs -0 rm -f --",
		"printf '%s\\n' {{event.v}} | xargs -I{} cp -- {} backup/",
		"printf '%s\\n' {{event.v}} | xargs -I{} cp ./{} backup/",
		"printf '%s\\n' {{event.v}} | xargs echo",
		"printf '%s\\n' {{event.v}} | xargs",
		"x=$(printf '%s' {{event.v}} | tr , ' '); git log -- \"$x\"",
		"git log \"--format=$(printf '%s' {{event.v}})\"",
		"for f in $(printf '%s' {{event.v}} | tr , ' '); do git add -- \"$f\"; done",
		"x={{event.v}}; git log \"$x\"",
		"git ls-files | while read -r f; do echo \"$f\"; done",
	} {
		if _, err := newShellStep(t, "command: "+yamlString(tmpl), 0); err != nil {
			t.Errorf("%q: %v; want it to load", tmpl, err)
		}
	}
}
