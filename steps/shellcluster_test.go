package steps

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
)

// TestShellClusteredOptionAttacks performs attacks that hid a shell, an
// awk program or a sed script behind an option written with its value
// glued on (timeout -k5, xargs -L1, awk -F:, sed -l5: the checker took
// the next word for the value), and a shell given -s with operands (it
// reads its script from standard input; the operands are its
// parameters), and data piped or fed into a compound command ({ sh; },
// (sh), if) whose commands run their input as code. Each hostile value makes a marker file when it runs as
// code. The step must be refused when it is built; were it built, it is
// run with the real /bin/sh (and bash) and must not make the marker.
func TestShellClusteredOptionAttacks(t *testing.T) {
	shells := []string{"/bin/sh", testtool.Need(t, "bash")}
	for _, tc := range []struct {
		name, cmd, value, want string
	}{
		{"timeout -k5", `timeout -k5 10 sh -c {{event.v}}`, "touch MARKER", "is an argument of sh -c"},
		{"timeout -sKILL", `timeout -sKILL 10 bash -c {{event.v}}`, "touch MARKER", "is an argument of bash -c"},
		{"nice -n5", `nice -n5 sh -c {{event.v}}`, "touch MARKER", "is an argument of sh -c"},
		{"xargs -L1", `printf '%s\n' {{event.v}} | xargs -L1 sh -c 'eval "$0"'`, "touch${IFS}MARKER", "is piped into sh -c"},
		{"awk -F:", `awk -F: {{event.v}} /dev/null`, `BEGIN{system("touch MARKER")}`, "is the program awk runs"},
		{"sed -l5", `echo x | sed -l5 {{event.v}}`, "1e touch MARKER", "is the script sed runs"},
		{"sh -s operand", `printf '%s\n' {{event.v}} | sh -s x`, "touch MARKER", "is piped into sh"},
		{"bash -s -- operands", `printf '%s\n' {{event.v}} | bash -s -- a b`, "touch MARKER", "is piped into bash"},
		{"sh -es operand", `printf '%s\n' {{event.v}} | sh -es x`, "touch MARKER", "is piped into sh"},
		// A compound command passes its input on to the commands in it.
		{"piped into a group", `printf '%s\n' {{event.v}} | { sh; }`, "touch MARKER", "is piped into sh"},
		{"piped into a subshell", `printf '%s\n' {{event.v}} | (bash)`, "touch MARKER", "is piped into bash"},
		{"piped into an if", `printf '%s\n' {{event.v}} | if true; then sh; fi`, "touch MARKER", "is piped into sh"},
		{"piped into a group's pipe", `printf '%s\n' {{event.v}} | { cat | sh; }`, "touch MARKER", "is piped into sh"},
		{"fed to a group", `{ sh; } <<< {{event.v}}`, "touch MARKER", "is fed to sh"},
		{"fed to a subshell by a heredoc", "(sh) <<EOF\n{{event.v}}\nEOF", "touch MARKER", "is fed to sh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			marker := filepath.Join(dir, "MARKER")
			s, err := newShellStep(t, "command: "+yamlString(tc.cmd)+"\n", 0)
			if err == nil {
				// Built: run it as a run would, under each shell.
				for _, sh := range shells {
					env := &engine.StepEnv{Workdir: dir, Env: os.Environ(), Scope: &engine.Scope{Hook: "h", Event: map[string]any{"v": tc.value}}}
					c, cerr := s.(*shellStep).command(env)
					if cerr != nil {
						t.Fatalf("command: %v", cerr)
					}
					c.Argv[0] = sh
					c.Run(context.Background())
					if _, serr := os.Stat(marker); serr == nil {
						t.Errorf("%s under %s: the event's value ran as code (the marker was made)", tc.cmd, sh)
						os.Remove(marker)
					}
				}
				t.Fatalf("%s: built; want it refused (%s)", tc.cmd, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v; want an error saying %q", tc.cmd, err, tc.want)
			}
			if _, serr := os.Stat(marker); serr == nil {
				t.Errorf("the marker exists")
			}
		})
	}
}
